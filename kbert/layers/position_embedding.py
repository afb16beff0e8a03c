import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class PositionEmbedding(keras.layers.Layer):
    """Learned position embedding, broadcast to the input's shape.

    Args:
        max_length: int. Longest sequence the layer can embed.
        initializer: initializer of the (max_length, hidden) table.

    Example:
    >>> import numpy as np
    >>> y = PositionEmbedding(max_length=16)(np.zeros((2, 8, 32)))
    >>> tuple(y.shape)
    (2, 8, 32)
    """

    def __init__(self, max_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=self.initializer,
        )

    def call(self, inputs):
        shape = ops.shape(inputs)
        # Through convert_to_tensor and ops.slice: a plain `table[:n]` broke JAX export.
        table = ops.convert_to_tensor(self.embeddings)
        table = ops.slice(table, (0, 0), (shape[-2], shape[-1]))
        return ops.broadcast_to(ops.cast(table, inputs.dtype), shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_length": self.max_length,
            "initializer": keras.initializers.serialize(self.initializer),
        }
