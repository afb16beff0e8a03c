import numpy as np
from keras import ops

from kbert.layers import PositionEmbedding


def test_position_embedding_slices_to_length():
    layer = PositionEmbedding(max_length=6)
    y = ops.convert_to_numpy(layer(np.zeros((2, 4, 3), "float32")))
    np.testing.assert_array_equal(y[0], ops.convert_to_numpy(layer.embeddings)[:4])
    np.testing.assert_array_equal(y[0], y[1])
