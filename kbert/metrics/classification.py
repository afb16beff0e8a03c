"""Classification metrics: on integer labels (scikit-learn's) accuracy, confusion matrix, macro-F1; on 0/1 label
matrices (multi-label) per-label, micro and macro F1."""

import numpy as np


def confusion_matrix(labels, predictions, num_classes):
    """Counts of (true class, predicted class): rows are true labels, columns predictions.

    Example:
    >>> confusion_matrix([0, 0, 1, 2], [0, 1, 1, 1], 3).tolist()
    [[1, 1, 0], [0, 1, 0], [0, 1, 0]]
    """
    from sklearn import metrics

    return metrics.confusion_matrix(labels, predictions, labels=np.arange(num_classes))


def accuracy(labels, predictions):
    """Share of predictions equal to the label.

    Example:
    >>> accuracy([0, 1, 1, 0], [0, 1, 0, 0])
    0.75
    """
    from sklearn import metrics

    return float(metrics.accuracy_score(labels, predictions))


def macro_f1(labels, predictions, num_classes):
    """Unweighted mean over all `num_classes` classes of F1 = 2 TP / (2 TP + FP + FN); a class
    absent from both labels and predictions scores 0.

    Example:
    >>> round(macro_f1([0, 0, 1, 2], [0, 1, 1, 1], 3), 4)  # F1s 2/3, 1/2, 0
    0.3889
    """
    from sklearn import metrics

    return float(metrics.f1_score(labels, predictions, labels=np.arange(num_classes),
                                  average="macro", zero_division=0))


def multi_label_scores(labels, predictions, label_names=None):
    """Precision, recall and F1 of each label, and their micro and macro F1, for 0/1 matrices
    (rows: examples, columns: labels). Micro counts every (example, label) decision together;
    macro is the unweighted mean of the labels' F1 (a label never true nor predicted scores 0).

    Example:
    >>> scores = multi_label_scores([[1, 0], [1, 1], [0, 1]], [[1, 0], [0, 1], [1, 1]], ["sports", "politics"])
    >>> scores["micro_f1"], scores["macro_f1"], scores["per_label"]["sports"]["f1"]
    (0.75, 0.75, 0.5)
    """
    labels, predictions = (np.asarray(a).astype(bool) for a in (labels, predictions))
    if labels.shape != predictions.shape or labels.ndim != 2:
        raise ValueError(f"labels {labels.shape} and predictions {predictions.shape} must be matrices of one shape "
                         "(examples, labels).")
    true_positives = (labels & predictions).sum(0)
    false_positives = (~labels & predictions).sum(0)
    false_negatives = (labels & ~predictions).sum(0)
    names = label_names or [str(i) for i in range(labels.shape[1])]
    per_label = {}
    for name, tp, fp, fn, support in zip(names, true_positives, false_positives, false_negatives, labels.sum(0)):
        per_label[name] = {"precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
                           "f1": _ratio(2 * tp, 2 * tp + fp + fn), "support": int(support)}
    tp, fp, fn = true_positives.sum(), false_positives.sum(), false_negatives.sum()
    return {"micro_f1": _ratio(2 * tp, 2 * tp + fp + fn),
            "macro_f1": float(np.mean([scores["f1"] for scores in per_label.values()])), "per_label": per_label}


def _ratio(numerator, denominator):
    return float(numerator / denominator) if denominator else 0.0
