from keras import ops


def mean_pool(sequence_output, padding_mask, normalize=True):
    """Sentence embeddings: the mean of the token vectors over real (non-padding) tokens.

    This is sentence-transformers' pooling for all-MiniLM-L6-v2, which then L2-normalises.

    Args:
        sequence_output: (batch, length, hidden) float tensor.
        padding_mask: (batch, length) tensor, 1 for real tokens.
        normalize: bool. Divide each embedding by its L2 norm.

    Example:
    >>> import numpy as np
    >>> x = np.array([[[1.0, 0.0], [3.0, 0.0], [9.0, 9.0]]])
    >>> [round(float(v), 3) for v in mean_pool(x, np.array([[1, 1, 0]]), normalize=False)[0]]
    [2.0, 0.0]
    """
    sequence_output = ops.convert_to_tensor(sequence_output)
    mask = ops.cast(padding_mask, sequence_output.dtype)[:, :, None]
    summed = ops.sum(sequence_output * mask, axis=1)
    pooled = summed / ops.maximum(ops.sum(mask, axis=1), 1e-9)
    if normalize:
        pooled = pooled / ops.maximum(ops.norm(pooled, axis=-1, keepdims=True), 1e-12)
    return pooled
