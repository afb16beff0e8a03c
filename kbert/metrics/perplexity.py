import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class Perplexity(keras.metrics.Mean):
    """exp of the (weighted) mean cross-entropy of integer labels under logits.

    Args:
        name: str. The metric's name in the logs.

    Example:
    >>> import numpy as np
    >>> metric = Perplexity()
    >>> metric.update_state(np.array([[0, 1]]), np.zeros((1, 2, 4)), np.array([[1.0, 0.0]]))
    >>> round(float(metric.result()), 4)  # uniform over 4 tokens
    4.0
    """

    def __init__(self, name="perplexity", **kwargs):
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        losses = keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        return super().update_state(losses, sample_weight=sample_weight)

    def result(self):
        return ops.exp(super().result())
