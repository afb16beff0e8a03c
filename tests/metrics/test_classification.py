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
