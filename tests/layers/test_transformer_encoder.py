import numpy as np
from keras import ops

from kbert.layers import TransformerEncoder


def test_encoder_uses_exact_gelu():
    from math import erf

    block = TransformerEncoder(num_heads=2, intermediate_dim=6, dropout=0.0)
    x = np.random.default_rng(1).normal(size=(1, 3, 4)).astype("float32")
    mask = np.ones((1, 3), "int32")
    out = ops.convert_to_numpy(block(x, padding_mask=mask))
    # The feed-forward half again, with GELU written from its erf definition.
    attention = ops.convert_to_numpy(block.self_attention(x, mask))
    attended = block.attention_layer_norm(ops.convert_to_tensor(x + attention))
    exact_gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))
    hidden = exact_gelu(ops.convert_to_numpy(block.intermediate_dense(attended)))
    ffn = hidden @ ops.convert_to_numpy(block.output_dense.kernel) + ops.convert_to_numpy(block.output_dense.bias)
    expected = block.output_layer_norm(ops.convert_to_tensor(ops.convert_to_numpy(attended) + ffn))
    np.testing.assert_allclose(out, ops.convert_to_numpy(expected), atol=1e-5)
