import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.optimizers import bert_adamw
from tests.conftest import TINY

MICRO_BATCH, STEPS = 2, 3  # micro-batches of 2 examples, 3 of them per optimizer step


def tiny_classifier():
    backbone = BertBackbone(**{**TINY, "dropout": 0.0})
    return keras.Model(backbone.input, keras.layers.Dense(2)(backbone.output["pooled_output"]))


def train(weights, batch, labels, batch_size, gradient_accumulation_steps=None):
    """Weights and optimizer step count after one epoch of `fit` from `weights`."""
    model = tiny_classifier()
    model.set_weights(weights)
    # No warmup: the rate decays from the first step, so a schedule read at the wrong step shows.
    optimizer = bert_adamw(1e-3, total_steps=4, warmup_ratio=0.0,
                           gradient_accumulation_steps=gradient_accumulation_steps)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(batch, labels, batch_size=batch_size, shuffle=False, epochs=1, verbose=0)
    return [ops.convert_to_numpy(w) for w in model.weights], int(optimizer.iterations)


def test_accumulated_micro_batches_step_as_one_concatenated_batch():
    keras.utils.set_random_seed(0)
    initial = tiny_classifier().get_weights()
    size = 2 * STEPS * MICRO_BATCH  # two optimizer steps
    batch = {"token_ids": np.random.default_rng(0).integers(1, TINY["vocabulary_size"], (size, 6)),
             "segment_ids": np.zeros((size, 6), "int32"), "padding_mask": np.ones((size, 6), "int32")}
    labels = np.arange(size) % 2
    accumulated, accumulated_steps = train(initial, batch, labels, MICRO_BATCH, gradient_accumulation_steps=STEPS)
    concatenated, concatenated_steps = train(initial, batch, labels, STEPS * MICRO_BATCH)
    assert accumulated_steps == concatenated_steps == 2
    assert max(np.abs(a - b).max() for a, b in zip(concatenated, initial)) > 1e-3  # the weights moved
    # 1% of the learning rate: Adam moves a weight whose gradient is near 0 by lr * noise / epsilon
    # (up to 2e-6 measured over 12 seeds); the schedule read per micro-batch moved weights by 1e-3.
    for a, b in zip(accumulated, concatenated):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.skipif(keras.config.backend() != "jax", reason="the apps' --gradient-accumulation is checked on JAX")
def test_sgd_accumulated_micro_batches_equal_one_concatenated_batch():
    """SGD with momentum sees a gradient's scale (Adam does not): the mean of N micro-batch gradients."""
    keras.utils.set_random_seed(1)
    initial = tiny_classifier().get_weights()
    size = 2 * STEPS * MICRO_BATCH
    rng = np.random.default_rng(1)
    batch = {"token_ids": rng.integers(1, TINY["vocabulary_size"], (size, 6)),
             "segment_ids": np.zeros((size, 6), "int32"), "padding_mask": np.ones((size, 6), "int32")}
    labels = np.arange(size) % 2
    trained = []
    for batch_size, steps in ((MICRO_BATCH, STEPS), (STEPS * MICRO_BATCH, None)):
        model = tiny_classifier()
        model.set_weights(initial)
        optimizer = keras.optimizers.SGD(0.5, momentum=0.9, gradient_accumulation_steps=steps)
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(batch, labels, batch_size=batch_size, shuffle=False, epochs=1, verbose=0)
        assert int(optimizer.iterations) == 2
        trained.append(model.get_weights())
    assert max(np.abs(a - b).max() for a, b in zip(trained[1], initial)) > 1e-3
    for accumulated, concatenated in zip(*trained, strict=True):
        np.testing.assert_allclose(accumulated, concatenated, atol=1e-6)
