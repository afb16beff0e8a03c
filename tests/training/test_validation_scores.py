import keras
import numpy as np
import pytest

from kbert.training import AtomicBackupAndRestore
from kbert.training.validation_scores import ValidationScores
from tests.conftest import Kill
from tests.training.conftest import dense_model

X, Y = np.ones((2, 2)), np.zeros((2, 1))


def scripted(values, key="f1"):
    """A `score` function that returns `{key: values[i], "epoch": i + 1}` on its i-th call, whatever the model."""
    calls = iter(enumerate(values, 1))

    def score(model):
        epoch, value = next(calls)
        return {key: value, "epoch": epoch, "by_type": {"PER": value / 2}}

    return score


@pytest.mark.parametrize("mode, values, best_epoch", [("max", [0.5, 0.75, 0.75, 0.25], 2),
                                                       ("min", [0.9, 0.4, 0.4, 0.6], 2),
                                                       ("max", [0.25, 0.25, 0.5, 0.75], 4)])
def test_logs_each_epoch_and_keeps_the_full_scores_of_the_first_best(mode, values, best_epoch, capsys):
    scores = ValidationScores(scripted(values), {"val_f1": "f1", "val_epoch": "epoch"}, "val_f1", mode)
    history = dense_model(0.1).fit(X, Y, epochs=4, callbacks=[scores], verbose=0)
    assert history.history["val_f1"] == values and history.history["val_epoch"] == [1.0, 2.0, 3.0, 4.0]
    best = values[best_epoch - 1]
    assert scores.best == {"f1": best, "epoch": best_epoch, "by_type": {"PER": best / 2}}
    assert f"epoch 1: val_f1 {values[0]:.4f}, val_epoch 1.0000" in capsys.readouterr().out


def test_early_stopping_after_it_reads_the_logged_score():
    """Patience 1: 0.75 at epoch 2 is the best, epoch 3's equal 0.75 is no improvement, so the fit stops there."""
    scores = ValidationScores(scripted([0.5, 0.75, 0.75, 0.9, 1.0]), {"val_f1": "f1"}, "val_f1")
    stopping = keras.callbacks.EarlyStopping("val_f1", patience=1, mode="max")
    history = dense_model(0.1).fit(X, Y, epochs=5, callbacks=[scores, stopping], verbose=0)
    assert history.epoch == [0, 1, 2] and scores.best["epoch"] == 2


def test_a_resumed_fit_gets_the_best_scores_back_from_the_backup(tmp_path):
    """Killed after epoch 2 (best: epoch 1's 0.75); the rerun's epochs 3 and 4 score less, so epoch 1 stays best."""
    first = ValidationScores(scripted([0.75, 0.5]), {"val_f1": "f1"}, "val_f1")
    backup = AtomicBackupAndRestore(tmp_path / "backup", callbacks=[first])
    with pytest.raises(KeyboardInterrupt):
        dense_model(0.1).fit(X, Y, epochs=4, callbacks=[first, backup, Kill(1)], verbose=0)
    resumed = ValidationScores(scripted([0.25, 0.5]), {"val_f1": "f1"}, "val_f1")
    backup = AtomicBackupAndRestore(tmp_path / "backup", callbacks=[resumed])
    history = dense_model(0.1).fit(X, Y, epochs=4, callbacks=[resumed, backup], verbose=0)
    assert history.epoch == [2, 3]
    assert resumed.best == {"f1": 0.75, "epoch": 1, "by_type": {"PER": 0.375}}
