"""fine_tuning_run: what every fine-tuning recipe shares, from a compiled task model to its written run folder (the
recipes' own tests run it on each task: tests/recipes)."""

import json

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.tasks import BertClassifier, BertTextClassifierPreprocessor
from kbert.text import BertTokenizer
from kbert.saving import SettingsChangedError
from kbert.training.fine_tuning import FineTuning
from kbert.training.resume_policy import run_backup
from kbert.training.training_run import fine_tuning_run
from kbert.training.validation_scores import ValidationScores
from tests.conftest import TINY
from tests.tasks.conftest import VOCABULARY

TEXTS, LABELS = ["a good film", "a bad film", "fun", "dull", "great fun", "awful"], [1, 0, 1, 0, 1, 0]
# the backup, fit and folder logic is backend-independent (the recipes' tests run once too)
pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
SETTINGS = dict(task="toy", run={"data": "toy"}, title="toy", data={}, inputs=())


def _model():
    keras.utils.set_random_seed(0)
    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertClassifier(BertBackbone(**TINY), 2, preprocessor=preprocessor)
    model.compile(learning_rate=1e-3)
    return model


def test_without_a_scorer_the_last_epoch_is_scored_and_its_files_written(tmp_path):
    files = {"predictions.json": {"first": "positive"}}
    metrics, validation = fine_tuning_run(_model(), TEXTS, LABELS, tmp_path / "run",
                                          FineTuning(epochs=2, batch_size=4, verbose=0),
                                          final_scores=lambda model: ({"accuracy": 0.5}, files), **SETTINGS)
    assert validation == {"accuracy": 0.5} and metrics["validation"] == validation and metrics["best_epoch"] == 2
    assert metrics["task"] == "toy" and metrics["data"] == "toy" and metrics["steps"] == 4  # 2 epochs of 2 batches
    written = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert written["steps"] == 4 and json.loads((tmp_path / "run" / "predictions.json").read_text()) == files[
        "predictions.json"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]  # the backup is gone


def test_a_scorer_decides_the_epoch_kept_and_curves_choose_what_is_plotted(tmp_path):
    scores = iter([0.9, 0.5, 0.4])
    scorer = ValidationScores(lambda model: {"f1": next(scores)}, {"val_f1": "f1"}, "val_f1")
    stopping = keras.callbacks.EarlyStopping("val_f1", mode="max", patience=5, restore_best_weights=True)
    plotted = []
    metrics, validation = fine_tuning_run(_model(), TEXTS, LABELS, tmp_path / "run",
                                          FineTuning(epochs=3, batch_size=4, verbose=0), scorer=scorer,
                                          stopping=stopping, curves=lambda history: plotted.append(history) or history,
                                          **SETTINGS)
    assert validation == {"f1": 0.9} and metrics["best_epoch"] == 1
    assert np.allclose(plotted[0]["val_f1"], [0.9, 0.5, 0.4]) and (tmp_path / "run" / "curves.png").is_file()


def test_prepare_makes_the_fitted_inputs_once_the_resume_policy_lets_the_run_start(tmp_path):
    prepared = []

    def prepare(x, y, folder):  # as a teacher's outputs: what a refused rerun must not wait for, kept in folder
        prepared.append((len(x), folder))
        return x[:4], y[:4]

    out = tmp_path / "run"
    toy = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    toy.compile("sgd", "mse")
    toy.fit(np.zeros((2, 1)), np.zeros((2, 1)), callbacks=[run_backup(out, {"epochs": 9})], verbose=0)
    with pytest.raises(SettingsChangedError, match="epochs 9, not 1"):
        fine_tuning_run(_model(), TEXTS, LABELS, out, FineTuning(epochs=1, batch_size=2, verbose=0),
                        final_scores=lambda model: ({}, {}), prepare=prepare, **SETTINGS)
    assert prepared == []
    metrics, _ = fine_tuning_run(_model(), TEXTS, LABELS, out, FineTuning(epochs=1, batch_size=2, restart=True,
                                                                          verbose=0),
                                 final_scores=lambda model: ({}, {}), prepare=prepare, **SETTINGS)
    assert prepared == [(6, tmp_path / ".run.backup" / "prepared")] and metrics["steps"] == 2  # 4 texts, batches of 2
