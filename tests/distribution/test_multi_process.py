"""Multi-process JAX: 2 processes on localhost, 4 virtual CPU devices each, train data-parallel over the
8 global devices and end with the weights of one process training on the same global batches."""

import os

import keras
import numpy as np
import pytest

from tests.conftest import TESTS, TINY
from tests.distribution.processes import free_port, run_together

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX processes")

GLOBAL_BATCH = 8  # rows per step over both processes: 4 per process, 1 per device


def classifier(weights):
    import kbert

    backbone = kbert.BertBackbone(**{**TINY, "dropout": 0.0})
    model = kbert.BertClassifier(backbone, num_classes=2, dropout=0.0)
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.SGD(0.5, momentum=0.9))  # unlike Adam, sees a gradient's scale
    return model


def test_two_processes_train_as_one(tmp_path):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    rows, length = 3 * GLOBAL_BATCH, 8
    data = {"token_ids": rng.integers(5, TINY["vocabulary_size"], (rows, length)),
            "segment_ids": np.zeros((rows, length), "int32"),
            "padding_mask": (np.arange(length) < rng.integers(3, length + 1, (rows, 1))).astype("int32"),
            "labels": np.arange(rows) % 2}
    initial = _initial_weights()
    np.savez(tmp_path / "initial.npz", **data, **{f"weight{i}": w for i, w in enumerate(initial)})

    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
    run_together(TESTS / "distribution" / "multi_process_worker.py",
                 [(port, process_id, tmp_path) for process_id in (0, 1)], [env, env])

    model = classifier(initial)
    inputs = {key: data[key] for key in ("token_ids", "segment_ids", "padding_mask")}
    model.fit(inputs, data["labels"], batch_size=GLOBAL_BATCH, shuffle=False, epochs=1, verbose=0)  # one device
    moved = max(np.abs(a - b).max() for a, b in zip(model.get_weights(), initial))
    assert moved > 1e-3
    for process_id in (0, 1):
        trained = np.load(tmp_path / f"process_{process_id}.npz")
        assert (int(trained["devices"]), int(trained["local_devices"]), int(trained["steps"])) == (8, 4, 3)
        for i, expected in enumerate(model.get_weights()):
            np.testing.assert_allclose(trained[f"arr_{i}"], expected, atol=2e-5)


def _initial_weights():
    import kbert

    return kbert.BertClassifier(kbert.BertBackbone(**{**TINY, "dropout": 0.0}), num_classes=2).get_weights()
