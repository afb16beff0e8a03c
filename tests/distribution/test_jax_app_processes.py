"""The task apps train under `--distribution data` as 2 JAX processes on localhost, 4 virtual CPU devices each
(KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID set by the test):
each process feeds its half of every global batch and process 0 alone prints and writes the run folder; process 1
writes and prints nothing. The sentiment app's model predicts as the same app run in one process on 8 virtual
devices; NER and QA (one epoch each) write metrics that record the job and a model that loads."""

import keras
import pytest

from tests.distribution.processes import (assert_only_process_0_wrote, assert_runs_agree, run_jax_app_processes,
                                         sentiment_app_inputs)
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX processes")


def _train(tmp_path, name, app, arguments, processes, devices):
    """Runs `app`'s train with `arguments` and --distribution data in `processes` JAX processes of `devices` virtual
    devices each (a job when more than one), each in an empty folder of its own, process p writing --out NAME_p;
    returns the folders, what each printed, and the rows of the batches each traced a training step on."""
    return run_jax_app_processes(tmp_path, name, processes, devices, lambda process: [
        app, "train", *arguments, "--out", tmp_path / f"{name}_{process}", "--progress", "0", "--distribution", "data"])


def test_sentiment_app_trains_as_two_jax_processes(tmp_path):
    init, data = sentiment_app_inputs(tmp_path)
    arguments = ["--data", data, "--init", init, "--epochs", "2", "--batch-size", "5", "--lr", "1e-3", "--max-length",
                 "12", "--validation-fraction", "0.25", "--seed", "3"]

    _, (alone,), _ = _train(tmp_path, "one", "sentiment", arguments, processes=1, devices=8)
    workdirs, printed, traced = _train(tmp_path, "two", "sentiment", arguments, processes=2, devices=4)

    assert "Wrote" in alone
    assert_only_process_0_wrote(tmp_path, "two", printed, workdirs)
    # each process fed its 4 rows of every global batch of 8 (5 rows padded to the 8 devices): had each fed the whole
    # batch, the steps would have seen 16 rows (twice each row, the same mean gradient)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}

    assert_runs_agree(tmp_path / "one_0", tmp_path / "two_0", init, [{"distribution": "data", "mesh": None, "devices": 8}] * 2)


def _inputs(app, tmp_path):
    """(the app's data arguments, what its run folder's model is given to predict) for a quick run of `app`."""
    from tests.recipes.conftest import write_conll, write_squad

    if app == "ner":  # 16 sentences, one of 30 words (3 windows); 5 more to validate
        return (["--data", write_conll(tmp_path / "train.txt"), "--valid", write_conll(tmp_path / "valid.txt", 5, 1)],
                ["a man plays", "the film is fun"])
    # qa: 3 articles of 3 questions each, one article held out, contexts in windows of 12 tokens
    context = "the man plays a film . someone sleeps ."
    return (["--data", write_squad(tmp_path / "squad.json"), "--validation-articles", "1", "--doc-stride", "3"],
            (["who plays ?", "who sleeps ?"], [context, context]))


# NLI and similarity are left out (CI time): apps/nli.py and apps/similarity.py are the sentiment app's code
# (sentence_cli), tested above as 2 processes, on text pairs and with a regression head (Keras's loss and metric,
# reduced across processes as sentiment's are); NER's and QA's token batches are each their own.
@pytest.mark.parametrize("app", ["ner", "qa"])
def test_app_trains_as_two_jax_processes(app, tiny_init, tmp_path):
    """A user's view of a job of 2 processes: it ends, process 0 alone prints and writes the run folder, whose
    metrics record the 8 devices and one epoch of steps over global batches of 8 (5 rows padded), finite losses
    and a validation score in range, and whose model loads and predicts."""
    import json
    import math

    import numpy as np

    from kbert.data.readers.conll import read_conll
    from kbert.saving import load_run

    arguments, inputs = _inputs(app, tmp_path)
    workdirs, printed, traced = _train(tmp_path, "two", app, [*arguments, "--init", tiny_init, "--epochs", "1",
                                                              "--batch-size", "5", "--lr", "1e-3", "--max-length", "12"],
                                       processes=2, devices=4)

    assert_only_process_0_wrote(tmp_path, "two", printed, workdirs)
    assert traced[0] == traced[1] and set(traced[0]) == {"8"}  # each process fed 4 rows of every batch of 8
    run = tmp_path / "two_0"
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
