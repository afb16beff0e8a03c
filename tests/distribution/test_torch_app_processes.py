"""Data parallelism on torch as 2 processes (gloo on localhost, started as torchrun would, with MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE), against one process on the same global batches: a bert_tiny classifier and a
`BertPretrainer` trained on each process's share end with the one process's weights; the sentiment app's process 0
writes the run folder, whose model predicts as the same app run in one process on the same data and seed, also with
--remat; apps/pretrain.py --distribution data trains, process 0 writes the run folder and resumes it; process 1 writes
and prints nothing. The job's processes are started once and run these one after another, as the one process runs its
two (tests/distribution/commands_worker.py). What the apps still refuse on torch exits 2 with one line, before any run
folder exists."""

import json
import os

import keras
import numpy as np
import pytest

from tests.conftest import app_module
from tests.distribution.processes import (app_command, app_outputs, assert_only_process_0_wrote, assert_runs_agree,
                                         free_port, run_commands, sentiment_app_inputs)
from tests.tasks.conftest import write_sentiment_tsv
from tests.tasks.test_pretrain_app import write_corpus

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's test")


def _environments(processes):
    port = free_port()
    job = lambda rank: {"MASTER_ADDR": "localhost", "MASTER_PORT": str(port), "RANK": str(rank),  # noqa: E731
                        "WORLD_SIZE": str(processes)} if processes > 1 else {}
    return [{**os.environ, "KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1", **job(rank)} for rank in range(processes)]


