import numpy as np
import pytest
from keras import ops

from kbert.layers import MultiHeadSelfAttention


def numpy_attention(x, mask, layer):
    """Self-attention written out in numpy from the layer's own weights."""
    kernel, bias = (ops.convert_to_numpy(w) for w in layer.qkv_dense.weights)
    out_kernel, out_bias = (ops.convert_to_numpy(w) for w in layer.output_dense.weights)
    b, t, h = x.shape
    n, d = layer.num_heads, h // layer.num_heads
    q, k, v = np.split(x @ kernel + bias, 3, axis=-1)
    q, k, v = (a.reshape(b, t, n, d).transpose(0, 2, 1, 3) for a in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + np.where(mask[:, None, None, :], 0.0, -1e9)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(b, t, h) @ out_kernel + out_bias


def test_attention_matches_numpy_on_both_paths():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    layer = MultiHeadSelfAttention(num_heads=2)
    fused = ops.convert_to_numpy(layer(x, mask))
    expected = numpy_attention(x, mask.astype(bool), layer)
    np.testing.assert_allclose(fused, expected, atol=1e-5)
    qkv = ops.reshape(layer.qkv_dense(x), (2, 5, 3, 2, 4))
    explicit = layer._explicit_attention(
        qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], ops.cast(mask, "bool")[:, None, None, :], training=False
    )
    explicit = ops.convert_to_numpy(layer.output_dense(ops.reshape(explicit, (2, 5, 8))))
    np.testing.assert_allclose(explicit, expected, atol=1e-5)


def test_heads_must_divide_hidden():
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        MultiHeadSelfAttention(num_heads=3)(np.ones((1, 2, 8)), np.ones((1, 2)))
