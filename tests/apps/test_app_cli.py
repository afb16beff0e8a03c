"""Apps that behave alike (issue 22): `--help` (with defaults) before TensorFlow loads, a bad argument
exits 2, `--json` gives JSON lines on stdout, TensorFlow's start-up lines only with --verbose, and a
fine-tuning run folder holds its logs and model card. apps/edge_predict.py's --json and --verbose run
on an export (tests/export/test_edge_predict.py), apps/demo.py's --json in tests/test_demo.py.
In-process on test_app_errors.py's tiny run folders, but for the checks that need a fresh process.
TensorFlow only: backend-independent.
"""

import hashlib
import importlib
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert.data.readers.tables import Layout
from kbert.recipes import MULTI_LABEL, NLI, SENTIMENT, SIMILARITY
from kbert_core.start_up import START_UP_LINE
from tests.apps.test_app_errors import PRETRAIN, call, train, workspace  # noqa: F401 (a fixture)
from tests.conftest import APPS as APPS_FOLDER, app_module
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

APPS = ["sentiment", "nli", "similarity", "multi_label", "ner", "qa", "embed", "export", "pretrain", "demo",
        "edge_predict", "serve", "fill_mask", "zero_shot"]
EDGE = "edge_predict"  # no option with a default
COMMANDS = {app: ["train", "evaluate", "predict"]
            for app in ("sentiment", "nli", "similarity", "multi_label", "ner", "qa")}
# Runs each app as `python apps/APP.py ARGS` does, in one fresh process: exit code, stdout, stderr,
# and whether TensorFlow or Keras got imported.
PROBE = """
import contextlib, io, json, runpy, sys
apps = sys.argv[1]
sys.path.insert(0, apps)
results = []
for app, args in json.loads(sys.argv[2]):
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [f"{app}.py", *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(f"{apps}/{app}.py", run_name="__main__")
        except SystemExit as exit:
            code = exit.code
    results.append([code, out.getvalue(), err.getvalue(), sorted({"tensorflow", "keras"} & set(sys.modules))])
print(json.dumps(results))
"""


