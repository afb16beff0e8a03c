import importlib

import numpy as np
import pytest

from kbert.saving import DamagedBackupError, SettingsChangedError
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


def test_a_backup_of_other_settings_is_refused_naming_them_unless_restarted(tmp_path, capsys):
    """Issue 41: a backup of other settings was deleted silently (the run started afresh); now refused at once,
    naming each setting with the value the run started with and the new one, unless `restart`."""
    killed_run(tmp_path / "run", {"epochs": 3, "lr": 0.1, "seed": 0})
    with pytest.raises(SettingsChangedError, match=r"started with lr 0.1, not 0.2; seed 0, not 1\. Repeat") as error:
        run_backup(tmp_path / "run", {"epochs": 3, "lr": 0.2, "seed": 1})
    assert error.value.changes == [("lr", 0.1, 0.2), ("seed", 0, 1)]
    assert (tmp_path / ".run.backup" / "training_metadata.json").is_file()  # kept: the same settings resume it
    backup = run_backup(tmp_path / "run", {"epochs": 3, "lr": 0.2, "seed": 1}, restart=True)
    assert "deleted the backup" in capsys.readouterr().out and backup.resume_position() is None
    history = dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup], verbose=0)
    assert history.epoch == [0, 1, 2]
    assert run_backup(tmp_path / "run", {"epochs": 3, "lr": 0.2, "seed": 1}).resume_position() == (3, 0)


def test_a_setting_that_may_change_is_not_compared(tmp_path):
    """Pretraining's steps: raised on a rerun, the run trains further from its backup."""
    backup = run_backup(tmp_path / "run", {"steps": 3, "lr": 0.1}, may_change=["steps"])
    with pytest.raises(KeyboardInterrupt):
        dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup, Kill(0)], verbose=0)
    assert run_backup(tmp_path / "run", {"steps": 6, "lr": 0.1}, may_change=["steps"]).resume_position() == (1, 0)
    with pytest.raises(SettingsChangedError, match="lr 0.1, not 0.2"):
        run_backup(tmp_path / "run", {"steps": 6, "lr": 0.2}, may_change=["steps"])


def test_a_training_file_edited_in_place_is_refused(tmp_path):
    """Issue 43: after kill -9 and an edit of the training file, fine-tuning resumed on the old weights."""
    data = tmp_path / "train.tsv"
    data.write_text("a\t1\n")
    backup = run_backup(tmp_path / "run", {"epochs": 3}, inputs=(data, None))
    with pytest.raises(KeyboardInterrupt):
        dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup, Kill(0)], verbose=0)
    assert run_backup(tmp_path / "run", {"epochs": 3}, inputs=(data,)).resume_position() == (1, 0)  # unchanged
    data.write_text("a\t0\n")
    with pytest.raises(SettingsChangedError, match="started with input_sha256"):
        run_backup(tmp_path / "run", {"epochs": 3}, inputs=(data,))


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


def test_a_damaged_last_backup_is_named_with_restart_and_restart_starts_over(tmp_path):
    """Issue 55: a truncated backup ended in h5py's message, which named neither the file nor how to go on."""
    killed_run(tmp_path / "run", {"epochs": 3}, kill_at=1)
    weights = tmp_path / ".run.backup" / "step-2.weights.h5"
    weights.write_bytes(weights.read_bytes()[:1000])  # cut short
    backup = run_backup(tmp_path / "run", {"epochs": 3})
    with pytest.raises(DamagedBackupError, match=rf"^{weights}: this backup cannot be read \(.+\), and no intact "
                                                 r"backup is left to resume from: start the run over with "
                                                 r"restart=True"):
        dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup], verbose=0)
    backup = run_backup(tmp_path / "run", {"epochs": 3}, restart=True)
    assert dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup], verbose=0).epoch == [0, 1, 2]
    metadata = tmp_path / ".run.backup" / "training_metadata.json"
    metadata.write_text('{"epoch": 3, "st')
    with pytest.raises(DamagedBackupError, match=rf"^{metadata}: this backup cannot be read \(not a JSON file\)"):
        run_backup(tmp_path / "run", {"epochs": 3})


def test_a_backup_cut_short_beside_the_last_complete_one_is_skipped_saying_so(tmp_path, capsys):
    """A kill during a backup's write leaves its weights file, unrecorded, beside the last complete backup: the run
    resumes from that one, and says which file it skipped and why (it did so silently)."""
    killed_run(tmp_path / "run", {"epochs": 3}, kill_at=0)
    folder = tmp_path / ".run.backup"
    (folder / "step-2.weights.h5").write_bytes((folder / "step-1.weights.h5").read_bytes()[:1000])
    backup = run_backup(tmp_path / "run", {"epochs": 3})
    assert dense_model(0.1).fit(X, Y, epochs=3, callbacks=[backup], verbose=0).epoch == [1, 2]
    printed = capsys.readouterr().out
    assert f"Skipped the backup {folder / 'step-2.weights.h5'}: its write was cut short (a kill or a crash) " \
           "before training_metadata.json recorded it; resuming from the last complete one." in printed
    assert printed.index("Skipped") < printed.index("Resuming from the backup")
