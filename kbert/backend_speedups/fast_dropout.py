"""Backend switch for faster dropout masks when training on CPU (JAX only)."""

import keras


def use_fast_dropout_masks():
    """Under JAX, draws random bits with the classic threefry stream instead of the partitionable one.

    Dropout draws about 24M random numbers per MiniLM training step of 16 x 128 tokens,
    most of them for the attention probabilities. On CPU, JAX's default partitionable
    threefry (since JAX 0.5) generates them about 2x slower than the classic stream; the
    partitionable one only matters for arrays sharded across devices. The distribution is
    the same, the particular masks differ. Process-wide (`jax_threefry_partitionable`);
    nothing changes under TensorFlow or PyTorch. The recipes (`kbert.recipes`) and `apps/pretrain.py`
    call it.

    Example:
    >>> use_fast_dropout_masks()
    """
    if keras.config.backend() == "jax":
        import jax

        jax.config.update("jax_threefry_partitionable", False)
