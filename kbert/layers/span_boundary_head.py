import keras
from keras import ops

from kbert.layers.initializers import clone_initializer

# For each prediction of a span, what the head reads: the positions of the tokens before and after its span and its
# place in the span (`kbert.data.pretraining.masking.mask_batch` with "span" gives them).
SPAN_BOUNDARY_KEYS = ("span_left", "span_right", "span_offset")


@keras.saving.register_keras_serializable(package="kbert")
class SpanBoundaryHead(keras.layers.Layer):
    """SpanBERT's span-boundary objective (Joshi et al. 2020, eq. 2): each masked token x_i of a span x_s..x_e
    predicted from the encoder outputs of the span's boundary tokens x_{s-1}, x_{e+1} and a relative position
    embedding p_{i-s+1}, through two layers of dense, exact GELU and LayerNorm:

        h_0 = [x_{s-1}; x_{e+1}; p_{i-s+1}],  h_1 = LayerNorm(GELU(W_1 h_0)),  y_i = LayerNorm(GELU(W_2 h_1)),

    then decoded, as the masked-LM head, by the transpose of `token_embedding`'s table plus an output bias of its
    own. Logits come out in float32.

    Args:
        token_embedding: `keras.layers.Embedding`. The table to tie the decoder to (its width is the hidden size).
        max_offsets: int. Relative positions embedded; an offset i - s beyond is read as the last.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of the dense layers and the position embedding.

    Example:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(30, 8)
    >>> embedding.build((None,))
    >>> head = SpanBoundaryHead(embedding)
    >>> left, right, offsets = np.array([[1, 1]]), np.array([[4, 4]]), np.array([[0, 1]])
    >>> tuple(head(np.zeros((1, 6, 8)), left, right, offsets).shape)
    (1, 2, 30)
    """

    def __init__(self, token_embedding, max_offsets=32, layer_norm_epsilon=1e-12, kernel_initializer="glorot_uniform",
                 **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.max_offsets = max_offsets
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        width = token_embedding.output_dim
        self.position_embedding = keras.layers.Embedding(
            max_offsets, width, embeddings_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy, name="position_embedding")
        self.dense_1, self.dense_2 = (
            keras.layers.Dense(width, kernel_initializer=clone_initializer(self.kernel_initializer),
                               dtype=self.dtype_policy, name=f"dense_{n}") for n in (1, 2))
        self.layer_norm_1, self.layer_norm_2 = (keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name=f"layer_norm_{n}") for n in (1, 2))

    def build(self, sequence_output_shape, span_left_shape=None, span_right_shape=None, span_offset_shape=None):
        width = self.token_embedding.output_dim
        self.position_embedding.build((None,))
        self.dense_1.build((None, None, 3 * width))
        for layer in (self.layer_norm_1, self.dense_2, self.layer_norm_2):
            layer.build((None, None, width))
        self.bias = self.add_weight(name="bias", shape=(self.token_embedding.input_dim,), initializer="zeros",
                                    autocast=False)

    def call(self, sequence_output, span_left, span_right, span_offset):
        def at(positions):
            return ops.take_along_axis(sequence_output, ops.expand_dims(ops.cast(positions, "int32"), -1), axis=1)

        offsets = ops.minimum(ops.cast(span_offset, "int32"), self.max_offsets - 1)
        x = ops.concatenate([at(span_left), at(span_right), self.position_embedding(offsets)], axis=-1)
        x = self.layer_norm_1(ops.gelu(self.dense_1(x), approximate=False))
        x = self.layer_norm_2(ops.gelu(self.dense_2(x), approximate=False))
        embedding = self.token_embedding
        if embedding.quantization_mode:  # integer rows with scales: the layer dequantizes them (as MaskedLMHead)
            table = embedding(ops.arange(embedding.input_dim))
        else:
            table = embedding.embeddings
        logits = ops.matmul(x, ops.transpose(ops.cast(table, x.dtype)))
        return ops.cast(logits, "float32") + self.bias

    def compute_output_shape(self, sequence_output_shape, span_left_shape, span_right_shape, span_offset_shape):
        return (*span_left_shape, self.token_embedding.input_dim)

    def get_config(self):
        # The embedding is the backbone's: BertPretrainer rebuilds the head from it.
        return {**super().get_config(), "max_offsets": self.max_offsets, "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer)}
