"""apps/pretrain.py --distribution data as 2 JAX processes on localhost, 4 virtual CPU devices each
(KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID set by the test):
every process draws the same stream of global batches in its pipeline's child process and feeds its half of each;
process 0 alone prints and writes the run folder, whose held-out losses and backbone are those of the same command
run as one process on 8 virtual devices."""

import csv
import json

import keras
import numpy as np
import pytest

from tests.distribution.processes import run_jax_app_processes
from tests.tasks.test_pretrain_app import write_corpus

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX processes")

# 2 layers of width 8 over 32 positions, no dropout: the comparison with one process needs no dropout mask to match
CONFIG = {"num_layers": 2, "num_heads": 2, "hidden_dim": 8, "intermediate_dim": 12, "max_sequence_length": 32,
          "dropout": 0.0}


def _pretrain(tmp_path, name, processes, devices):
    """apps/pretrain.py (MLM, 2 steps of global batches of 8) as `processes` JAX processes of `devices` virtual devices
    each, each in an empty folder of its own, on one --output `name`; returns the run folder, the working folders,
    what each process printed, the paths it wrote and the rows of the batches it traced a training step on."""
    corpus, config = tmp_path / "corpus.txt", tmp_path / "config.json"
    if not corpus.exists():
        write_corpus(corpus)  # 12 documents of 8 lines
        config.write_text(json.dumps(CONFIG))
    workdirs, printed, traced = run_jax_app_processes(tmp_path, name, processes, devices, lambda process: [
        "pretrain", tmp_path / f"{name}_audit{process}", "--corpus", corpus, "--run", "run", "--output", tmp_path / name,
        "--config", config, "--vocab-size", "120", "--steps", "2", "--checkpoint-every", "1", "--batch-size", "8",
        "--seq-len", "32", "--lr", "1e-2", "--holdout-fraction", "0.3", "--objective", "mlm", "--distribution", "data"])
    written = [[json.loads(line)[1] for line in (tmp_path / f"{name}_audit{process}").read_text().splitlines()]
               for process in range(processes)]
    return tmp_path / name / "run", workdirs, printed, written, traced


def test_pretrain_app_trains_as_two_jax_processes(tmp_path):
    from kbert import BertBackbone

    one, _, (alone,), _, _ = _pretrain(tmp_path, "one", processes=1, devices=8)
    run, workdirs, printed, written, traced = _pretrain(tmp_path, "two", processes=2, devices=4)

    assert "Saved" in alone and "Saved" in printed[0] and "held-out after training" in printed[0]
    assert printed[1] == ""  # process 1 printed nothing ...
    assert [path for path in written[1] if path.startswith(str(tmp_path))] == []  # ... and wrote nothing
    assert any(path.startswith(str(run)) for path in written[0])  # (the audit sees process 0's writes)
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == [".run.backup", "run"]  # kept: to train further
    assert [list(folder.iterdir()) for folder in workdirs] == [[], []]
    # each process fed its 4 rows of every global batch of 8 (had each fed the whole batch: 16 rows a step)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}

    metrics = [json.loads((folder / "metrics.json").read_text()) for folder in (one, run)]
    assert [m["distribution"] for m in metrics] == [{"distribution": "data", "mesh": None, "devices": 8}] * 2
    assert metrics[0]["steps"] == metrics[1]["steps"] == 2
    assert metrics[1]["end"]["loss"] < metrics[1]["start"]["loss"]  # it trained
    # same batches, same steps: the held-out scores before, during and after training are the one process's
    for moment in ("start", "end"):
        for score, value in metrics[0][moment].items():
            np.testing.assert_allclose(metrics[1][moment][score], value, rtol=1e-5, err_msg=f"{moment} {score}")
    history = [list(csv.DictReader((folder / "history.csv").open())) for folder in (one, run)]
    assert len(history[0]) == len(history[1]) == 2  # 2 epochs of one step
    np.testing.assert_allclose([float(row["val_loss"]) for row in history[1]],
                               [float(row["val_loss"]) for row in history[0]], rtol=1e-5)

    single, job = (BertBackbone.from_preset(folder) for folder in (one, run))
    assert len(single.get_weights()) == len(job.get_weights()) > 10
    for expected, actual in zip(single.get_weights(), job.get_weights()):
        np.testing.assert_allclose(actual, expected, atol=1e-5)
