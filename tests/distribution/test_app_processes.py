"""The sentiment app trains under `--distribution data` as 2 torch processes (gloo on localhost, started as
torchrun would, with MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE): process 0 writes the run folder, whose
model predicts as the same app run in one process on the same data and seed; process 1 writes and prints
nothing, also with --remat. What the apps still refuse on torch exits 2 with one line, before any run folder exists."""

import json
import os

import keras
import pytest

from tests.conftest import TESTS, app_module
from tests.distribution.processes import (assert_only_process_0_wrote, assert_runs_agree, free_port,
                                         run_together, sentiment_app_inputs)
from tests.tasks.conftest import write_sentiment_tsv

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's test")

WORKER = TESTS / "distribution" / "app_process_worker.py"


def _train(tmp_path, name, init, data, ranks, options=()):
    """Runs the app's train in `len(ranks)` processes (a torch job when more than one): each in an empty
    folder of its own, process r writing --out NAME_r (the same command but for the path, which shows what
    each one writes); returns the folders and what each printed."""
    envs, argvs, workdirs = [], [], []
    port = free_port()
    for rank in ranks:
        workdirs.append(tmp_path / f"{name}_cwd{rank}")
        workdirs[-1].mkdir()
        job = {"MASTER_ADDR": "localhost", "MASTER_PORT": str(port), "RANK": str(rank),
               "WORLD_SIZE": str(len(ranks))} if len(ranks) > 1 else {}
        envs.append({**os.environ, "KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1", **job})
        argvs.append([workdirs[-1], tmp_path / f"{name}_stdout{rank}", "sentiment", "train", "--data", data,
                      "--init", init, "--out", tmp_path / f"{name}_{rank}", "--epochs", "2", "--batch-size", "5",
                      "--lr", "1e-3", "--max-length", "12", "--validation-fraction", "0.25", "--seed", "3",
                      "--progress", "0", *options])
    run_together(WORKER, argvs, envs)
    return workdirs, [(tmp_path / f"{name}_stdout{rank}").read_text() for rank in ranks]


def test_sentiment_app_trains_as_two_torch_processes(tmp_path):
    init, data = sentiment_app_inputs(tmp_path)

    _, (alone,) = _train(tmp_path, "one", init, data, ranks=[0])
    # the job also rematerializes its blocks (--remat): recomputing them in the backward pass changes no weight
    workdirs, printed = _train(tmp_path, "two", init, data, ranks=[0, 1], options=["--distribution", "data", "--remat"])

    assert "Wrote" in alone
    assert_only_process_0_wrote(tmp_path, "two", printed, workdirs)

    assert_runs_agree(tmp_path / "one_0", tmp_path / "two_0", init, [{"distribution": "none", "mesh": None, "devices": 1},
                                                                    {"distribution": "data", "mesh": None, "devices": 2}])
    assert json.loads((tmp_path / "two_0" / "metrics.json").read_text())["hyperparameters"]["remat"] is True


@pytest.mark.parametrize("app, options, message", [
    ("sentiment", ["--distribution", "data"], "Data parallelism on torch runs one process per device, started by "
                                              "torchrun (or with MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE set in "
                                              "each); MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE not set"),
    ("sentiment", ["--distribution", "model", "--mesh", "1x1"], "Model parallelism (keras.distribution.ModelParallel) "
                                                                "needs the JAX backend (KERAS_BACKEND=jax); this "
                                                                "process runs 'torch', where kbert offers data"),
    ("pretrain", ["--distribution", "data"], "Data parallelism on torch runs one process per device, started by "
                                             "torchrun (or with MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE set in "
                                             "each); MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE not set"),
])
def test_refused_on_torch(app, options, message, tmp_path, monkeypatch, capsys):
    from tests.tasks.test_pretrain_app import write_corpus

    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    cli_errors = app_module("cli_errors")
    if app == "sentiment":
        data = write_sentiment_tsv(tmp_path / "train.tsv", rows=8)
        main = app_module("sentence_cli").main
        argv = ["train", "--data", str(data), "--init", "bert_tiny", "--out", str(tmp_path / "run"), *options]
        run = lambda argv: main("sentiment", argv)  # noqa: E731
    else:
        write_corpus(tmp_path / "corpus.txt")
        run = app_module("pretrain").main
        argv = ["--corpus", str(tmp_path / "corpus.txt"), "--output", str(tmp_path), "--run", "run",
                "--preset", "bert_tiny", *options]
    with pytest.raises(SystemExit) as exit:
        cli_errors.run(run, argv, prog=f"{app}.py")
    assert exit.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert message in errors[-1] and len([line for line in errors if "Error" in line or message in line]) == 1
    assert not (tmp_path / "run").exists()
