import numpy as np
from keras import ops

from kbert.layers import PositionEmbedding


def test_position_embedding_slices_to_length():
    layer = PositionEmbedding(max_length=6)
    y = ops.convert_to_numpy(layer(np.zeros((2, 4, 3), "float32")))
    np.testing.assert_array_equal(y[0], ops.convert_to_numpy(layer.embeddings)[:4])
    np.testing.assert_array_equal(y[0], y[1])


def test_offset_positions_count_the_real_tokens_as_roberta():
    """Hugging Face's `create_position_ids_from_input_ids`: cumsum(real) * real + padding id, here from the
    padding mask, with RoBERTa's padding id 1 (offset 2)."""
    layer = PositionEmbedding(max_length=9, offset=2)
    x = np.zeros((2, 5, 3), "float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    y = ops.convert_to_numpy(layer(x, padding_mask=mask))
    expected = np.cumsum(mask, axis=1) * mask + 1
    assert expected.tolist() == [[2, 3, 4, 1, 1], [2, 3, 4, 5, 6]]
    np.testing.assert_array_equal(y, ops.convert_to_numpy(layer.embeddings)[expected])


def test_offset_positions_need_the_padding_mask():
    import pytest

    with pytest.raises(ValueError, match="offset 2 counts positions along the real tokens: call it with their "
                                         "padding_mask"):
        PositionEmbedding(max_length=9, offset=2)(np.zeros((1, 4, 3), "float32"))
