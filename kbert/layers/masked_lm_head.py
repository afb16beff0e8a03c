import keras
from keras import ops

from kbert.config import ACTIVATIONS


@keras.saving.register_keras_serializable(package="kbert")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head at chosen positions: dense, GELU, LayerNorm, tied decoder (and the heads of its
    family: RoBERTa's `lm_head`, ALBERT's `predictions`, ELECTRA's generator, DistilBERT's `vocab_transform`).

    The dense layer maps the hidden width to the embedding's (ALBERT's and ELECTRA's narrower one). The decoder
    is the transpose of `token_embedding`'s matrix plus an output bias, so the input and output vocabularies share
    one table. Only the rows at `mask_positions` are
    transformed, which costs (batch, predictions) instead of (batch, length) decoder rows.
    Logits come out in float32 even under a mixed precision policy. After
    `keras.Model.quantize`, the decoder reads the embedding's dequantized table.

    Args:
        token_embedding: `keras.layers.Embedding`. The table to tie the decoder to.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of the dense transform.
        activation: str. One of `kbert.config.ACTIVATIONS`: GELU exact ("gelu", BERT's) or its tanh
            approximation ("gelu_approximate", ALBERT's).

    Example:
    >>> import numpy as np
    >>> embedding = keras.layers.Embedding(30, 8)
    >>> embedding.build((None,))
    >>> head = MaskedLMHead(embedding)
    >>> logits = head(np.zeros((2, 5, 8)), np.array([[1, 3], [0, 0]]))
    >>> tuple(logits.shape)
    (2, 2, 30)
    """

    def __init__(self, token_embedding, layer_norm_epsilon=1e-12,
                 kernel_initializer="glorot_uniform", activation="gelu", **kwargs):
        super().__init__(**kwargs)
        if activation not in ACTIVATIONS:
            raise ValueError(f"MaskedLMHead: activation={activation!r} is not one of {ACTIVATIONS}.")
        self.token_embedding = token_embedding
        self.layer_norm_epsilon = layer_norm_epsilon
        self.activation = activation
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.dense = keras.layers.Dense(
            token_embedding.output_dim, kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="dense")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")

    def build(self, sequence_output_shape, mask_positions_shape=None):
        self.dense.build(sequence_output_shape)
        self.layer_norm.build(sequence_output_shape[:-1] + (self.token_embedding.output_dim,))
        self.bias = self.add_weight(
            name="bias", shape=(self.token_embedding.input_dim,), initializer="zeros",
            autocast=False)  # added to the float32 logits as it is, also under mixed precision

    def call(self, sequence_output, mask_positions):
        positions = ops.expand_dims(ops.cast(mask_positions, "int32"), -1)
        x = ops.take_along_axis(sequence_output, positions, axis=1)
        x = self.layer_norm(ops.gelu(self.dense(x), approximate=self.activation == "gelu_approximate"))
        embedding = self.token_embedding
        if embedding.quantization_mode:  # integer rows with scales: the layer dequantizes them
            table = embedding(ops.arange(embedding.input_dim))
        else:
            table = embedding.embeddings
        table = ops.cast(table, x.dtype)
        logits = ops.matmul(x, ops.transpose(table))
        return ops.cast(logits, "float32") + self.bias

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape):
        return (*mask_positions_shape, self.token_embedding.input_dim)

    def get_config(self):
        # The embedding is the backbone's: BertPretrainer rebuilds the head from it.
        return {**super().get_config(), "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "activation": self.activation}
