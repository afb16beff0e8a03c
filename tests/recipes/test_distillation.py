"""The distillation recipe: a student run folder of the teacher's task, which the sentence recipe evaluates and
predicts with; sentiment, NLI pairs, multi-label and similarity teachers; with unlabeled texts; a teacher that is
none refused; and a distillation killed (SIGKILL) within an epoch resumes there and ends as if never killed, on
every backend."""

import json
import os
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert.data import DataFormatError
from kbert.recipes import MULTI_LABEL, NLI, SENTIMENT, SIMILARITY, distillation, sentence
from kbert.saving import SettingsChangedError, load_run
from kbert.tasks import BertClassifier, BertTokenClassifier
from tests.conftest import ONCE_ON_TORCH, TESTS
from tests.recipes.test_sentence import write_multi_label_tsv
from tests.tasks.conftest import tiny_init, write_nli_tsv, write_sentiment_tsv  # noqa: F401 (a fixture)

UNLABELED = "a great film\n\nsomeone sleeps\nboring\nthe man plays very well\nfun\n"
# 36 sentences, 4 held out, and 4 unlabeled: batches of 6 (6 an epoch), 2 epochs, a backup every 4 steps and at each
# epoch's end: within epoch 1 after its batch 4 (step 10).
RUN = dict(epochs=2, batch_size=6, learning_rate=1e-2, patience=2, backup_steps=4, verbose=0, unlabeled_lines=4)
KILLED_AFTER_A_BACKUP_WITHIN_THE_SECOND_EPOCH = """
import json, os, signal, sys
from kbert.recipes import distillation
from kbert.training import AtomicBackupAndRestore

save = AtomicBackupAndRestore._save_model
def save_then_die(self, logs, within_epoch=False):
    save(self, logs, within_epoch)
    if within_epoch and self._current_epoch == 1:
        os.kill(os.getpid(), signal.SIGKILL)
AtomicBackupAndRestore._save_model = save_then_die
distillation.train(*sys.argv[1:5], **json.loads(sys.argv[5]))
"""


@pytest.fixture(scope="module")
def teacher(tiny_init, tmp_path_factory):  # noqa: F811 (the imported fixture)
    """A sentiment run folder trained on toy data, its training file and an unlabeled file."""
    folder = tmp_path_factory.mktemp("teacher")
    data = write_sentiment_tsv(folder / "train.tsv", rows=36)
    sentence.train(SENTIMENT, data, tiny_init, folder / "run", epochs=2, batch_size=8, learning_rate=1e-3,
                   max_length=16, verbose=0)
    (folder / "unsup.txt").write_text(UNLABELED)
    return folder / "run", data, folder / "unsup.txt"


@ONCE_ON_TORCH
def test_the_student_is_an_ordinary_run_folder_of_the_teachers_task(teacher, tmp_path, capsys):
    run, data, unlabeled = teacher
    metrics = distillation.train(run, data, "every-2", tmp_path / "student", temperature=3.0, alpha=0.7,
                                 unlabeled=unlabeled, epochs=2, batch_size=8, learning_rate=1e-3, verbose=0)
    printed = capsys.readouterr().out
    assert "The teacher labels the 32 training examples and 5 unlabeled text(s)." in printed
    assert (metrics["task"], metrics["init"], metrics["teacher"], metrics["temperature"], metrics["alpha"],
            metrics["unlabeled_texts"]) == ("sentiment", "every-2", str(run), 3.0, 0.7, 5)
    assert set(metrics["history"]) == {"loss", "val_loss", "val_accuracy"}  # no accuracy of rows as classes
    student, teacher_model = load_run(tmp_path / "student"), load_run(run)
    assert type(student) is BertClassifier and student.backbone.num_layers == 1
    assert not student.compiled  # saved without the loss, as every run's model: `fit` compiles the task's own
    assert student.label_names == teacher_model.label_names
    scores = sentence.evaluate(SENTIMENT, tmp_path / "student", data)
    assert scores["accuracy"] >= 0 and scores["examples"] == 36
    assert [answer["label"] in ("negative", "positive") for answer in sentence.predict(tmp_path / "student",
                                                                                       ["a good film"])] == [True]
    readme = (tmp_path / "student" / "README.md").read_text()
    assert f"sentiment distilled from {run} into every-2" in readme


