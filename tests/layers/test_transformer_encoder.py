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


def test_the_approximate_activation_is_gelus_tanh_form():
    """ALBERT's `gelu_new`: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), not the erf form."""
    from kbert.config import ACTIVATIONS
    from kbert.layers.transformer_encoder import ACTIVATION_FUNCTIONS

    assert tuple(ACTIVATION_FUNCTIONS) == ACTIVATIONS  # the config's names, each computed
    x = np.linspace(-4, 4, 33).astype("float32")
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    approximate = ops.convert_to_numpy(ACTIVATION_FUNCTIONS["gelu_approximate"](ops.convert_to_tensor(x)))
    np.testing.assert_allclose(approximate, tanh_form, atol=1e-6)
    exact = ops.convert_to_numpy(ACTIVATION_FUNCTIONS["gelu"](ops.convert_to_tensor(x)))
    assert np.abs(exact - approximate).max() > 1e-4
    block = TransformerEncoder(num_heads=2, intermediate_dim=6, activation="gelu_approximate")
    assert TransformerEncoder.from_config(block.get_config()).activation == "gelu_approximate"
