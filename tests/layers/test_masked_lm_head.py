"""MaskedLMHead: dense, GELU (exact, or its tanh form) and LayerNorm at the masked positions, decoded by the tied
embedding table."""

import math
import re

import keras
import numpy as np
import pytest
from keras import ops

from kbert.layers.masked_lm_head import MaskedLMHead


def tied_head(vocabulary=30, hidden=8, dtype=None, seed=0, width=None, activation="gelu"):
    """A head on a fresh embedding (`width` wide: `hidden` by default), every weight random (the bias and LayerNorm
    too)."""
    embedding = keras.layers.Embedding(vocabulary, width or hidden, dtype=dtype)
    embedding.build((None,))
    head = MaskedLMHead(embedding, layer_norm_epsilon=1e-5, activation=activation, dtype=dtype)
    head.build((None, None, hidden))
    rng = np.random.default_rng(seed)
    for weight in [*head.weights, embedding.embeddings]:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    return head, embedding


def numpy_head(head, embedding, x, positions):
    """BERT's head in float64 numpy: gather, dense, erf GELU (ALBERT's: the tanh form), LayerNorm, @ table.T +
    bias."""
    weights = {w.path.rpartition("/")[0].rpartition("/")[2] + "/" + w.name: ops.convert_to_numpy(w).astype("float64")
               for w in head.weights}
    gathered = np.take_along_axis(x.astype("float64"), positions[..., None], axis=1)
    h = gathered @ weights["dense/kernel"] + weights["dense/bias"]
    if head.activation == "gelu_approximate":
        h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
    else:
        h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    h = h * weights["layer_norm/gamma"] + weights["layer_norm/beta"]
    table = ops.convert_to_numpy(embedding.embeddings).astype("float64")
    return h @ table.T + ops.convert_to_numpy(head.bias)


def test_logits_match_a_numpy_head_with_the_tied_table():
    head, embedding = tied_head()
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    positions = np.array([[1, 3], [0, 4]])
    logits = ops.convert_to_numpy(head(x, positions))
    assert logits.shape == (2, 2, 30) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, numpy_head(head, embedding, x, positions), atol=1e-4)
    embedding.embeddings.assign(2 * ops.convert_to_numpy(embedding.embeddings))  # tied: the head reads it anew
    np.testing.assert_allclose(ops.convert_to_numpy(head(x, positions)), numpy_head(head, embedding, x, positions),
                               atol=1e-4)
    assert head.token_embedding is embedding


def test_a_narrow_embedding_and_the_tanh_gelu_as_albert_has_them():
    """The dense layer maps the hidden width (8) to the embedding's (4), whose table decodes; the tanh GELU differs
    from the exact one by more than the tolerance."""
    head, embedding = tied_head(width=4, activation="gelu_approximate")
    assert tuple(head.dense.kernel.shape) == (8, 4) and head.get_config()["activation"] == "gelu_approximate"
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    positions = np.array([[1, 3], [0, 4]])
    logits = ops.convert_to_numpy(head(x, positions))
    np.testing.assert_allclose(logits, numpy_head(head, embedding, x, positions), atol=1e-4)
    head.activation = "gelu"
    assert np.abs(logits - numpy_head(head, embedding, x, positions)).max() > 1e-3


def test_an_unknown_activation_is_refused():
    embedding = keras.layers.Embedding(30, 8)
    with pytest.raises(ValueError, match=re.escape("MaskedLMHead: activation='relu' is not one of ('gelu', "
                                                   "'gelu_approximate').")):
        MaskedLMHead(embedding, activation="relu")


def test_logits_are_float32_under_mixed_precision():
    head, embedding = tied_head(dtype="mixed_bfloat16")
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    positions = np.array([[2, 2], [4, 0]])
    logits = ops.convert_to_numpy(head(x, positions))
    assert logits.dtype == np.float32 and head.compute_dtype == "bfloat16"
    expected = numpy_head(head, embedding, x, positions)
    np.testing.assert_allclose(logits, expected, atol=0.1 * np.abs(expected).max())  # bfloat16: ~3 digits


def test_output_shape_and_config():
    head, _ = tied_head()
    assert head.compute_output_shape((4, 9, 8), (4, 3)) == (4, 3, 30)
    config = head.get_config()
    assert config["layer_norm_epsilon"] == 1e-5 and config["kernel_initializer"]["class_name"] == "GlorotUniform"


def test_masked_lm_head_decodes_with_the_dequantized_table():
    embedding = keras.layers.Embedding(30, 8)
    embedding.build((None,))
    head = MaskedLMHead(embedding)
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    positions = np.array([[1, 3], [0, 4]])
    expected = ops.convert_to_numpy(head(x, positions))
    row_max = np.abs(ops.convert_to_numpy(embedding.embeddings)).max(-1)
    embedding.quantize("int8")
    logits = ops.convert_to_numpy(head(x, positions))
    # Rounding to int8 moves each entry of a row by at most row_max / 254, and the
    # LayerNorm output x has sum |x_j| <= sqrt(8) |x| = 8 (unit variance over 8 features).
    error = np.abs(logits - expected)
    np.testing.assert_array_less(error, np.broadcast_to(8 * row_max / 254 + 1e-6, error.shape))
