"""Pretraining as 2 torch processes (gloo on localhost, started as torchrun would, with MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE): a `BertPretrainer` fit on each process's share of fixed global batches ends with the weights
of one process fitting the whole batches; apps/pretrain.py --distribution data trains, process 0 writes the run
folder (and resumes it), process 1 writes and prints nothing."""

import json
import os

import keras
import numpy as np
import pytest

from tests.conftest import TESTS
from tests.distribution.processes import free_port, run_together
from tests.tasks.test_pretrain_app import write_corpus

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's test")

WORKER = TESTS / "distribution" / "pretrain_process_worker.py"


def _environments(processes):
    port = free_port()
    job = lambda rank: {"MASTER_ADDR": "localhost", "MASTER_PORT": str(port), "RANK": str(rank),  # noqa: E731
                        "WORLD_SIZE": str(processes)} if processes > 1 else {}
    return [{**os.environ, "KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1", **job(rank)} for rank in range(processes)]


def _weights(results):
    return [results[f"weight{i}"] for i in range(sum(key.startswith("weight") for key in results))]


def test_pretrainer_trains_on_shares_as_on_whole_batches(tmp_path):
    run_together(WORKER, [("library", tmp_path / "one.npz")], _environments(1))
    run_together(WORKER, [("library", tmp_path / f"two{rank}.npz") for rank in (0, 1)], _environments(2))
    one = np.load(tmp_path / "one.npz")
    start = [weight for weight in _weights(one)]
    assert len(start) > 10
    for rank in (0, 1):
        two = np.load(tmp_path / f"two{rank}.npz")
        assert len(_weights(two)) == len(_weights(one))
        for expected, actual in zip(_weights(one), _weights(two)):
            np.testing.assert_allclose(actual, expected, atol=2e-5)
        # the validation (every process, the whole batch) scores the weights alike
        np.testing.assert_allclose(two["val_loss"], one["val_loss"], rtol=1e-5)
        assert "not sharded over torch processes" in str(two["refusal"])
    assert abs(one["loss"][1] - one["loss"][0]) > 1e-3  # it trained


def _pretrain(tmp_path, steps, processes, *options):
    """apps/pretrain.py as `processes` processes, each in an empty folder of its own, on one --output,
    with `options` added; returns what each printed and the paths it wrote."""
    corpus = tmp_path / "corpus.txt"
    if not corpus.exists():
        write_corpus(corpus)
    argvs = []
    for rank in range(processes):
        (tmp_path / f"cwd{rank}").mkdir(exist_ok=True)
        argvs.append(["app", tmp_path / f"cwd{rank}", tmp_path / f"stdout{rank}", tmp_path / f"audit{rank}",
                      "--corpus", corpus, "--run", "run", "--output", tmp_path / "out", "--preset", "bert_tiny",
                      "--vocab-size", "120", "--steps", str(steps), "--checkpoint-every", "1", "--batch-size", "4",
                      "--seq-len", "32", "--holdout-fraction", "0.3", "--objective", "mlm", "--distribution", "data",
                      *options])
    run_together(WORKER, argvs, _environments(processes))
    written = [[json.loads(line)[1] for line in (tmp_path / f"audit{rank}").read_text().splitlines()]
               for rank in range(processes)]
    return [(tmp_path / f"stdout{rank}").read_text() for rank in range(processes)], written


def test_pretrain_app_trains_as_two_torch_processes(tmp_path):
    printed, written = _pretrain(tmp_path, steps=2, processes=2)
    run = tmp_path / "out" / "run"
    assert "Saved" in printed[0] and "held-out after training" in printed[0]
    assert printed[1] == ""  # process 1 printed nothing ...
    assert [path for path in written[1] if path.startswith(str(tmp_path))] == []  # ... and wrote nothing
    assert any(path.startswith(str(run)) for path in written[0])  # (the audit sees process 0's writes)
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [".run.backup", "run"]  # kept: to train further
    assert [list((tmp_path / f"cwd{rank}").iterdir()) for rank in (0, 1)] == [[], []]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["distribution"] == {"distribution": "data", "mesh": None, "devices": 2}
    assert metrics["steps"] == 2 and (run / "backbone.keras").is_file()
    assert metrics["end"]["loss"] < metrics["start"]["loss"]

    # Raised: resumes from process 0's backup, each process now recomputing its blocks in the backward pass
    # (--remat is not a setting of the run: a resumed run may change it).
    printed, written = _pretrain(tmp_path, 3, 2, "--remat")
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["steps"] == 3 and metrics["distribution"]["devices"] == 2
    assert printed[1] == "" and [path for path in written[1] if path.startswith(str(tmp_path))] == []
    history = (run / "history.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in history[1:]] == ["0", "1", "2"]  # one epoch a step, none trained twice
