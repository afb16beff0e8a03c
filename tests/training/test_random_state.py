"""kbert.training.random_state: what dropout draws from, saved and set back (the resumes themselves:
tests/training/test_resumable_fit.py)."""

import keras
import numpy as np
import pytest

from kbert.training.random_state import random_state, restore_random_state


def dropout_model():
    inputs = keras.Input((16,))
    hidden = keras.layers.Dropout(0.5)(keras.layers.Dense(16)(inputs))
    model = keras.Model(inputs, keras.layers.Dropout(0.5, seed=3)(hidden))
    model.compile("sgd", "mse", metrics=["mae"])
    return model


def masks(model):
    return keras.ops.convert_to_numpy(model(np.ones((4, 16), "float32"), training=True)) != 0


def test_the_masks_drawn_after_a_restore_are_those_drawn_after_the_save():
    model = dropout_model()
    state = random_state(model)
    first, second = masks(model), masks(model)
    assert (first != second).any()  # the state moves on with each draw
    restore_random_state(model, state)
    assert (masks(model) == first).all() and (masks(model) == second).all()


def test_it_holds_each_seed_generator_and_no_weight_or_metric():
    model = dropout_model()
    state = random_state(model)
    assert len(state["seed_generators"]) == 2  # one per Dropout layer; not the Dense's weights, not the metric's
    assert ("torch" in state) == (keras.config.backend() == "torch")


@pytest.mark.skipif(keras.config.backend() != "torch", reason="torch's global generator")
def test_on_torch_it_holds_the_global_generator_that_kbert_s_dropout_draws_from():
    import torch

    state = random_state(dropout_model())
    drawn = torch.rand(8)
    restore_random_state(dropout_model(), state)
    assert torch.equal(torch.rand(8), drawn)