@ONCE_ON_TORCH  # each kind's loss is checked on every backend in tests/tasks/test_distillation_loss.py
@pytest.mark.parametrize("problem", [NLI, MULTI_LABEL, SIMILARITY], ids=lambda problem: problem.name)
def test_pairs_multi_label_and_scores_distil_with_the_loss_that_applies(problem, tiny_init, tmp_path):  # noqa: F811
    writers = {"nli": lambda path: write_nli_tsv(path, rows=12), "multi_label": lambda path: write_multi_label_tsv(
        path, 16), "similarity": lambda path: write_nli_tsv(path, rows=12, regression=True)}
    data = writers[problem.name](tmp_path / "train.tsv")
    sentence.train(problem, data, tiny_init, tmp_path / "teacher", epochs=1, batch_size=4, validation_fraction=0.25,
                   verbose=0)
    unlabeled = tmp_path / "unsup.txt"
    unlabeled.write_text("a man plays\tsomeone plays\n" if problem.num_texts == 2 else "a fine film\n")
    metrics = distillation.train(tmp_path / "teacher", data, "bert_tiny", tmp_path / "student", unlabeled=unlabeled,
                                 epochs=1, batch_size=4, validation_fraction=0.25, verbose=0)
    kind = {"nli": "classes", "multi_label": "multi_label", "similarity": "regression"}[problem.name]
    assert metrics["task"] == problem.name and metrics["unlabeled_texts"] == 1
    assert metrics["temperature"] == (1.0 if kind == "regression" else 2.0)
    assert np.isfinite(metrics["history"]["loss"]).all()
    student = load_run(tmp_path / "student")
    assert (student.regression, student.multi_label) == (problem.regression, problem.multi_label)


@ONCE_ON_TORCH
def test_a_teacher_of_another_task_or_none_is_refused(teacher, tiny_init, tmp_path):  # noqa: F811
    run, data, _ = teacher
    ner = tmp_path / "ner"
    ner.mkdir()
    BertTokenClassifier.from_preset(tiny_init, label_names=["O", "B-PER"]).save(ner / "model.keras")
    (ner / "metrics.json").write_text('{"task": "ner"}')
    with pytest.raises(ValueError, match=f"The teacher {ner} is a ner run: distillation teaches from sentence "
                                         r"classifiers \(sentiment, nli, similarity, multi_label\)."):
        distillation.train(ner, data, "every-2", tmp_path / "out")
    with pytest.raises(ValueError, match=f"The teacher {tiny_init} is a pretraining run"):
        distillation.train(tiny_init, data, "every-2", tmp_path / "out")
    with pytest.raises(ValueError, match=f"The teacher {run} is a sentiment run, not a nli one"):
        distillation.train(run, data, "every-2", tmp_path / "out", problem=NLI)
    (ner / "metrics.json").unlink()
    with pytest.raises(ValueError, match="records no task"):
        distillation.train(ner, data, "every-2", tmp_path / "out")
    with pytest.raises(ValueError, match=f"The teacher {ner} holds a BertTokenClassifier, not the classifier of a "
                                         "sentiment run."):
        distillation.train(ner, data, "every-2", tmp_path / "out", problem=SENTIMENT)
    for class_weight in ({"positive": 2.0}, "balanced"):
        with pytest.raises(ValueError, match="A distillation takes no class_weight"):
            distillation.train(run, data, "every-2", tmp_path / "out", class_weight=class_weight)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))  # nor its backup folder


