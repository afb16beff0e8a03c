"""apps/distill.py end to end: a tiny teacher trained by apps/sentiment.py on the shipped sample, distilled into a
student that is killed (SIGKILL) mid-run and resumed by the same command, then evaluated by apps/sentiment.py,
exported to int8 TFLite by apps/export.py and run by apps/edge_predict.py; its --help before TensorFlow loads; and
each bad input refused with one line, before any step, writing nothing. TensorFlow only: backend-independent (the
loss and the resume on every backend: tests/tasks/test_distillation_loss.py, tests/recipes/test_distillation.py)."""

import io
import json
import os
import signal
import subprocess
import sys

import keras
import pytest

from kbert.paths import samples_dir
from kbert.saving import load_run
from tests.apps.test_app_cli import probe
from tests.apps.test_app_errors import call as call_task_app
from tests.apps.test_app_errors import cli_errors, workspace  # noqa: F401 (a fixture)
from tests.conftest import APPS, TESTS, app_module
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

distill_main = app_module("distill").main
SAMPLE = samples_dir() / "sentiment_sample.tsv"
KILLED_AFTER_THE_FIRST_BACKUP = """
import os, runpy, signal, sys
sys.path.insert(0, sys.argv[1])
from kbert.training import AtomicBackupAndRestore

save = AtomicBackupAndRestore._save_model
def save_then_die(self, logs, within_epoch=False):
    save(self, logs, within_epoch)
    os.kill(os.getpid(), signal.SIGKILL)
AtomicBackupAndRestore._save_model = save_then_die
sys.argv = ["distill.py", *sys.argv[2:]]
runpy.run_path(os.path.join(sys.path[0], "distill.py"), run_name="__main__")
"""