def _commands(work, name, init, data):
    """What each process of the run `name` ("one": a process alone, "two": a job of 2) runs, in order: command -> its
    worker's command for process p. The apps run each in an empty folder of their own (`app_command`), process p
    writing APP-NAME_p (the same command but for the path, which shows what each one writes)."""
    # the job also rematerializes the sentiment model's blocks (--remat): recomputing them changes no weight
    job = ["--distribution", "data", "--remat"] if name == "two" else []
    commands = {
        "pretrainer": lambda p: ["pretrain_process_worker.py", "library", work / f"pretrainer-{name}{p}.npz"],
        "sentiment": app_command(work, name, "sentiment", lambda p: [
            "sentiment", "train", "--data", data, "--init", init, "--epochs", "2", "--batch-size", "5", "--lr", "1e-3",
            "--max-length", "12", "--validation-fraction", "0.25", "--seed", "3", "--progress", "0",
            "--out", work / f"sentiment-{name}_{p}", *job])}
    if name == "one":
        return commands

    def pretrain(command, steps, *options):  # apps/pretrain.py, with an audit of what process p wrote
        return app_command(work, name, command, lambda p: [
            "pretrain", work / f"{command}-{name}_audit{p}", "--corpus", work / "corpus.txt", "--run", "run",
            "--output", work / "pretrain", "--preset", "bert_tiny", "--vocab-size", "120", "--steps", str(steps),
            "--checkpoint-every", "1", "--batch-size", "4", "--seq-len", "32", "--holdout-fraction", "0.3",
            "--objective", "mlm", "--distribution", "data", *options])

    # raised: the same command with 3 steps resumes from process 0's backup, each process now recomputing its blocks in
    # the backward pass (--remat is not a setting of the run: a resumed run may change it)
    return {"classifier": lambda p: ["data_parallel_worker.py", "torch", work / f"classifier{p}.npz"], **commands,
            "pretrain": pretrain("pretrain", 2), "raised": pretrain("raised", 3, "--remat")}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The folder where one process ran its commands and a job of 2 processes ran theirs."""
    work = tmp_path_factory.mktemp("torch_apps")
    init, data = sentiment_app_inputs(work)
    write_corpus(work / "corpus.txt")
    run_commands(work, "one", _environments(1), _commands(work, "one", init, data))
    run_commands(work, "two", _environments(2), _commands(work, "two", init, data))
    return work


def _written(work, command):
    """The paths each process of the job wrote while it ran `command`."""
    return [[json.loads(line)[1] for line in (work / f"{command}-two_audit{p}").read_text().splitlines()]
            for p in range(2)]


def _weights(results, prefix="weight"):
    return [results[f"{prefix}{i}"] for i in range(sum(key[len(prefix):].isdigit() for key in results
                                                        if key.startswith(prefix)))]


def test_classifier_processes_train_as_one(work):
    from tests.distribution.data_parallel_training import train

    expected, steps, moved = train(None)  # one process, all rows of each global batch
    assert steps == 10 and moved > 1e-3
    for rank in (0, 1):
        results = np.load(work / f"classifier{rank}.npz")
        assert (int(results["replicas"]), int(results["steps"])) == (2, 10)
        trained = _weights(results)
        assert len(trained) == len(expected)
        for reference, actual in zip(expected, trained):
            np.testing.assert_allclose(actual, reference, atol=2e-5)


def test_pretrainer_trains_on_shares_as_on_whole_batches(work):
    one = np.load(work / "pretrainer-one0.npz")
    assert len(_weights(one)) > 10
    for rank in (0, 1):
        two = np.load(work / f"pretrainer-two{rank}.npz")
        assert len(_weights(two)) == len(_weights(one))
        for expected, actual in zip(_weights(one), _weights(two)):
            np.testing.assert_allclose(actual, expected, atol=2e-5)
        # the validation (every process, the whole batch) scores the weights alike
        np.testing.assert_allclose(two["val_loss"], one["val_loss"], rtol=1e-5)
        assert "not sharded over torch processes" in str(two["refusal"])
    assert abs(one["loss"][1] - one["loss"][0]) > 1e-3  # it trained


def test_sentiment_app_trains_as_two_torch_processes(work):
    (_, (alone,)), (workdirs, printed) = (app_outputs(work, name, "sentiment", processes)
                                          for name, processes in (("one", 1), ("two", 2)))

    assert "Wrote" in alone
    assert_only_process_0_wrote(work, "sentiment-two", printed, workdirs)
    assert_runs_agree(work / "sentiment-one_0", work / "sentiment-two_0", work / "init",
                      [{"distribution": "none", "mesh": None, "devices": 1},
                       {"distribution": "data", "mesh": None, "devices": 2}])
    assert json.loads((work / "sentiment-two_0" / "metrics.json").read_text())["hyperparameters"]["remat"] is True


def test_pretrain_app_trains_as_two_torch_processes_and_resumes(work):
    run = work / "pretrain" / "run"
    (_, printed), written = app_outputs(work, "two", "pretrain", 2), _written(work, "pretrain")
    assert "Saved" in printed[0] and "held-out after training" in printed[0]
    assert printed[1] == ""  # process 1 printed nothing ...
    assert [path for path in written[1] if path.startswith(str(work))] == []  # ... and wrote nothing
    assert any(path.startswith(str(run)) for path in written[0])  # (the audit sees process 0's writes)

    (_, raised), written = app_outputs(work, "two", "raised", 2), _written(work, "raised")
    assert "Resuming after 2 batches" in raised[0]  # the first run trained its 2 steps
    assert raised[1] == "" and [path for path in written[1] if path.startswith(str(work))] == []
    assert sorted(path.name for path in (work / "pretrain").iterdir()) == [".run.backup", "run"]  # kept: to train on
    assert [list((work / f"{command}-two_cwd{rank}").iterdir()) for command in ("pretrain", "raised")
            for rank in (0, 1)] == [[]] * 4
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["distribution"] == {"distribution": "data", "mesh": None, "devices": 2}
    assert metrics["steps"] == 3 and (run / "backbone.keras").is_file()
    assert metrics["end"]["loss"] < metrics["start"]["loss"]
    history = (run / "history.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in history[1:]] == ["0", "1", "2"]  # one epoch a step, none trained twice


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