@ONCE_ON_TORCH
def test_unlabeled_texts_are_read_a_line_each(tmp_path):
    path = tmp_path / "u.txt"
    path.write_bytes(b"one\n\n two \nthree\r\nfour\n")
    assert distillation.read_unlabeled(path) == ["one", " two ", "three", "four"]
    assert distillation.read_unlabeled(path, limit=2) == ["one", " two "]
    path.write_text("a man\tplays\nnobody\tsleeps\n")
    assert distillation.read_unlabeled(path, num_texts=2) == (["a man", "nobody"], ["plays", "sleeps"])
    path.write_bytes(b"fine\nnot \xff fine\n")
    with pytest.raises(DataFormatError, match="u.txt:2: invalid UTF-8: byte 0xff at column 5"):
        distillation.read_unlabeled(path)
    path.write_text("\n\n")
    with pytest.raises(DataFormatError, match=r"u.txt: no texts \(a text a line\)."):
        distillation.read_unlabeled(path)


@pytest.fixture(scope="module")
def uninterrupted(teacher, tmp_path_factory):
    run, data, unlabeled = teacher
    out = tmp_path_factory.mktemp("uninterrupted") / "student"
    metrics = distillation.train(run, data, "every-1", out, unlabeled=unlabeled, **RUN)
    return metrics, load_run(out)


def test_a_killed_distillation_resumes_and_ends_as_if_never_killed(teacher, uninterrupted, tmp_path, capsys,
                                                                   monkeypatch):
    run, data, unlabeled = teacher
    expected, expected_model = uninterrupted
    out = tmp_path / "student"
    options = {**RUN, "unlabeled": str(unlabeled)}
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_A_BACKUP_WITHIN_THE_SECOND_EPOCH, str(run), str(data),
                             "every-1", str(out), json.dumps(options)], cwd=TESTS.parent, capture_output=True,
                            text=True, env={**os.environ, "KERAS_BACKEND": keras.config.backend()})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    backup = json.loads((tmp_path / ".student.backup" / "training_metadata.json").read_text())
    assert (backup["epoch"], backup["batch"], backup["step"]) == (1, 4, 10)
    kept = tmp_path / ".student.backup" / "prepared" / "teacher_outputs.npz"
    with np.load(kept) as outputs:
        assert outputs["outputs"].shape == (36, 2)  # 32 training sentences and the 4 unlabeled

    def teacher_runs(*args, **kwargs):  # its outputs take ~13 minutes at the benchmark's size: read back instead
        raise AssertionError("the teacher labelled the texts again on a resume")

    monkeypatch.setattr(BertClassifier, "prepared_logits", teacher_runs)
    metrics = distillation.train(run, data, "every-1", out, **options)
    printed = capsys.readouterr().out
    assert "Resuming from the backup in" in printed and f"unlabeled text(s): read from {kept}" in printed
    assert (metrics["resumed_at_step"], metrics["steps"]) == (10, 12) and expected["steps"] == 12
    for key in ("loss", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(metrics["history"][key], expected["history"][key], atol=1e-5, err_msg=key)
    for weight, expected_weight in zip(load_run(out).weights, expected_model.weights, strict=True):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(weight), keras.ops.convert_to_numpy(expected_weight),
                                   atol=1e-5, err_msg=weight.path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["student"]


@ONCE_ON_TORCH
def test_a_changed_unlabeled_file_refuses_the_resume_before_the_teacher_runs(teacher, tmp_path, monkeypatch):
    run, data, _ = teacher
    unlabeled = tmp_path / "unsup.txt"
    unlabeled.write_text(UNLABELED)
    out = tmp_path / "student"
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_A_BACKUP_WITHIN_THE_SECOND_EPOCH, str(run), str(data),
                             "every-1", str(out), json.dumps({**RUN, "unlabeled": str(unlabeled)})],
                            cwd=TESTS.parent, capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    unlabeled.write_text(UNLABELED.replace("boring", "dull"))

    def teacher_runs(*args, **kwargs):  # its outputs take minutes at SST-2's size: not for a run refused anyway
        raise AssertionError("the teacher labelled the texts of a run its resume policy refuses")

    monkeypatch.setattr(BertClassifier, "prepared_logits", teacher_runs)
    with pytest.raises(SettingsChangedError, match="input_sha256"):
        distillation.train(run, data, "every-1", out, **{**RUN, "unlabeled": str(unlabeled)})
