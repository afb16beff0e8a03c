import numpy as np
import pytest

from kbert.metrics import pearson, spearman


def test_correlations_by_formula():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    y[:10] = y[10:20]  # ties
    assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [10, 20, 20, 5]) == pytest.approx(-1 / 3)  # ranks by hand
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))
