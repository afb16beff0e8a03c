import pytest

from kbert.metrics import accuracy, confusion_matrix, macro_f1

# Hand-worked: labels 0 0 0 1 1 2, predictions 0 1 0 1 2 2.
LABELS, PREDICTIONS = [0, 0, 0, 1, 1, 2], [0, 1, 0, 1, 2, 2]


def test_confusion_matrix_rows_are_labels():
    assert confusion_matrix(LABELS, PREDICTIONS, 3).tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]


def test_macro_f1_by_hand():
    # class 0: P 2/2, R 2/3 -> F1 0.8; class 1: P 1/2, R 1/2 -> 0.5; class 2: P 1/2, R 1/1 -> 2/3
    assert macro_f1(LABELS, PREDICTIONS, 3) == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    assert accuracy(LABELS, PREDICTIONS) == pytest.approx(4 / 6)


def test_macro_f1_counts_a_never_predicted_class_as_zero():
    assert macro_f1([0, 1, 1], [1, 1, 1], 2) == pytest.approx((0 + 0.8) / 2)
    assert macro_f1([0, 1], [0, 1], 3) == pytest.approx(2 / 3)  # absent class 2 scores 0


def test_multi_label_scores_are_scikit_learns():
    """Per-label precision, recall and F1, micro and macro F1 on random 0/1 matrices (a label never true nor
    predicted included) against scikit-learn's, zero_division=0."""
    import numpy as np
    from sklearn import metrics

    from kbert.metrics import multi_label_scores

    rng = np.random.default_rng(0)
    labels, predictions = rng.integers(0, 2, (40, 5)), rng.integers(0, 2, (40, 5))
    labels[:, 4] = predictions[:, 4] = 0
    scores = multi_label_scores(labels, predictions, list("abcde"))
    for average in ("micro", "macro"):
        assert scores[f"{average}_f1"] == pytest.approx(
            metrics.f1_score(labels, predictions, average=average, zero_division=0))
    for kind, reference in (("precision", metrics.precision_score), ("recall", metrics.recall_score),
                            ("f1", metrics.f1_score)):
        expected = reference(labels, predictions, average=None, zero_division=0)
        assert [scores["per_label"][name][kind] for name in "abcde"] == pytest.approx(expected.tolist())
    assert [scores["per_label"][name]["support"] for name in "abcde"] == labels.sum(0).tolist()
    with pytest.raises(ValueError, match="must be matrices of one shape"):
        multi_label_scores(labels, predictions[:, :3])
