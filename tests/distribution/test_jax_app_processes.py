"""The apps train under `--distribution data` as 2 JAX processes on localhost, 4 virtual CPU devices each
(KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID set by the test):
each process feeds its half of every global batch and process 0 alone prints and writes the run folder; process 1
writes and prints nothing. The sentiment app's model predicts as the same app run in one process on 8 virtual
devices, and so do apps/pretrain.py's held-out losses and backbone; NER and QA (one epoch each) write metrics that
record the job and a model that loads.

The job's two processes run the four apps one after another (and the one process its two), started once: a job's
start-up (importing, joining) is paid once, not per app."""

import csv
import json
import math

import keras
import numpy as np
import pytest

from tests.distribution.processes import (assert_only_process_0_wrote, assert_runs_agree, run_jax_app_processes,
                                         sentiment_app_inputs)
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)
from tests.tasks.test_pretrain_app import write_corpus

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX processes")

# apps/pretrain.py's model: 2 layers of width 8 over 32 positions, no dropout: the comparison with one process needs no
# dropout mask to match
PRETRAIN_CONFIG = {"num_layers": 2, "num_heads": 2, "hidden_dim": 8, "intermediate_dim": 12,
                   "max_sequence_length": 32, "dropout": 0.0}


def _write_inputs(work, tiny_init):  # noqa: F811 (the imported fixture)
    """Writes every app's data into `work`; returns each app's arguments but --out (apps/pretrain.py's --output)."""
    from tests.recipes.conftest import write_conll, write_squad

    init, data = sentiment_app_inputs(work)
    write_conll(work / "train.txt"), write_conll(work / "valid.txt", 5, 1)
    write_squad(work / "squad.json")
    write_corpus(work / "corpus.txt")  # 12 documents of 8 lines
    (work / "config.json").write_text(json.dumps(PRETRAIN_CONFIG))
    token_apps = ["--init", tiny_init, "--epochs", "1", "--batch-size", "5", "--lr", "1e-3", "--max-length", "12"]
    return init, {
        "sentiment": ["--data", data, "--init", init, "--epochs", "2", "--batch-size", "5", "--lr", "1e-3",
                      "--max-length", "12", "--validation-fraction", "0.25", "--seed", "3"],
        "ner": [*_inputs("ner", work)[0], *token_apps],
        "qa": [*_inputs("qa", work)[0], *token_apps],
        "pretrain": ["--corpus", work / "corpus.txt", "--run", "run", "--config", work / "config.json", "--vocab-size",
                     "120", "--steps", "2", "--checkpoint-every", "1", "--batch-size", "8", "--seq-len", "32",
                     "--lr", "1e-2", "--holdout-fraction", "0.3", "--objective", "mlm"]}  # MLM, 2 steps of 8 rows


def _inputs(app, work):
    """(the app's data arguments, what its run folder's model is given to predict) for a quick run of `app`."""
    if app == "ner":  # 16 sentences, one of 30 words (3 windows); 5 more to validate
        return ["--data", work / "train.txt", "--valid", work / "valid.txt"], ["a man plays", "the film is fun"]
    # qa: 3 articles of 3 questions each, one article held out, contexts in windows of 12 tokens
    context = "the man plays a film . someone sleeps ."
    return (["--data", work / "squad.json", "--validation-articles", "1", "--doc-stride", "3"],
            (["who plays ?", "who sleeps ?"], [context, context]))


def _commands(work, name, arguments, apps):
    """What each process of the run `name` runs: app -> its command for process p, writing APP-NAME_p (process p's
    own path, which shows what each one writes; apps/pretrain.py: --output APP-NAME and an audit of its writes)."""
    def command(app):
        if app == "pretrain":
            return lambda p: ["pretrain", work / f"pretrain-{name}_audit{p}", *arguments["pretrain"],
                              "--output", work / f"pretrain-{name}", "--distribution", "data"]
        return lambda p: [app, "train", *arguments[app], "--out", work / f"{app}-{name}_{p}", "--progress", "0",
                          "--distribution", "data"]

    return {app: command(app) for app in apps}


@pytest.fixture(scope="module")
def runs(tiny_init, tmp_path_factory):  # noqa: F811 (the imported fixture)
    """The folder, sentiment's backbone folder, and what each app did as one process on 8 devices ("one":
    sentiment and pretrain) and as a job of 2 processes of 4 ("two": all four)."""
    work = tmp_path_factory.mktemp("jax_apps")
    init, arguments = _write_inputs(work, tiny_init)
    one = run_jax_app_processes(work, "one", 1, 8, _commands(work, "one", arguments, ["sentiment", "pretrain"]))
    two = run_jax_app_processes(work, "two", 2, 4, _commands(work, "two", arguments, arguments))
    return work, init, one, two


