import keras
import numpy as np
import pytest

import kbert
from kbert.training.remat import rematerialized
from tests.conftest import TINY

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax", reason="rematerialization is built for JAX")

BATCH = {"token_ids": np.array([[2, 7, 9, 3, 0], [2, 5, 3, 0, 0]]), "segment_ids": np.zeros((2, 5), "int32"),
         "padding_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])}


def loss_and_gradients(model):
    import jax

    def loss(trainable):
        outputs, _ = model.stateless_call(trainable, [v.value for v in model.non_trainable_variables], BATCH,
                                          training=True)
        return keras.ops.mean(keras.losses.sparse_categorical_crossentropy(np.array([0, 1]), outputs, from_logits=True))

    trainable = [v.value for v in model.trainable_variables]
    return jax.value_and_grad(loss)(trainable), jax.make_jaxpr(jax.grad(loss))(trainable)


def classifier(weights=None, dropout=0.0):
    model = kbert.BertClassifier(kbert.BertBackbone(**TINY, dropout=dropout), num_classes=2, dropout=dropout)
    if weights is not None:
        model.set_weights(weights)
    return model


def test_rematerialized_blocks_give_the_same_loss_and_gradients():
    plain = classifier()
    with rematerialized():
        remat = classifier(plain.get_weights())
    (loss, gradients), plain_program = loss_and_gradients(plain)
    (remat_loss, remat_gradients), remat_program = loss_and_gradients(remat)
    assert "remat" in str(remat_program) and "remat" not in str(plain_program)  # jax.checkpoint: recomputed
    np.testing.assert_allclose(remat_loss, loss, rtol=1e-6)
    assert max(float(np.abs(g).max()) for g in gradients) > 1e-5
    for remat_gradient, gradient in zip(remat_gradients, gradients, strict=True):
        np.testing.assert_allclose(remat_gradient, gradient, rtol=1e-5, atol=1e-10)


def test_rematerialized_model_fits_with_dropout():  # keras.RematScope(mode="full") fails here (traced bool)
    with rematerialized():
        model = classifier(dropout=0.1)
    seed = model.backbone.get_layer("transformer_layer_0").non_trainable_variables[0]
    before = np.array(seed.value)
    history = model.fit(BATCH, np.array([0, 1]), batch_size=2, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert not np.array_equal(np.array(seed.value), before)  # dropout's seed moved on, out of the checkpoint
