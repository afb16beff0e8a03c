"""`--remat` of the recipes (`kbert.recipes`) and apps/pretrain.py: build the model so that its
transformer blocks are recomputed in the backward pass instead of keeping their activations
(`keras.RematScope`)."""

import contextlib
import re

import keras


class _TransformerBlocks:
    """The layer names `keras.RematScope(mode="list_of_layers")` selects (it asks `name in
    layer_names`): `BertBackbone`'s blocks, `transformer_layer_N`, whatever their number."""

    def __contains__(self, name):
        return re.fullmatch(r"transformer_layer_\d+", name) is not None


@contextlib.contextmanager
def rematerialized(enabled=True):
    """Inside the block, kbert models are built with each transformer block rematerialized.

    The activations of a block are not kept for the backward pass but recomputed there:
    less memory (longer sequences, larger batches per device) for about a third more
    compute. Same losses and gradients. Only the blocks: `keras.RematScope(mode="full")`
    around a model fails on JAX in Keras 3.15 as soon as it holds a `Dropout`
    (`jax.checkpoint` traces the Python bool `training`), while the blocks hold `training`
    static (`TransformerEncoder.rematerialized_call`). JAX only: elsewhere a ValueError.

    Args:
        enabled: bool. False builds as usual.

    Example:
    >>> import kbert
    >>> with rematerialized(keras.config.backend() == "jax"):
    ...     backbone = kbert.BertBackbone.from_preset("bert_tiny")
    >>> backbone.get_layer("transformer_layer_0")._remat_mode is not None or keras.config.backend() != "jax"
    True
    """
    if not enabled:
        yield
        return
    if keras.config.backend() != "jax":
        raise ValueError(f"Rematerialization (--remat) is built and tested on the JAX backend only; this "
                         f"process runs {keras.config.backend()!r} (KERAS_BACKEND=jax).")
    with keras.RematScope(mode="list_of_layers", layer_names=_TransformerBlocks()):
        yield
