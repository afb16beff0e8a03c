"""The one switch (issue 41): KBERT_SPEEDUPS=0 turns every backend speed-up off, and a model computes the same
with them and without them: a classifier's inference outputs, and its weights after two AdamW steps (dropout
off, so that no mask is drawn), each run in its own process on each backend."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert.backend_speedups import SPEEDUPS, active, chosen
from tests.conftest import TESTS

TRAIN_AND_PREDICT = """
import json, sys
import keras, numpy as np
from kbert import BertBackbone, BertClassifier
from kbert.backend_speedups import SPEEDUPS, active
from kbert.optimizers import bert_adamw
from tests.conftest import TINY, tiny_batch

keras.utils.set_random_seed(0)
model = BertClassifier(BertBackbone(**{**TINY, "dropout": 0.0}), 3, dropout=0.0)
model.compile(optimizer=bert_adamw(1e-2, 10, warmup_ratio=0.0),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
batch = tiny_batch()
model.fit(batch, np.array([0, 2, 1]), batch_size=3, epochs=2, shuffle=False, verbose=0)
print(json.dumps({"active": sorted(name for name in SPEEDUPS if active(name)),
                  "logits": keras.ops.convert_to_numpy(model.predict_on_batch(batch)).tolist(),
                  "weights": [keras.ops.convert_to_numpy(w).ravel().tolist() for w in model.weights]}))
"""


def run_with(speedups):
    env = {**os.environ, "KERAS_BACKEND": keras.config.backend(), "KBERT_SPEEDUPS": speedups}
    result = subprocess.run([sys.executable, "-c", TRAIN_AND_PREDICT], cwd=TESTS.parent, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_every_speedup_off_computes_what_they_compute():
    fast, plain = run_with("all"), run_with("0")
    backend = keras.config.backend()
    assert fast["active"] == sorted(name for name, which in SPEEDUPS.items() if which in (None, backend))
    assert plain["active"] == []
    np.testing.assert_allclose(fast["logits"], plain["logits"], atol=1e-5)
    for with_them, without in zip(fast["weights"], plain["weights"]):
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
