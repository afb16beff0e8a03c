import keras
import numpy as np
import pytest

from kbert.layers.multi_head_self_attention import MultiHeadSelfAttention

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="TensorFlow's attention")


@pytest.mark.parametrize("head_dim", [24, 32])  # 1 / sqrt(24) rounds apart in float64 and float32
@pytest.mark.parametrize("packed", [False, True])
def test_matmul_attention_gives_keras_dot_product_attention_number_for_number(head_dim, packed, monkeypatch):
    """The layer at inference with `tensorflow_attention` against Keras's `ops.dot_product_attention` (the speed-up
    off): the same numbers, bit for bit, for a padding mask and for packed rows whose padding queries may attend to
    no key at all."""
    keras.utils.set_random_seed(0)
    layer = MultiHeadSelfAttention(num_heads=2)
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(3, 7, 2 * head_dim)).astype("float32")
    lengths = np.array([7, 4, 1])
    padding = (np.arange(7)[None] < lengths[:, None]).astype("int32")
    # packed: two segments in row 0 each attending to itself; every other row attends within its real tokens
    mask = padding[:, :, None] * padding[:, None, :] if packed else padding
    if packed:
        mask[0, :3, 3:] = mask[0, 3:, :3] = 0
    calls = []
    original = MultiHeadSelfAttention._matmul_attention
    monkeypatch.setattr(MultiHeadSelfAttention, "_matmul_attention",
                        lambda *args: calls.append(1) or original(*args))
    matmul = keras.ops.convert_to_numpy(layer(inputs, mask, training=False))
    assert calls, "the speed-up did not run"
    monkeypatch.setenv("KBERT_SPEEDUPS", "-tensorflow_attention")
    keras_attention = keras.ops.convert_to_numpy(layer(inputs, mask, training=False))
    np.testing.assert_array_equal(matmul, keras_attention)
    assert np.isfinite(matmul).all()
