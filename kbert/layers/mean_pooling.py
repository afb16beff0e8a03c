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
    return l2_normalize(pooled) if normalize else pooled


def l2_normalize(vectors):
    """Each vector (the last axis) divided by its L2 norm (at least 1e-12). In plain ops, not `ops.norm`,
    whose axis a functional graph keeps as a list that `jax.jit` cannot hash.

    Example:
    >>> import numpy as np
    >>> [round(float(v), 3) for v in l2_normalize(np.array([[3.0, 4.0]]))[0]]
    [0.6, 0.8]
    """
    return vectors / ops.maximum(ops.sqrt(ops.sum(ops.square(vectors), axis=-1, keepdims=True)), 1e-12)