def probe(runs):
    """[(exit code, stdout, stderr, heavy modules loaded so far)] of `runs` [(app, args)], in one fresh process."""
    result = subprocess.run([sys.executable, "-c", PROBE, str(APPS_FOLDER), json.dumps(runs)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_help_and_usage_errors_answer_without_tensorflow():
    runs = [(app, ["--help"]) for app in APPS]
    runs += [(app, [command, "--help"]) for app, commands in COMMANDS.items() for command in commands]
    runs += [(app, [*COMMANDS.get(app, [])[:1], "--no-such-option"]) for app in APPS]
    results = probe(runs)
    for (app, args), (code, out, err, loaded) in zip(runs, results):
        if "--help" in args:
            assert code == 0 and out.startswith("usage:"), (app, args)
            if args != ["--help"] or app not in COMMANDS:  # an app with commands takes them there
                assert "--json" in out and "--verbose" in out, (app, args)
                assert "(default: " in out or app == EDGE, (app, args)  # the defaults, by app_cli.HelpFormatter
        else:
            assert code == 2 and "usage:" in err and f"{app}.py" in err, (app, args, err)
        assert loaded == [], (app, args)  # neither TensorFlow nor Keras yet
    helps = dict(zip(map(tuple, [[app, *args] for app, args in runs]), results))
    train_help = helps[("sentiment", "train", "--help")][1]
    assert "(default: 3)" in train_help and "(default: all_minilm_l6_v2)" in train_help
    assert "(default: 0)" in train_help  # --seed: a default of 0 is shown too
    assert "(default: float32)" in helps[("embed", "--help")][1]  # an app without commands too


def test_the_command_lines_of_the_sentence_apps_match_their_tasks():
    command_lines = app_module("sentence_cli").COMMAND_LINES
    assert command_lines == {task.name: (task.num_texts, task.regression, task.multi_label)
                             for task in (SENTIMENT, NLI, SIMILARITY, MULTI_LABEL)}


def test_start_up_lines_only_with_verbose(tmp_path):
    """A run that loads TensorFlow prints its error line alone; with --verbose, TensorFlow's start-up lines first."""
    command = [sys.executable, str(APPS_FOLDER / "export.py"), "--model", str(tmp_path / "missing"),
               "--format", "saved_model", "--out", str(tmp_path / "x")]
    env = {key: value for key, value in os.environ.items() if not key.startswith("TF_CPP")}
    env["KERAS_BACKEND"] = "tensorflow"
    quiet = subprocess.run(command, capture_output=True, text=True, env=env)
    assert quiet.stderr.count("\n") == 1 and quiet.stderr.startswith("export.py: error: "), quiet.stderr
    assert quiet.returncode == 2 and str(tmp_path / "missing") in quiet.stderr, quiet.stderr
    verbose = subprocess.run([*command, "--verbose"], capture_output=True, text=True, env=env)
    assert verbose.returncode == 2 and verbose.stderr.count("\n") > 1  # what TensorFlow says when it loads
    assert all(START_UP_LINE.match(line) for line in verbose.stderr.splitlines()[:-1]), verbose.stderr
    assert not START_UP_LINE.match("/x.py:3: UserWarning: a real warning")  # other lines are written back


# Every option `task_cli.add_train_command` gives, and the recipe's keyword each one becomes.
TRAIN_OPTIONS = ["--epochs", "2", "--batch-size", "3", "--lr", "0.01", "--max-length", "16", "--mixed-precision",
                 "--gradient-accumulation", "2", "--remat", "--limit", "5", "--seed", "4", "--progress", "lines",
                 "--checkpoint-every", "1.5min", "--restart"]
TRAIN_KEYWORDS = dict(epochs=2, batch_size=3, learning_rate=0.01, max_length=16, mixed_precision=True,
                      gradient_accumulation=2, remat=True, limit=5, validation_limit=5, seed=4, verbose="lines",
                      backup_steps=None, backup_minutes=1.5, restart=True)
HELD_OUT = ["--valid", "v.txt", "--validation-fraction", "0.2", "--patience", "3"]
HELD_OUT_KEYWORDS = dict(valid="v.txt", validation_fraction=0.2, patience=3)
# (app, the recipe module, its other options, what they become, the positional arguments before data, init, out)
TRAIN_RUNS = [
    ("ner", "ner", [*HELD_OUT, "--format", "jsonl", "--tokens-column", "w", "--tags-column", "t", "--tag-names",
                    "O,B-X"],
     dict(HELD_OUT_KEYWORDS, layout=Layout("jsonl", None, {"tokens": "w", "tags": "t"}, ("O", "B-X"))), 0),
    ("qa", "qa", ["--doc-stride", "8", "--max-question-length", "6", "--validation-articles", "2", "--articles",
                  "9", "--validation-limit", "7", "--format", "parquet", "--question-column", "q",
                  "--allow-no-answer", "--no-answer-threshold", "-1.5"],
     dict(doc_stride=8, max_question_length=6, validation_articles=2, articles=9, validation_limit=7,
          layout=Layout("parquet", columns={"question": "q"}), allow_no_answer=True, no_answer_threshold=-1.5), 0),
    ("nli", "sentence", [*HELD_OUT, "--lora-rank", "2", "--labels", "a,b,c", "--skip-bad-rows", "--format", "csv",
                         "--delimiter", ";", "--pair-column", "h"],
     dict(HELD_OUT_KEYWORDS, lora_rank=2, labels=["a", "b", "c"], skip_bad_rows=True,
          layout=Layout("csv", ";", {"pair": "h"})), 1),
    ("sentiment", "sentence", [*HELD_OUT, "--doc-stride", "32", "--train-windows", "all", "--window-pooling", "max",
                               "--text-column", "review"],
     dict(HELD_OUT_KEYWORDS, lora_rank=None, labels=None, skip_bad_rows=False, doc_stride=32, train_windows="all",
          window_pooling="max", layout=Layout(columns={"text": "review"})), 1),
    ("embed", "embedding", [*HELD_OUT, "--objective", "ranking", "--score-range", "1,4", "--positive-label", "yes",
                            "--pooling", "cls", "--label-column", "s"],
     dict(HELD_OUT_KEYWORDS, objective="ranking", score_range=(1.0, 4.0), positive_label="yes", pooling="cls",
          layout=Layout(columns={"label": "s"})), 0),
]


@pytest.mark.parametrize("app, recipe, options, keywords, before", TRAIN_RUNS, ids=[run[0] for run in TRAIN_RUNS])
def test_train_gives_the_recipe_every_option(app, recipe, options, keywords, before, tmp_path, monkeypatch, capsys):
    """Each task app's `train`: the recipe gets every option (a stand-in recipe: no training), with
    --out claimed; --json prints its metrics, else "Wrote OUT"."""
    module = importlib.import_module(f"kbert.recipes.{recipe}")
    calls = []
    monkeypatch.setattr(module, "train", lambda *args, **kwargs: calls.append((args, kwargs)) or {"task": app})
    monkeypatch.chdir(tmp_path)
    argv = ["train", "--data", "d.txt", "--init", "i", "--out", "run", *TRAIN_OPTIONS, *options]
    code, out, err = call(app, [*argv, "--json"], monkeypatch, capsys)
    assert code == 0, err
    assert json_lines(out) == [{"task": app}]
    [(args, kwargs)] = calls
    assert args[before:] == ("d.txt", "i", "run") and kwargs == {**TRAIN_KEYWORDS, **keywords}
    if before:
        assert args[0].name == app  # the sentence problem
    code, out, err = call(app, argv, monkeypatch, capsys)
    assert (code, out) == (0, "Wrote run\n"), err


def json_lines(out):
    lines = out.splitlines()
    assert lines, "no output"
    return [json.loads(line) for line in lines]


# (app, argv, stdin, a key of every JSON object): each app's commands with --json
JSON_RUNS = [
    ("sentiment", ["predict", "--model", "sentiment_run", "--json", "a film", "dull"], b"", "label"),
    ("sentiment", ["evaluate", "--model", "sentiment_run", "--data", "sentiment.tsv", "--json", "--out", "e.json"],
     b"", "accuracy"),
    ("nli", ["predict", "--model", "nli_run", "--json"], b"a man\tnobody\n", "pair"),
    ("similarity", ["predict", "--model", "sts_run", "--json", "--premise", "a", "--hypothesis", "b"], b"", "score"),
    ("ner", ["predict", "--model", "ner_run", "--json"], b"a man plays\nsomeone sleeps\n", "entities"),
    ("ner", ["evaluate", "--model", "ner_run", "--data", "people.txt", "--json", "--out", "e.json"], b"", "f1"),
    ("qa", ["predict", "--model", "qa_run", "--json"], b'{"question": "who?", "context": "the man plays ."}\n',
     "question"),
    ("qa", ["evaluate", "--model", "qa_run", "--data", "squad.json", "--json", "--out", "e.json"], b"", "f1"),
    ("export", ["--model", "sentiment_run", "--format", "saved_model", "--out", "exported", "--json"], b"", "files"),
    ("pretrain", [*PRETRAIN, "--json"], b"", "steps"),
]


@pytest.mark.parametrize("app, argv, stdin, key", JSON_RUNS, ids=[f"{a}:{v[0]}" for a, v, *_ in JSON_RUNS])
def test_json_gives_json_lines_only(app, argv, stdin, key, workspace, tmp_path, monkeypatch, capsys):  # noqa: F811
    for path in workspace.iterdir():  # a copy of the workspace's files: these runs write
        (tmp_path / path.name).symlink_to(path)
    (tmp_path / "people.txt").write_text("a O\nman B-PER\nplays O\n\nann B-PER\n")  # the NER run's tags
    monkeypatch.chdir(tmp_path)
    code, out, err = call(app, argv, monkeypatch, capsys, stdin)
    assert code == 0, err
    results = json_lines(out)
    assert all(key in result for result in results), results
    if stdin:
        assert len(results) == stdin.count(b"\n")  # one answer a line


def test_embed_reads_stdin_and_saves_vectors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    texts = ["A man is playing a guitar.", "Someone strums an instrument.", "The market fell."]
    code, out, err = call("embed", ["--json", "--save", "vectors.npy"], monkeypatch, capsys,
                          "\n".join(texts).encode() + b"\n\n")
    assert code == 0, err
    results = json_lines(out)
    vectors = np.load(tmp_path / "vectors.npy")
    assert [r["text"] for r in results] == texts and vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, np.array([r["embedding"] for r in results]), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert results[0]["nearest"] == 1  # the guitar and the instrument
    assert results[0]["similarity"] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)


def test_a_fine_tuning_run_logs_validates_within_its_limit_and_has_a_model_card(  # noqa: F811 (fixtures)
        tiny_init, workspace, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    data = workspace / "sentiment.tsv"  # 16 rows: 8 held out by --validation-fraction 0.5, cut to 3 by --limit 3
    code, out, err = call("sentiment", ["train", "--data", str(data), "--out", "run", "--init", str(tiny_init),
                                        "--epochs", "2", "--batch-size", "4", "--validation-fraction", "0.5",
                                        "--limit", "3", "--progress", "0", "--json"], monkeypatch, capsys)
    assert code == 0, err
    [metrics] = json_lines(out)
    assert metrics == json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (metrics["train_examples"], metrics["validation_examples"], metrics["validation"]["examples"]) == (3, 3, 3)
    assert sum(map(sum, metrics["validation"]["confusion_matrix"])) == 3
    history = (tmp_path / "run" / "history.csv").read_text().splitlines()
    assert set(history[0].split(",")) == {"epoch", "accuracy", "loss", "val_accuracy", "val_loss"}
    assert len(history) == 3  # a row per epoch
    best = max(metrics["history"]["val_accuracy"])  # the restored epoch is the one reported
    assert metrics["validation"]["accuracy"] == pytest.approx(best)
    assert any((tmp_path / "run" / "logs").rglob("events.out.tfevents.*"))
    card = (tmp_path / "run" / "README.md").read_text()
    assert hashlib.sha256(data.read_bytes()).hexdigest() in card
    assert f"kbert {__import__('kbert').__version__}" in card and "| learning_rate | 3e-05 |" in card
    assert f"| validation.accuracy | {metrics['validation']['accuracy']:.6g} |" in card
    assert f"keras {keras.version()}" in card
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no backup, logs or lock left beside it
