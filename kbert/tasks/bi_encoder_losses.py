"""The losses of a bi-encoder (`BertSentenceEncoder`), as sentence-transformers defines them.

Both read the model's embeddings of a batch of examples, each example's texts in consecutive rows
(B pairs: 2B rows), and one label a example: (rows, dim) and (B,).
"""

import keras
from keras import ops

from kbert.layers.mean_pooling import l2_normalize


def _examples(y_true, y_pred):
    """The embeddings (rows, dim) regrouped by example: (examples, texts, dim), L2-normalised."""
    texts = ops.shape(y_pred)[0] // ops.shape(ops.reshape(y_true, (-1,)))[0]
    grouped = ops.reshape(y_pred, (-1, texts, y_pred.shape[-1]))
    return l2_normalize(grouped)


@keras.saving.register_keras_serializable(package="kbert")
class CosineSimilarityLoss(keras.losses.Loss):
    """Squared difference between the cosine similarity of each pair's embeddings and its score
    (sentence-transformers' `CosineSimilarityLoss`, averaged over the batch).

    Example:
    >>> import numpy as np
    >>> embeddings = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [2.0, 2.0]])  # pairs: orthogonal, parallel
    >>> round(float(CosineSimilarityLoss()(np.array([0.0, 0.5]), embeddings)), 4)  # (0 + 0.5 ** 2) / 2
    0.125
    """

    def __init__(self, name="cosine_similarity", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        pairs = _examples(y_true, y_pred)
        cosine = ops.sum(pairs[:, 0] * pairs[:, 1], axis=-1)
        return ops.square(cosine - ops.cast(ops.reshape(y_true, (-1,)), cosine.dtype))


@keras.saving.register_keras_serializable(package="kbert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """Cross-entropy of each anchor's positive among every positive (and hard negative) of the batch,
    by cosine similarity times `scale` (sentence-transformers' `MultipleNegativesRankingLoss`): the other
    examples' positives are the anchor's negatives, so a batch needs 2 examples or more. `y_true` is unread
    (one value per example, only its length counts).

    Args:
        scale: float. Similarities are multiplied by this before the softmax (1 / temperature).

    Example:
    >>> import numpy as np
    >>> embeddings = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])  # 2 (anchor, positive) pairs
    >>> round(float(MultipleNegativesRankingLoss(scale=1.0)(np.zeros(2), embeddings)), 4)  # log(1 + e^-1)
    0.3133
    """

    def __init__(self, scale=20.0, name="multiple_negatives_ranking", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = scale

    def call(self, y_true, y_pred):
        examples = _examples(y_true, y_pred)
        anchors = examples[:, 0]
        # the positives of all examples, then their hard negatives: the positive of anchor i is candidate i
        candidates = ops.reshape(ops.transpose(examples[:, 1:], (1, 0, 2)), (-1, y_pred.shape[-1]))
        scores = ops.matmul(anchors, ops.transpose(candidates)) * self.scale
        positive = ops.sum(anchors * examples[:, 1], axis=-1) * self.scale
        return ops.logsumexp(scores, axis=-1) - positive

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
