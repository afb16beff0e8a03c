"""Correlations for regression tasks (STS-B): Pearson and Spearman."""

import numpy as np


def pearson(x, y):
    """Pearson's r: covariance over the product of standard deviations.

    Example:
    >>> round(pearson([1, 2, 3, 4], [2, 4, 5, 9]), 4)
    0.9648
    """
    x, y = np.asarray(x, "float64").ravel(), np.asarray(y, "float64").ravel()
    x, y = x - x.mean(), y - y.mean()
    norm = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / norm) if norm > 0 else float("nan")


def spearman(x, y):
    """Spearman's rho: Pearson's r of the ranks, ties given their average rank.

    Example:
    >>> round(spearman([1, 2, 2, 3], [10, 20, 20, 5]), 4)  # ranks 1 2.5 2.5 4 and 2 3.5 3.5 1
    -0.3333
    """
    return pearson(_ranks(x), _ranks(y))


def _ranks(values):
    values = np.asarray(values, "float64").ravel()
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    unique, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]
