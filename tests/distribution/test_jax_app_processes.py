"""The sentiment app trains under `--distribution data` as 2 JAX processes on localhost, 4 virtual CPU devices each
(KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID set by the test):
each process feeds its half of every global batch, process 0 writes the run folder, whose model predicts as the same
app run in one process on 8 virtual devices; process 1 writes and prints nothing."""

import os

import keras
import pytest

from tests.conftest import TESTS
from tests.distribution.processes import (assert_only_process_0_wrote, assert_runs_agree, free_port,
                                         run_together, sentiment_app_inputs)

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX processes")

WORKER = TESTS / "distribution" / "jax_app_process_worker.py"


def _train(tmp_path, name, init, data, processes, devices):
    """Runs the app's train with --distribution data in `processes` JAX processes of `devices` virtual devices each
    (a job when more than one), each in an empty folder of its own, process p writing --out NAME_p; returns the
    folders, what each printed, and the rows of the batches each traced a training step on."""
    envs, argvs, workdirs = [], [], []
    address = f"localhost:{free_port()}"
    for process in range(processes):
        workdirs.append(tmp_path / f"{name}_cwd{process}")
        workdirs[-1].mkdir()
        job = {"KERAS_DISTRIBUTION_JOB_ADDRESSES": address, "KERAS_DISTRIBUTION_NUM_PROCESSES": str(processes),
               "KERAS_DISTRIBUTION_PROCESS_ID": str(process)} if processes > 1 else {}
        env = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
        envs.append({**env, "OMP_NUM_THREADS": "1", **job})
        argvs.append([devices, tmp_path / f"{name}_shapes{process}", workdirs[-1], tmp_path / f"{name}_stdout{process}",
                      "train", "--data", data, "--init", init, "--out", tmp_path / f"{name}_{process}",
                      "--epochs", "2", "--batch-size", "5", "--lr", "1e-3", "--max-length", "12",
                      "--validation-fraction", "0.25", "--seed", "3", "--progress", "0", "--distribution", "data"])
    run_together(WORKER, argvs, envs)
    printed = [(tmp_path / f"{name}_stdout{process}").read_text() for process in range(processes)]
    traced = [(tmp_path / f"{name}_shapes{process}").read_text().split() for process in range(processes)]
    return workdirs, printed, traced


def test_sentiment_app_trains_as_two_jax_processes(tmp_path):
    init, data = sentiment_app_inputs(tmp_path)

    _, (alone,), _ = _train(tmp_path, "one", init, data, processes=1, devices=8)
    workdirs, printed, traced = _train(tmp_path, "two", init, data, processes=2, devices=4)

    assert "Wrote" in alone
    assert_only_process_0_wrote(tmp_path, "two", printed, workdirs)
    # each process fed its 4 rows of every global batch of 8 (5 rows padded to the 8 devices): had each fed the whole
    # batch, the steps would have seen 16 rows (twice each row, the same mean gradient)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}

    assert_runs_agree(tmp_path / "one_0", tmp_path / "two_0", init, [{"distribution": "data", "mesh": None, "devices": 8}] * 2)
