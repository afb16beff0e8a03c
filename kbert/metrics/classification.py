"""Classification metrics on integer labels (scikit-learn's): accuracy, confusion matrix, macro-F1."""

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
