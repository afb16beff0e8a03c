"""`rematerialized()` on each backend: the same loss and gradients as the plain model (with and without
dropout), the blocks really recomputed in the backward pass, and `fit` with dropout."""

import functools

import keras
import numpy as np
import pytest

import kbert
from kbert.layers.transformer_encoder import TransformerEncoder
from kbert.training.remat import rematerialized
from tests.conftest import TINY

BATCH = {"token_ids": np.array([[2, 7, 9, 3, 0], [2, 5, 3, 0, 0]]), "segment_ids": np.zeros((2, 5), "int32"),
         "padding_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])}
LABELS = np.array([0, 1])


def mean_loss(outputs):
    return keras.ops.mean(keras.losses.sparse_categorical_crossentropy(LABELS, outputs, from_logits=True))


def loss_and_gradients(model, block_calls):
    """The loss of a training step, its gradients, and the evidence of recomputation: on JAX the
    gradient's program (`jax.checkpoint` shows as `remat2`); elsewhere the blocks' forward calls
    counted after the loss and after the gradients (a recomputed block runs again in between)."""
    backend = keras.config.backend()
    keras.utils.set_random_seed(1)  # torch's dropout draws from torch's global generator
    trainable = [v.value for v in model.trainable_variables]
    if backend == "jax":
        import jax

        def loss(trainable):
            outputs, _ = model.stateless_call(trainable, [v.value for v in model.non_trainable_variables], BATCH,
                                              training=True)
            return mean_loss(outputs)

        return (*jax.value_and_grad(loss)(trainable), str(jax.make_jaxpr(jax.grad(loss))(trainable)))
    evidence = []
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function  # as the trainer: tf.custom_gradient refuses keyword arguments here
        def step():
            with tf.GradientTape() as tape:
                loss = mean_loss(model(BATCH, training=True))
            evidence.append(block_calls[0])
            gradients = tape.gradient(loss, trainable)
            evidence.append(block_calls[0])
            return loss, [tf.convert_to_tensor(g) for g in gradients]  # IndexedSlices of the embeddings

        loss, gradients = step()
    else:
        import torch

        loss = mean_loss(model(BATCH, training=True))
        evidence.append(block_calls[0])
        gradients = torch.autograd.grad(loss, trainable)
        evidence.append(block_calls[0])
    return keras.ops.convert_to_numpy(keras.ops.stop_gradient(loss)), [keras.ops.convert_to_numpy(g) for g in gradients], tuple(evidence)


@pytest.fixture
def block_calls(monkeypatch):
    """Counts the forward calls of every `TransformerEncoder`, the plain call and its recomputation."""
    calls = [0]
    call = TransformerEncoder.call

    @functools.wraps(call)
    def counted(self, *args, **kwargs):
        calls[0] += 1
        return call(self, *args, **kwargs)

    monkeypatch.setattr(TransformerEncoder, "call", counted)
    return calls


def classifier(dropout=0.0):
    return kbert.BertClassifier(kbert.BertBackbone(**TINY, dropout=dropout), num_classes=2, dropout=dropout)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_rematerialized_blocks_give_the_same_loss_and_gradients(dropout, block_calls, monkeypatch):
    monkeypatch.setenv("KBERT_SPEEDUPS", "0")  # the plain model as Keras's graph (not torch's plain-torch pass)
    plain = classifier(dropout)
    with rematerialized():
        remat = classifier(dropout)
    for variable, value in zip(remat.variables, plain.variables, strict=True):  # the dropout seeds too
        variable.assign(value.value)
    loss, gradients, plain_evidence = loss_and_gradients(plain, block_calls)
    block_calls[0] = 0
    remat_loss, remat_gradients, remat_evidence = loss_and_gradients(remat, block_calls)
    if keras.config.backend() == "jax":
        assert "remat" in remat_evidence and "remat" not in plain_evidence  # jax.checkpoint: recomputed
    else:  # 2 blocks: each ran once for the loss, and once more for the gradients (recomputed)
        assert plain_evidence == (2, 2) and remat_evidence == (2, 4)
    np.testing.assert_allclose(remat_loss, loss, rtol=1e-6)
    assert max(float(np.abs(g).max()) for g in gradients) > 1e-5
    for remat_gradient, gradient in zip(remat_gradients, gradients, strict=True):
        np.testing.assert_allclose(remat_gradient, gradient, rtol=1e-5, atol=1e-10)


def test_rematerialized_model_fits_with_dropout():  # keras.RematScope(mode="full") fails here on JAX (traced bool)
    with rematerialized():
        model = classifier(dropout=0.1)
    seed = model.backbone.get_layer("transformer_layer_0").non_trainable_variables[0]
    before = np.array(keras.ops.convert_to_numpy(seed.value))
    weights = [np.array(w) for w in model.get_weights()]
    history = model.fit(BATCH, LABELS, batch_size=2, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any(not np.array_equal(w, before_w) for w, before_w in zip(model.get_weights(), weights))
    if keras.config.backend() != "torch":  # Keras's torch dropout draws from torch's generator, not the seed
        assert not np.array_equal(keras.ops.convert_to_numpy(seed.value), before)  # moved on, out of the checkpoint
