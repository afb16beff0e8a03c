"""Faster dropout masks while training on a CPU (JAX only)."""

import contextlib

import keras

from kbert.backend_speedups import active


@contextlib.contextmanager
def fast_dropout_masks():
    """Under JAX, within the block random bits come from the classic threefry stream instead of the partitionable one.

    Dropout draws about 24M random numbers per MiniLM training step of 16 x 128 tokens,
    most of them for the attention probabilities. On CPU, JAX's default partitionable
    threefry (since JAX 0.5) generates them about 2x slower than the classic stream; the
    partitionable one only matters for arrays sharded across devices. The distribution is
    the same, the particular masks differ. `BertTask.fit` trains inside this block (speed-up
    `jax_dropout_masks`), so JAX's setting is as the user left it outside `fit`; nothing
    changes under TensorFlow or PyTorch.

    Example:
    >>> with fast_dropout_masks():
    ...     pass
    """
    if keras.config.backend() != "jax":
        yield
        return
    import jax

    with jax.threefry_partitionable(False):
        yield


def fit_dropout_masks():
    """What `BertTask.fit` trains within: `fast_dropout_masks()` where the speed-up `jax_dropout_masks` is
    active (`kbert.backend_speedups.active`), else nothing.

    Example:
    >>> with fit_dropout_masks():
    ...     pass
    """
    return fast_dropout_masks() if active("jax_dropout_masks") else contextlib.nullcontext()
