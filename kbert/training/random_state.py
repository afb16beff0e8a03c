"""The random state a training step's dropout draws from, as numpy arrays a backup holds: restored, a resumed
run draws the masks the run never killed would have drawn (as Hugging Face's Trainer restores its RNG states).

- Keras's `Dropout` layers, on every backend, draw from their `keras.random.SeedGenerator`s, whose states are
  variables of the model but not among the weights `save_weights` writes.
- On torch, kbert's dropout (`kbert.backend_speedups.torch_dropout`) and the fused attention's `dropout_p` draw
  from torch's global generators (the CPU's, and each GPU's once CUDA is in use).
"""

import keras
import numpy as np


def random_state(model):
    """A dict of numpy arrays: `model`'s seed generators' states and, on torch, torch's global generators'.

    Example:
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.5)])
    >>> state = random_state(model)
    >>> first = keras.ops.convert_to_numpy(model(np.ones((1, 8)), training=True))
    >>> restore_random_state(model, state)
    >>> bool((keras.ops.convert_to_numpy(model(np.ones((1, 8)), training=True)) == first).all())
    True
    """
    state = {"seed_generators": [keras.ops.convert_to_numpy(v) for v in _seed_states(model)]}
    if keras.config.backend() == "torch":
        import torch

        state["torch"] = torch.get_rng_state().numpy()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["torch_cuda"] = [generator.numpy() for generator in torch.cuda.get_rng_state_all()]
    return state


def restore_random_state(model, state):
    """Sets the random state `random_state(model)` returned (read back from a backup: arrays as saved)."""
    for variable, value in zip(_seed_states(model), state["seed_generators"], strict=True):
        variable.assign(value)
    if keras.config.backend() == "torch" and "torch" in state:
        import torch

        torch.set_rng_state(torch.from_numpy(np.asarray(state["torch"])))
        if "torch_cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([torch.from_numpy(np.asarray(value)) for value in state["torch_cuda"]])


def _seed_states(model):
    """The state variables of `model`'s seed generators: its variables that are neither weights nor metrics'."""
    kept_elsewhere = {id(v) for v in [*model.weights, *model.metrics_variables]}
    return [v for v in model.variables if id(v) not in kept_elsewhere]
