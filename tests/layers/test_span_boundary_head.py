"""SpanBoundaryHead: SpanBERT's eq. 2 (boundary outputs and a relative position through two layers of dense, GELU and
LayerNorm), decoded by the tied embedding table, against the equation in float64 numpy from the layer's weights."""

import math

import keras
import numpy as np
from keras import ops

from kbert.layers.span_boundary_head import SpanBoundaryHead


def random_head(vocabulary=30, hidden=8, max_offsets=4):
    """A head on a fresh embedding, every weight random (biases and LayerNorms too)."""
    embedding = keras.layers.Embedding(vocabulary, hidden)
    embedding.build((None,))
    head = SpanBoundaryHead(embedding, max_offsets=max_offsets, layer_norm_epsilon=1e-5)
    head.build((None, None, hidden))
    rng = np.random.default_rng(0)
    for weight in [*head.weights, embedding.embeddings]:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    return head, embedding


def paper_equation(head, embedding, x, left, right, offsets):
    """y_i = LN(GELU(W_2 LN(GELU(W_1 [x_{s-1}; x_{e+1}; p_{i-s+1}])))) with erf GELU, then @ table.T + bias."""
    weights = {w.path.rpartition("/")[0].rpartition("/")[2] + "/" + w.name: ops.convert_to_numpy(w).astype("float64")
               for w in head.weights}

    def gelu(h):
        return 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))

    def layer_norm(h, n):
        h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
        return h * weights[f"layer_norm_{n}/gamma"] + weights[f"layer_norm_{n}/beta"]

    x = x.astype("float64")
    rows = np.arange(len(x))[:, None]
    p = weights["position_embedding/embeddings"][np.minimum(offsets, head.max_offsets - 1)]
    h0 = np.concatenate([x[rows, left], x[rows, right], p], axis=-1)
    h1 = layer_norm(gelu(h0 @ weights["dense_1/kernel"] + weights["dense_1/bias"]), 1)
    y = layer_norm(gelu(h1 @ weights["dense_2/kernel"] + weights["dense_2/bias"]), 2)
    return y @ ops.convert_to_numpy(embedding.embeddings).astype("float64").T + ops.convert_to_numpy(head.bias)


def test_logits_match_the_papers_equation_with_the_tied_table():
    """Two spans in row 0 (positions 2-4, boundaries 1 and 5; position 7, boundaries 6 and 8), one in row 1 whose
    offset 5 is past the 4 embedded (read as the last)."""
    head, embedding = random_head()
    x = np.random.default_rng(1).normal(size=(2, 9, 8)).astype("float32")
    left, right = np.array([[1, 1, 1, 6], [0, 0, 0, 0]]), np.array([[5, 5, 5, 8], [7, 7, 7, 7]])
    offsets = np.array([[0, 1, 2, 0], [0, 3, 5, 1]])
    logits = ops.convert_to_numpy(head(x, left, right, offsets))
    assert logits.shape == (2, 4, 30) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, paper_equation(head, embedding, x, left, right, offsets), atol=1e-4)
    assert not np.allclose(logits[0, 0], logits[0, 1])  # the position embedding tells a span's tokens apart
    assert head.token_embedding is embedding and len(head.trainable_weights) == 11  # the tied table one of them
