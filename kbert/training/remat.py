"""`remat` of the recipes (`kbert.recipes`) and apps/pretrain.py: build the model so that its
transformer blocks are recomputed in the backward pass instead of keeping their activations
(`keras.RematScope`), on JAX, TensorFlow and torch."""

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
    compute. Same losses and gradients, dropout included. On every backend (`keras.remat`:
    `jax.checkpoint`, `tf.recompute_grad`, `torch.utils.checkpoint`). Only the blocks, each
    as a pure function of its weights and tensors with `training` static
    (`TransformerEncoder.rematerialized_call`): Keras's own remat of a layer fails on JAX as
    soon as it holds a `Dropout` (`jax.checkpoint` traces the Python bool `training`), and
    on TensorFlow inside `fit` (`tf.custom_gradient` takes no keyword arguments in a
    `tf.function`).

    Args:
        enabled: bool. False builds as usual.

    Example:
    >>> import kbert
    >>> with rematerialized():
    ...     backbone = kbert.BertBackbone.from_preset("bert_tiny")
    >>> backbone.get_layer("transformer_layer_0")._remat_mode is not None
    True
    """
    if not enabled:
        yield
        return
    with keras.RematScope(mode="list_of_layers", layer_names=_TransformerBlocks()):
        yield
