"""Data parallelism on TensorFlow: `tf.distribute.MirroredStrategy` on 2 logical CPU devices trains a bert_tiny
classifier on raw strings (global batches of 5, padded to 6 on 2 replicas) to the weights of one device on the same
global batches; the sentiment app trains under --distribution data --remat on the 2 devices. Torch's processes train
the same classifier in test_torch_app_processes.py; here, torch refuses data parallelism outside a job."""

import json

import keras
import numpy as np
import pytest

from tests.conftest import TESTS, run_python
from tests.tasks.conftest import tiny_init, write_sentiment_tsv  # noqa: F401 (a fixture)

WORKER = TESTS / "distribution" / "data_parallel_worker.py"


def _weights(results, prefix):
    return [results[f"{prefix}{i}"] for i in range(sum(key[len(prefix):].isdigit() for key in results
                                                        if key.startswith(prefix)))]


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="tf.distribute: TensorFlow's test")
def test_mirrored_strategy_trains_as_one_device(tiny_init, tmp_path):  # noqa: F811
    data = write_sentiment_tsv(tmp_path / "train.tsv", rows=12)
    run_python(WORKER, "tensorflow-app", tiny_init, data, tmp_path / "run", backend="tensorflow")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())  # the app, on the 2 devices
    assert metrics["distribution"] == {"distribution": "data", "mesh": None, "devices": 2}
    assert metrics["hyperparameters"]["remat"] is True  # its blocks rematerialized under MirroredStrategy
    run_python(WORKER, "tensorflow", tmp_path / "out.npz", backend="tensorflow")
    results = np.load(tmp_path / "out.npz")
    assert str(results["refusal"]) == ("batch_size=5 does not divide by the data dimension 2 of the active "
                                       "distribution; choose a multiple of 2.")
    assert (int(results["replicas"]), int(results["steps"]), int(results["single_steps"])) == (2, 10, 10)
    assert float(results["moved"]) > 1e-3
    single, mirrored = _weights(results, "single"), _weights(results, "weight")
    assert len(single) == len(mirrored) > 0
    for expected, actual in zip(single, mirrored):
        np.testing.assert_allclose(actual, expected, atol=2e-6)


@pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's test")
def test_torch_needs_its_processes(monkeypatch):
    import kbert.distribution

    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="started by torchrun .*; MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE not set"):
        kbert.distribution.data_parallel()
    with pytest.raises(ValueError, match="Model parallelism .* needs the JAX backend .* this process runs 'torch'"):
        kbert.distribution.get("model", (1, 1))
