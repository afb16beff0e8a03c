import keras
import numpy as np
from keras import ops

from kbert.backend_speedups import active
from kbert.layers.dropout import Dropout
from kbert.layers.initializers import clone_initializer
from kbert.backend_speedups.sublayer_calls import sublayer_call


_MASKED_SCORE = np.float32(3.38953e38 * -0.7)  # Keras's score for a masked key on TensorFlow (`_get_large_negative`)


@keras.saving.register_keras_serializable(package="kbert")
class MultiHeadSelfAttention(keras.layers.Layer):
    """BERT's self-attention: a fused QKV kernel, scaled dot product, output projection.

    At inference (or with `dropout=0`) it calls `keras.ops.dot_product_attention`, the
    backend's fused kernel (torch SDPA, JAX's XLA attention; on TensorFlow the same numbers
    as two batched matmuls, `_matmul_attention`). When training with
    dropout it computes the probabilities explicitly, because BERT drops attention
    probabilities and the fused kernels cannot.

    Args:
        num_heads: int. Attention heads; must divide the hidden size.
        dropout: float. Dropout on the attention probabilities.
        kernel_initializer: initializer of both projections.

    Call args:
        inputs: (batch, length, hidden) float tensor.
        padding_mask: (batch, length) tensor, 1 for real tokens, 0 for padding; or (batch, length, length), 1
            where a query (row) may attend to a key (column): packed rows (`BertBackbone.packed_outputs`).

    Example:
    >>> import numpy as np
    >>> layer = MultiHeadSelfAttention(num_heads=2)
    >>> tuple(layer(np.ones((2, 5, 8)), np.ones((2, 5))).shape)
    (2, 5, 8)
    """

    def __init__(self, num_heads, dropout=0.0, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(
                f"hidden size {hidden_dim} is not divisible by num_heads={self.num_heads}."
            )
        self.head_dim = hidden_dim // self.num_heads
        self.qkv_dense = keras.layers.Dense(
            3 * hidden_dim,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="qkv_dense",
        )
        self.qkv_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="output_dense",
        )
        self.output_dense.build(input_shape)
        self.probability_dropout = Dropout(self.dropout, dtype=self.dtype_policy)

    def call(self, inputs, padding_mask, training=None):
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        query, key, value = self._project(inputs, training)
        # (batch, 1, 1, length): every query may attend to every real key; or each query its own keys
        mask = ops.cast(padding_mask, "bool")
        mask = mask[:, None, :, :] if len(mask.shape) == 3 else mask[:, None, None, :]
        if training and self.dropout > 0:
            context = self._explicit_attention(query, key, value, mask, training=True)
        else:
            context = self._fused_attention(query, key, value, mask)
        context = ops.reshape(context, (batch, length, self.num_heads * self.head_dim))
        return sublayer_call(self.output_dense, training)(context)

    def _project(self, inputs, training=None):
        """Query, key and value, each (batch, length, heads, head_dim).

        In training, `inputs` times each third of the fused QKV kernel: slicing the kernel
        rather than the fused output spares the backward pass from padding three activation
        gradients back into one (6% fewer bytes moved in a JAX training step of bert_mini);
        keras-hub projects apart too. At inference there is no backward pass: `qkv_dense`
        computes the fused projection in one matmul (`sublayer_call`), reshaped once and
        indexed (fewer Keras ops to dispatch than a split and three reshapes). So it does in
        training too once `quantize` has stored the kernel as integers (int8, int4) or with
        float8 scales, which `qkv_dense` knows how to dequantize.
        """
        shape = (*ops.shape(inputs)[:2], self.num_heads, self.head_dim)
        if not training or self.qkv_dense.quantization_mode:
            fused = sublayer_call(self.qkv_dense, training)(inputs)
            fused = ops.reshape(fused, (*shape[:2], 3, *shape[2:]))
            return [fused[:, :, i] for i in range(3)]
        kernel, bias = self.qkv_dense.kernel, self.qkv_dense.bias
        width = self.num_heads * self.head_dim
        matmul = ops.matmul
        if active("jax_dense"):  # kernel gradients in YNNPACK on CPU (jax_dense.matmul)
            from kbert.backend_speedups.jax_dense import matmul
        parts = [
            matmul(inputs, kernel[:, i * width : (i + 1) * width]) + bias[i * width : (i + 1) * width]
            for i in range(3)
        ]
        return [ops.reshape(part, shape) for part in parts]

    def _fused_attention(self, query, key, value, mask):
        if active("tensorflow_attention"):
            return self._matmul_attention(query, key, value, mask)
        return ops.dot_product_attention(query, key, value, mask=mask)

    def _matmul_attention(self, query, key, value, mask):
        """`ops.dot_product_attention(query, key, value, mask=mask)` on TensorFlow, number for number, as two
        batched matmuls on heads-first transposes (what TensorFlow, tf2onnx and TFLite's converter run as they
        are; Keras's einsums become reshapes around a matmul and shape arithmetic), the mask added to the scores
        once per key, not selected over every score. Keras's `where` writes `_MASKED_SCORE` for a masked score;
        any score plus it is it exactly, so even a row with every key masked is uniform both ways. The scale is
        Keras's, 1 / sqrt(head_dim) in float32."""
        heads_first = (0, 2, 1, 3)
        scores = ops.matmul(ops.transpose(query, heads_first), ops.transpose(key, (0, 2, 3, 1)))
        scale = np.float32(1) / np.sqrt(np.float32(self.head_dim))
        scores = ops.cast(scores, "float32") * scale
        scores = scores + ops.cast(ops.logical_not(mask), "float32") * _MASKED_SCORE
        probabilities = ops.cast(ops.softmax(scores, axis=-1), value.dtype)
        return ops.transpose(ops.matmul(probabilities, ops.transpose(value, heads_first)), heads_first)

    def _explicit_attention(self, query, key, value, mask, training):
        scale = ops.cast(1.0 / self.head_dim**0.5, query.dtype)
        scores = ops.cast(ops.einsum("bqnh,bknh->bnqk", query * scale, key), "float32")
        probabilities = ops.softmax(ops.where(mask, scores, -1e9), axis=-1)
        probabilities = self.probability_dropout(
            ops.cast(probabilities, value.dtype), training=training
        )
        return ops.einsum("bnqk,bknh->bqnh", probabilities, value)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "dropout": self.dropout,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }
