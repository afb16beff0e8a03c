"""The one switch (issue 41): KBERT_SPEEDUPS=0 turns every backend speed-up off, and a model computes the same
with them and without them: a classifier's inference outputs, and its weights after two AdamW steps (dropout
off, so that no mask is drawn), on each backend. The switch is read at each call: a model built and trained
after it is set runs as it says."""

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertClassifier
from kbert.backend_speedups import SPEEDUPS, active, chosen
from kbert.optimizers import bert_adamw
from tests.conftest import TINY, tiny_batch


def train_and_predict(monkeypatch, speedups):
    """(the speed-ups active, logits, weights) of a classifier built, trained two steps and run with
    KBERT_SPEEDUPS=`speedups`."""
    monkeypatch.setenv("KBERT_SPEEDUPS", speedups)
    keras.utils.set_random_seed(0)
    model = BertClassifier(BertBackbone(**{**TINY, "dropout": 0.0}), 3, dropout=0.0)
    model.compile(optimizer=bert_adamw(1e-2, 10, warmup_ratio=0.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batch = tiny_batch()
    model.fit(batch, np.array([0, 2, 1]), batch_size=3, epochs=2, shuffle=False, verbose=0)
    return ({name for name in SPEEDUPS if active(name)}, keras.ops.convert_to_numpy(model.predict_on_batch(batch)),
            [keras.ops.convert_to_numpy(w) for w in model.weights])


def test_every_speedup_off_computes_what_they_compute(monkeypatch):
    (fast_active, fast_logits, fast_weights), (plain_active, plain_logits, plain_weights) = (
        train_and_predict(monkeypatch, "all"), train_and_predict(monkeypatch, "0"))
    backend = keras.config.backend()
    assert fast_active == {name for name, which in SPEEDUPS.items() if which in (None, backend)}
    assert plain_active == set()
    np.testing.assert_allclose(fast_logits, plain_logits, atol=1e-5)
    for with_them, without in zip(fast_weights, plain_weights, strict=True):
        np.testing.assert_allclose(with_them, without, atol=1e-5)


def test_the_switch_takes_names_and_refuses_unknown_ones(monkeypatch):
    monkeypatch.setenv("KBERT_SPEEDUPS", "torch_dense, jax_gelu")
    assert chosen() == {"torch_dense", "jax_gelu"}
    assert active("torch_dense") == (keras.config.backend() == "torch")
    assert not active("direct_sublayer_calls")
    monkeypatch.setenv("KBERT_SPEEDUPS", "-torch_backbone,-jax_gelu")
    assert chosen() == set(SPEEDUPS) - {"torch_backbone", "jax_gelu"}
    monkeypatch.setenv("KBERT_SPEEDUPS", "none")
    assert not any(active(name) for name in SPEEDUPS)
    monkeypatch.setenv("KBERT_SPEEDUPS", "torch_dens")
    with pytest.raises(ValueError, match=r"KBERT_SPEEDUPS='torch_dens': unknown speed-up\(s\) \['torch_dens'\]"):
        active("torch_dense")
    monkeypatch.setenv("KBERT_SPEEDUPS", "-torch_dense,jax_gelu")
    with pytest.raises(ValueError, match="not both"):
        active("torch_dense")