def test_sentiment_app_trains_as_two_jax_processes(runs):
    work, init, one, two = runs
    (alone,), (workdirs, printed, traced) = one["sentiment"][1], two["sentiment"]

    assert "Wrote" in alone
    assert_only_process_0_wrote(work, "sentiment-two", printed, workdirs)
    # each process fed its 4 rows of every global batch of 8 (5 rows padded to the 8 devices): had each fed the whole
    # batch, the steps would have seen 16 rows (twice each row, the same mean gradient)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}

    assert_runs_agree(work / "sentiment-one_0", work / "sentiment-two_0", init,
                      [{"distribution": "data", "mesh": None, "devices": 8}] * 2)


# NLI and similarity are left out (CI time): apps/nli.py and apps/similarity.py are the sentiment app's code
# (sentence_cli), tested above as 2 processes, on text pairs and with a regression head (Keras's loss and metric,
# reduced across processes as sentiment's are); NER's and QA's token batches are each their own.
@pytest.mark.parametrize("app", ["ner", "qa"])
def test_app_trains_as_two_jax_processes(app, runs):
    """A user's view of a job of 2 processes: it ends, process 0 alone prints and writes the run folder, whose
    metrics record the 8 devices and one epoch of steps over global batches of 8 (5 rows padded), finite losses
    and a validation score in range, and whose model loads and predicts."""
    from kbert.data.readers.conll import read_conll
    from kbert.saving import load_run

    work, _, _, two = runs
    workdirs, printed, traced = two[app]
    arguments, inputs = _inputs(app, work)

    assert_only_process_0_wrote(work, f"{app}-two", printed, workdirs)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}  # each process fed 4 rows of every batch of 8
    run = work / f"{app}-two_0"
    metrics = json.loads((run / "metrics.json").read_text())
    model = load_run(run)
    assert metrics["task"] == app and metrics["distribution"] == {"distribution": "data", "mesh": None, "devices": 8}
    if app == "ner":
        rows = len(model.preprocessor.prepare(read_conll(arguments[1]).words).inputs["token_ids"])
        assert rows > metrics["train_sentences"] == 16  # the long sentence's windows
    else:
        rows = metrics["train_windows"]
    assert metrics["steps"] == math.ceil(rows / 5) > 1
    assert all(np.isfinite(values).all() for values in metrics["history"].values())
    score, top = {"ner": ("f1", 1), "qa": ("f1", 100)}[app]
    assert 0 <= metrics["validation"][score] <= top

    predicted = model.predict(inputs, verbose=0)
    if app == "ner":
        assert [len(result["tags"]) for result in predicted] == [3, 4]
    else:
        assert [result["text"] in inputs[1][0] for result in predicted] == [True, True]


def test_pretrain_app_trains_as_two_jax_processes(runs):
    """Every process draws the same stream of global batches in its pipeline's child process and feeds its half of
    each; process 0's held-out losses and backbone are the one process's."""
    from kbert import BertBackbone

    work, _, one, two = runs
    (alone,), (workdirs, printed, traced) = one["pretrain"][1], two["pretrain"]
    written = [[json.loads(line)[1] for line in (work / f"pretrain-two_audit{process}").read_text().splitlines()]
               for process in range(2)]
    run = work / "pretrain-two" / "run"

    assert "Saved" in alone and "Saved" in printed[0] and "held-out after training" in printed[0]
    assert printed[1] == ""  # process 1 printed nothing ...
    assert [path for path in written[1] if path.startswith(str(work))] == []  # ... and wrote nothing
    assert any(path.startswith(str(run)) for path in written[0])  # (the audit sees process 0's writes)
    assert sorted(path.name for path in (work / "pretrain-two").iterdir()) == [".run.backup", "run"]  # to train on
    assert [list(folder.iterdir()) for folder in workdirs] == [[], []]
    # each process fed its 4 rows of every global batch of 8 (had each fed the whole batch: 16 rows a step)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}

    metrics = [json.loads((folder / "run" / "metrics.json").read_text())
               for folder in (work / "pretrain-one", work / "pretrain-two")]
    assert [m["distribution"] for m in metrics] == [{"distribution": "data", "mesh": None, "devices": 8}] * 2
    assert metrics[0]["steps"] == metrics[1]["steps"] == 2
    assert metrics[1]["end"]["loss"] < metrics[1]["start"]["loss"]  # it trained
    # same batches, same steps: the held-out scores before, during and after training are the one process's
    for moment in ("start", "end"):
        for score, value in metrics[0][moment].items():
            np.testing.assert_allclose(metrics[1][moment][score], value, rtol=1e-5, err_msg=f"{moment} {score}")
    history = [list(csv.DictReader((work / folder / "run" / "history.csv").open()))
               for folder in ("pretrain-one", "pretrain-two")]
    assert len(history[0]) == len(history[1]) == 2  # 2 epochs of one step
    np.testing.assert_allclose([float(row["val_loss"]) for row in history[1]],
                               [float(row["val_loss"]) for row in history[0]], rtol=1e-5)

    single, job = (BertBackbone.from_preset(work / folder / "run") for folder in ("pretrain-one", "pretrain-two"))
    assert len(single.get_weights()) == len(job.get_weights()) > 10
    for expected, actual in zip(single.get_weights(), job.get_weights()):
        np.testing.assert_allclose(actual, expected, atol=1e-5)
