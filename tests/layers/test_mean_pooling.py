import numpy as np
from keras import ops

from kbert.layers import mean_pool


def test_mean_pool_ignores_padding():
    x = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]], "float32")
    pooled = ops.convert_to_numpy(mean_pool(x, np.array([[1, 1, 0]]), normalize=True))
    np.testing.assert_allclose(pooled[0], np.array([2.0, 3.0]) / np.sqrt(13.0), rtol=1e-6)
