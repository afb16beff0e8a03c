"""Classification metrics on integer labels: accuracy, confusion matrix, macro-F1."""

import numpy as np


def confusion_matrix(labels, predictions, num_classes):
    """Counts of (true class, predicted class): rows are true labels, columns predictions.

    Example:
    >>> confusion_matrix([0, 0, 1, 2], [0, 1, 1, 1], 3).tolist()
    [[1, 1, 0], [0, 1, 0], [0, 1, 0]]
    """
    matrix = np.zeros((num_classes, num_classes), "int64")
    np.add.at(matrix, (np.asarray(labels), np.asarray(predictions)), 1)
    return matrix


def accuracy(labels, predictions):
    """Share of predictions equal to the label.

    Example:
    >>> accuracy([0, 1, 1, 0], [0, 1, 0, 0])
    0.75
    """
    return float(np.mean(np.asarray(labels) == np.asarray(predictions)))


def macro_f1(labels, predictions, num_classes):
    """Unweighted mean over classes of F1 = 2 TP / (2 TP + FP + FN); a class absent from
    both labels and predictions scores 0 (scikit-learn's default).

    Example:
    >>> round(macro_f1([0, 0, 1, 2], [0, 1, 1, 1], 3), 4)  # F1s 2/3, 1/2, 0
    0.3889
    """
    matrix = confusion_matrix(labels, predictions, num_classes)
    true_positives = np.diag(matrix)
    denominator = matrix.sum(axis=0) + matrix.sum(axis=1)  # 2 TP + FP + FN
    f1 = np.divide(2 * true_positives, denominator, out=np.zeros(num_classes), where=denominator > 0)
    return float(f1.mean())
