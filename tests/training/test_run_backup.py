import importlib

import numpy as np
import pytest

from kbert.training import run_backup
from tests.conftest import Kill
from tests.training.conftest import dense_model

run_backup_module = importlib.import_module("kbert.training.run_backup")  # the package's `run_backup` is the function
X, Y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0], [3.0]])


def killed_run(out, settings, kill_at=0):
    backup = run_backup(out, settings)
    with pytest.raises(KeyboardInterrupt):
        dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup, Kill(kill_at)], verbose=0)
    return backup


def test_backs_up_beside_the_run_folder_and_a_rerun_resumes(tmp_path):
    killed_run(tmp_path / "run", {"epochs": 3}, kill_at=1)
    assert [p.name for p in tmp_path.iterdir()] == [".run.backup"]
    backup = run_backup(tmp_path / "run", {"epochs": 3})
    assert backup.backup_dir == str(tmp_path / ".run.backup")
    history = dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup], verbose=0)
    assert history.epoch == [2]  # epochs 0 and 1 were backed up
    backup.delete()
    assert list(tmp_path.iterdir()) == []


def test_a_backup_of_other_settings_is_not_resumed(tmp_path, capsys):
    killed_run(tmp_path / "run", {"epochs": 3, "lr": 0.1})
    history = dense_model(0.1).fit(X, Y, epochs=3, callbacks=[run_backup(tmp_path / "run", {"epochs": 3, "lr": 0.2})],
                                   verbose=0)
    assert history.epoch == [0, 1, 2] and "other settings (lr)" in capsys.readouterr().out


def test_a_training_file_edited_in_place_is_not_resumed_on(tmp_path, capsys):
    """Issue 43: after kill -9 and an edit of the training file, fine-tuning resumed on the old weights."""
    data = tmp_path / "train.tsv"
    data.write_text("a\t1\n")
    backup = run_backup(tmp_path / "run", {"epochs": 3}, inputs=(data, None))
    with pytest.raises(KeyboardInterrupt):
        dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup, Kill(0)], verbose=0)
    assert run_backup(tmp_path / "run", {"epochs": 3}, inputs=(data,)).resume_position() == (1, 0)  # unchanged
    data.write_text("a\t0\n")
    backup = run_backup(tmp_path / "run", {"epochs": 3}, inputs=(data,))
    assert backup.resume_position() is None
    history = dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup], verbose=0)
    assert history.epoch == [0, 1, 2] and "other settings (input_sha256)" in capsys.readouterr().out


def test_logs_without_a_backup_and_leftovers_of_a_killed_write_are_removed(tmp_path):
    """A `.run.backup` holding no checkpoint (the logs of a run killed in its first epoch), a partial write
    of `run`, and a previous `run` that a kill between two renames left in `.run.old-*`."""
    (tmp_path / ".run.backup").mkdir()
    (tmp_path / ".run.backup" / "history.csv").write_text("epoch,loss\n")
    (tmp_path / ".run.partial-1").mkdir()
    (tmp_path / ".run.old-1" / "run").mkdir(parents=True)
    (tmp_path / ".run.old-1" / "run" / "metrics.json").write_text("{}")
    (tmp_path / ".other.partial-1").mkdir()  # another run's: kept
    run_backup(tmp_path / "run", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.partial-1", "run"]
    assert (tmp_path / "run" / "metrics.json").read_text() == "{}"


def test_only_the_chief_process_removes_anything(tmp_path, monkeypatch):
    (tmp_path / ".run.backup").mkdir()
    (tmp_path / ".run.partial-1").mkdir()
    monkeypatch.setattr(run_backup_module, "is_chief", lambda: False)
    run_backup(tmp_path / "run", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.backup", ".run.partial-1"]
