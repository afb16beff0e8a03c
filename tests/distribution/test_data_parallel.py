"""Data parallelism off JAX: `tf.distribute.MirroredStrategy` on 2 logical CPU devices, and 2 torch
processes averaging their gradients over gloo, each train a bert_tiny classifier on raw strings (global
batches of 5, padded to 6 on 2 replicas) to the weights of one device on the same global batches; the
sentiment app trains under --distribution data --remat on the 2 TensorFlow devices."""

import json
import os

import keras
import numpy as np
import pytest

from tests.conftest import TESTS, run_python
from tests.distribution.processes import free_port, run_together
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
def test_torch_processes_train_as_one(tmp_path):
    from tests.distribution.data_parallel_training import train

    port = free_port()
    envs = [{**os.environ, "KERAS_BACKEND": "torch", "MASTER_ADDR": "localhost", "MASTER_PORT": str(port),
             "RANK": str(rank), "WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"} for rank in (0, 1)]
    run_together(WORKER, [("torch", tmp_path / f"{rank}.npz") for rank in (0, 1)], envs)

    expected, steps, moved = train(None)  # one process, all rows of each global batch
    assert steps == 10 and moved > 1e-3
    for rank in (0, 1):
        results = np.load(tmp_path / f"{rank}.npz")
        assert (int(results["replicas"]), int(results["steps"])) == (2, 10)
        trained = _weights(results, "weight")
        assert len(trained) == len(expected)
        for reference, actual in zip(expected, trained):
            np.testing.assert_allclose(actual, reference, atol=2e-5)


@pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's test")
def test_torch_needs_its_processes(monkeypatch):
    import kbert.distribution

    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="started by torchrun .*; MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE not set"):
        kbert.distribution.data_parallel()
    with pytest.raises(ValueError, match="Model parallelism .* needs the JAX backend .* this process runs 'torch'"):
        kbert.distribution.get("model", (1, 1))
