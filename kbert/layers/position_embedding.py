import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class PositionEmbedding(keras.layers.Layer):
    """Learned position embedding, broadcast to the input's shape.

    With `offset` k > 0 (RoBERTa's, whose k is its padding id + 1), positions are counted along the
    real tokens of each row from k, and padding takes row k - 1: Hugging Face's
    `create_position_ids_from_input_ids`, from the padding mask (1 for real tokens) the call is given.

    Args:
        max_length: int. Rows of the table: the longest sequence the layer can embed, plus `offset`.
        initializer: initializer of the (max_length, hidden) table.
        offset: int. 0, row i for position i; or the first row of real tokens, as above.

    Example:
    >>> import numpy as np
    >>> y = PositionEmbedding(max_length=16)(np.zeros((2, 8, 32)))
    >>> tuple(y.shape)
    (2, 8, 32)
    >>> ops.convert_to_numpy(PositionEmbedding.position_ids(np.array([[1, 1, 1, 0]]), offset=2)).tolist()
    [[2, 3, 4, 1]]
    """

    def __init__(self, max_length, initializer="glorot_uniform", offset=0, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)
        self.offset = offset

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=self.initializer,
        )

    def call(self, inputs, padding_mask=None):
        shape = ops.shape(inputs)
        # Through convert_to_tensor and ops.slice: a plain `table[:n]` broke JAX export.
        table = ops.convert_to_tensor(self.embeddings)
        if self.offset:
            if padding_mask is None:
                raise ValueError(f"PositionEmbedding with offset {self.offset} counts positions along the real "
                                 "tokens: call it with their padding_mask.")
            return ops.cast(ops.take(table, self.position_ids(padding_mask, self.offset), axis=0), inputs.dtype)
        table = ops.slice(table, (0, 0), (shape[-2], shape[-1]))
        return ops.broadcast_to(ops.cast(table, inputs.dtype), shape)

    @staticmethod
    def position_ids(padding_mask, offset):
        """(batch, length) rows of the table: `offset` + i for the i-th real token, `offset` - 1 for padding."""
        mask = ops.cast(padding_mask, "int32")
        return ops.cumsum(mask, axis=-1) * mask + (offset - 1)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_length": self.max_length,
            "initializer": keras.initializers.serialize(self.initializer),
            "offset": self.offset,
        }