def call(argv, monkeypatch, capsys):
    """Runs apps/distill.py as its `__main__` does; returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["apps/distill.py"])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    try:
        cli_errors.run(distill_main, argv, prog="distill.py")
        code = 0
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def test_help_explains_before_tensorflow_loads():
    [(code, out, _, loaded), (bad_code, _, err, _)] = probe([("distill", ["--help"]), ("distill", ["--no-such"])])
    assert code == 0 and loaded == [] and out.startswith("usage:")
    for said in ("--teacher", "--student", "every-K", "(default: every-2)", "--temperature", "(default: 0.5)",
                 "--unlabeled", "--unlabeled-lines", "--checkpoint-every", "--restart", "--json",
                 "apps/sentiment.py evaluate --model OUT"):
        assert said in out, said
    assert "--init" not in out  # the student is --student
    assert bad_code == 2 and "distill.py: error: the following arguments are required: --teacher, --data, --out" in err


def test_a_teacher_distilled_killed_resumed_evaluated_exported_and_run_on_the_edge(tiny_init, tmp_path,  # noqa: F811
                                                                                  monkeypatch, capsys):
    teacher, student = tmp_path / "teacher", tmp_path / "student"
    code, _, err = call_task_app("sentiment", ["train", "--data", str(SAMPLE), "--init", str(tiny_init), "--out",
                                               str(teacher), "--epochs", "1", "--batch-size", "16", "--max-length",
                                               "12", "--progress", "0"], monkeypatch, capsys)
    assert code == 0, err
    (tmp_path / "unsup.txt").write_text("A gripping film.\nDull and far too long.\n\nFun.\n")
    command = ["--teacher", str(teacher), "--data", str(SAMPLE), "--student", "every-2", "--out", str(student),
               "--epochs", "2", "--batch-size", "16", "--max-length", "12", "--temperature", "3", "--alpha", "0.8",
               "--unlabeled", str(tmp_path / "unsup.txt"), "--unlabeled-lines", "2", "--checkpoint-every", "5",
               "--progress", "0", "--json"]
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_THE_FIRST_BACKUP, str(APPS), *command],
                            cwd=TESTS.parent, capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert (tmp_path / ".student.backup" / "training_metadata.json").is_file() and not student.exists()

    code, out, err = call(command, monkeypatch, capsys)
    assert code == 0, err
    metrics = json.loads(out)
    assert "Resuming from the backup in" in err and metrics["resumed_at_step"] == 5
    assert metrics["steps"] == 2 * 12  # 180 training sentences and 2 unlabeled, batches of 16, 2 epochs
    assert (metrics["task"], metrics["init"], metrics["temperature"], metrics["alpha"], metrics["unlabeled_texts"],
            metrics["teacher"]) == ("sentiment", "every-2", 3.0, 0.8, 2, str(teacher))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["student", "teacher", "unsup.txt"]
    assert load_run(student).backbone.num_layers == 1

    code, out, err = call_task_app("sentiment", ["evaluate", "--model", str(student), "--data", str(SAMPLE),
                                                 "--quiet", "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["examples"] == 200, err
    exported = tmp_path / "int8"
    export = subprocess.run([sys.executable, str(APPS / "export.py"), "--model", str(student), "--format", "tflite",
                             "--quantize", "dynamic-int8", "--out", str(exported)], capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert export.returncode == 0, export.stderr[-3000:]
    texts = ["A gripping film.", "Dull and far too long."]
    edge = subprocess.run([sys.executable, str(APPS / "edge_predict.py"), str(exported / "text.tflite"), *texts,
                           "--json"], capture_output=True, text=True)
    assert edge.returncode == 0, edge.stderr[-3000:]
    answers = [json.loads(line) for line in edge.stdout.splitlines()]
    keras_answers = load_run(student).answers(texts)
    for answer, expected in zip(answers, keras_answers, strict=True):
        assert answer["probability"] == pytest.approx(expected["probability"], abs=0.05)


def test_bad_inputs_are_refused_with_one_line_before_any_step(workspace, tmp_path, monkeypatch,  # noqa: F811
                                                             capsys):
    monkeypatch.chdir(workspace)
    (tmp_path / "wide.json").write_text('{"num_layers": 1, "vocabulary_size": 999}')
    out = str(tmp_path / "new")
    base = ["--teacher", "sentiment_run", "--data", "sentiment.tsv", "--out", out, "--progress", "0"]
    cases = [
        ([*base, "--temperature", "0"], "argument --temperature: expected a finite number above 0, got '0'"),
        ([*base, "--temperature", "-1"], "argument --temperature: expected a finite number above 0, got '-1'"),
        ([*base, "--alpha", "1.5"], "argument --alpha: expected a number from 0 to 1, got '1.5'"),
        ([*base, "--unlabeled-lines", "5"], "--unlabeled-lines counts the texts of --unlabeled: give --unlabeled"),
        ([*base[:1], "ner_run", *base[2:]], "The teacher ner_run is a ner run: distillation teaches from sentence "
                                            "classifiers (sentiment, nli, similarity, multi_label)."),
        ([*base, "--task", "nli"], "The teacher sentiment_run is a sentiment run, not a nli one"),
        ([*base[:1], "pretraining", *base[2:]], "The teacher pretraining is a pretraining run (a backbone)"),
        ([*base, "--student", str(tmp_path / "wide.json")],
         "The student's config has vocabulary_size 999, but it reads the texts with the teacher's tokenizer, of 50 "
         "tokens"),
        ([*base[:1], "sts_run", *base[2:3], "sts.tsv", *base[4:], "--temperature", "2"],
         "The teacher is a regressor, whose scores no temperature softens"),
        ([*base, "--student", "every-3"], "Keeping every k-th of 2 layers takes k from 1 to 2"),
        ([*base, "--unlabeled", "bad_utf8.txt"], "bad_utf8.txt:2: invalid UTF-8: byte 0xfe at column 9"),
    ]
    for argv, said in cases:
        code, stdout, err = call(argv, monkeypatch, capsys)
        lines = err.strip().splitlines()
        assert code == 2 and stdout == "" and said in err and lines[-1].startswith(("distill.py: error:", "usage:")), \
            (argv, err)
        assert len([line for line in lines if "error" in line]) == 1 and "Traceback" not in err, err
        assert not (tmp_path / "new").exists() and not (tmp_path / ".new.backup").exists(), argv
