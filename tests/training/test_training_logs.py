import csv
import importlib.util

import numpy as np
import pytest

import kbert.training.training_logs as training_logs_module
from kbert.training import AtomicBackupAndRestore
from kbert.training.training_logs import HISTORY_FILE, TENSORBOARD_FOLDER, fine_tuning_logs, training_logs
from tests.conftest import Kill
from tests.training.conftest import dense_model

X, Y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0], [3.0]])


def history_rows(folder):
    with open(folder / HISTORY_FILE, newline="") as file:
        return list(csv.DictReader(file))


def test_history_csv_has_a_row_per_epoch_with_the_logged_columns(tmp_path):
    """SGD at 0 leaves the weights as they are: each epoch's loss is the starting model's MSE."""
    model = dense_model(0.0)
    kernel, bias = model.get_weights()
    expected_loss = float(np.mean((X @ kernel + bias - Y) ** 2))
    folder = tmp_path / "not" / "yet"  # made when training begins
    model.fit(X, Y, batch_size=2, epochs=3, validation_data=(X, Y), callbacks=training_logs(folder), verbose=0)
    rows = history_rows(folder)
    assert list(rows[0]) == ["epoch", "loss", "val_loss"]
    assert [int(row["epoch"]) for row in rows] == [0, 1, 2]
    np.testing.assert_allclose([float(row[key]) for row in rows for key in ("loss", "val_loss")],
                               [expected_loss] * 6, rtol=1e-5)
    assert (folder / TENSORBOARD_FOLDER).is_dir() == bool(importlib.util.find_spec("tensorboard"))


def test_a_resumed_fit_appends_to_the_history(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        dense_model(0.1).fit(X, Y, epochs=4, callbacks=[*training_logs(tmp_path), Kill(1)], verbose=0)
    dense_model(0.1).fit(X, Y, epochs=2, callbacks=training_logs(tmp_path), verbose=0)
    assert [row["epoch"] for row in history_rows(tmp_path)] == ["0", "1", "0", "1"]


def test_without_tensorboard_only_the_csv_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    dense_model(0.1).fit(X, Y, epochs=1, callbacks=training_logs(tmp_path), verbose=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [HISTORY_FILE]
    assert "pip install tensorboard" in capsys.readouterr().out


def test_processes_other_than_the_chief_log_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(training_logs_module, "is_chief", lambda: False)
    assert training_logs(tmp_path) == []


def test_fine_tuning_logs_leave_nothing_after_a_failure_before_the_first_backup(tmp_path):
    backup = AtomicBackupAndRestore(tmp_path / ".run.backup")
    with pytest.raises(KeyboardInterrupt):
        with fine_tuning_logs(backup) as logs:
            dense_model(0.1).fit(X, Y, epochs=3, callbacks=[*logs, Kill(0)], verbose=0)  # no backup yet
    assert list(tmp_path.iterdir()) == []


def test_fine_tuning_logs_leave_what_the_run_prepared_after_a_failure_before_the_first_backup(tmp_path):
    backup = AtomicBackupAndRestore(tmp_path / ".run.backup")
    backup.prepared_dir.mkdir(parents=True)
    (backup.prepared_dir / "teacher_outputs.npz").write_text("outputs")
    with pytest.raises(KeyboardInterrupt):
        with fine_tuning_logs(backup) as logs:
            dense_model(0.1).fit(X, Y, epochs=3, callbacks=[*logs, Kill(0)], verbose=0)  # no backup yet
    assert [path.name for path in (tmp_path / ".run.backup").iterdir()] == ["prepared"]
    assert (backup.prepared_dir / "teacher_outputs.npz").read_text() == "outputs"


def test_fine_tuning_logs_stay_with_the_backup_that_a_rerun_resumes(tmp_path):
    backup = AtomicBackupAndRestore(tmp_path / ".run.backup")
    with pytest.raises(KeyboardInterrupt):
        with fine_tuning_logs(backup) as logs:
            dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup, *logs, Kill(1)], verbose=0)
    assert backup.last_checkpoint() is not None
    assert [row["epoch"] for row in history_rows(tmp_path / ".run.backup")] == ["0", "1"]
