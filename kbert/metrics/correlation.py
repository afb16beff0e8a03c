"""Correlations for regression tasks (STS-B), scipy's: Pearson and Spearman."""

import numpy as np


def pearson(x, y):
    """Pearson's r: covariance over the product of standard deviations (nan for a constant input).

    Example:
    >>> round(pearson([1, 2, 3, 4], [2, 4, 5, 9]), 4)
    0.9648
    """
    return _correlation("pearsonr", x, y)


def spearman(x, y):
    """Spearman's rho: Pearson's r of the ranks, ties given their average rank.

    Example:
    >>> round(spearman([1, 2, 2, 3], [10, 20, 20, 5]), 4)  # ranks 1 2.5 2.5 4 and 2 3.5 3.5 1
    -0.3333
    """
    return _correlation("spearmanr", x, y)


def _correlation(name, x, y):
    import warnings

    from scipy import stats

    x, y = np.asarray(x, "float64").ravel(), np.asarray(y, "float64").ravel()
    with warnings.catch_warnings():  # a constant input gives nan, which says it already
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(getattr(stats, name)(x, y)[0])
