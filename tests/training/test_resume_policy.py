import json

import numpy as np
import pytest

from kbert.saving import DamagedBackupError, RunFolderError, SettingsChangedError
from kbert.training import resume_policy, run_backup
from kbert.training.resume_policy import KeptRunFolder, ResumeRefusedError, backed_up_step
from tests.conftest import Kill
from tests.training.conftest import dense_model

X, Y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0], [3.0]])


def killed_run(out, settings, kill_at=0, **options):
    backup = run_backup(out, settings, **options)
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


def kept(steps, renamed=None):
    """A run folder kept to train further, as pretraining's: its steps may grow (`KeptRunFolder`)."""
    return KeptRunFolder("pretraining run", ("vocab.txt", "history.csv"), steps, may_change=("steps",),
                         renamed=renamed or {})


def test_a_kept_folder_records_its_settings_whose_steps_may_grow_but_not_below_those_trained(tmp_path):
    """Pretraining's steps: raised on a rerun, the run trains further from its backup; the settings are compared once,
    with those its settings.json records (issue 50: also with the backup's, in another layer)."""
    out = tmp_path / "run"
    killed_run(out, {"steps": 3, "lr": 0.1}, kept=kept(3))
    assert json.loads((out / "settings.json").read_text()) == {"steps": 3, "lr": 0.1}
    assert run_backup(out, {"steps": 6, "lr": 0.1}, kept=kept(6)).resume_position() == (1, 0)
    assert json.loads((out / "settings.json").read_text()) == {"steps": 6, "lr": 0.1}  # trains further
    with pytest.raises(SettingsChangedError, match=rf"^{out / 'settings.json'}: this run started with lr 0.1, not 0.2"):
        run_backup(out, {"steps": 6, "lr": 0.2}, kept=kept(6))
    with pytest.raises(ResumeRefusedError, match=rf"^{out} has trained 1 steps already: steps 0 cannot undo them; "
                                                 r"give steps 1 or more, or start the run over \(restart\)") as error:
        run_backup(out, {"steps": 0, "lr": 0.1}, kept=kept(0))
    assert "--steps 0 cannot undo them" in error.value.worded(lambda name: f"--{name}")  # an app's words
    assert json.loads((out / "settings.json").read_text()) == {"steps": 6, "lr": 0.1}  # refused: nothing written


def test_a_kept_run_started_under_a_former_setting_name_resumes(tmp_path):
    """--task became --objective: a run started before, its settings.json and its backup under the former name, resumes
    (the backup's own second comparison, without the renames, refused it)."""
    out = tmp_path / "run"
    killed_run(out, {"task": "mlm", "steps": 3}, kept=kept(3))
    renamed = kept(3, renamed={"task": "objective"})
    with pytest.raises(SettingsChangedError, match="started with objective 'mlm', not 'nsp'"):
        run_backup(out, {"objective": "nsp", "steps": 3}, kept=renamed)
    assert run_backup(out, {"objective": "mlm", "steps": 3}, kept=renamed).resume_position() == (1, 0)
    assert json.loads((out / "settings.json").read_text()) == {"objective": "mlm", "steps": 3}  # its names now


def test_restart_deletes_a_kept_folder_with_its_backup_and_nothing_else(tmp_path, capsys):
    out = tmp_path / "run"
    killed_run(out, {"steps": 3}, kept=kept(3))
    backup = run_backup(out, {"steps": 3, "lr": 0.5}, kept=kept(3), restart=True)
    assert capsys.readouterr().out == f"Started over: deleted {out} and the backup in {tmp_path / '.run.backup'}.\n"
    assert backup.resume_position() is None and json.loads((out / "settings.json").read_text())["lr"] == 0.5
    for name, holds in [("model", "model.keras"), ("notes", "notes.txt")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / holds).write_text("")
        with pytest.raises(ResumeRefusedError, match=rf"^{tmp_path / name} is not a pretraining run folder: not "
                                                     r"deleting it to start over \(restart\)"):
            run_backup(tmp_path / name, {"steps": 3}, kept=kept(3), restart=True)
        assert (tmp_path / name / holds).is_file()
    (tmp_path / "empty").mkdir()  # a kill before its settings.json was written
    run_backup(tmp_path / "empty", {"steps": 3}, kept=kept(3), restart=True)
    assert json.loads((tmp_path / "empty" / "settings.json").read_text()) == {"steps": 3}


def test_a_kept_folder_of_another_run_or_without_settings_is_refused_and_an_older_inner_backup_moved(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.keras").write_text("")
    with pytest.raises(RunFolderError, match=r"model holds a fine-tuned model \(model.keras\), not a pretraining run: "
                                             r"choose another run folder\."):
        run_backup(tmp_path / "model", {"steps": 3}, kept=kept(3))
    (tmp_path / "older").mkdir()
    (tmp_path / "older" / "vocab.txt").write_text("")
    with pytest.raises(ResumeRefusedError, match=r"older records no settings.json .* start it over \(restart\)"):
        run_backup(tmp_path / "older", {"steps": 3}, kept=kept(3))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model", "older"]  # refused: nothing written

    inner = tmp_path / "run" / "backup"  # an older kbert kept the backup inside the run folder
    inner.mkdir(parents=True)
    (inner / "training_metadata.json").write_text('{"step": 6, "epoch": 3}')
    (tmp_path / "run" / "settings.json").write_text('{"steps": 6}')
    assert run_backup(tmp_path / "run", {"steps": 6}, kept=kept(6)).resume_position() == (3, 0)
    assert [path.name for path in (tmp_path / "run").iterdir()] == ["settings.json"]
    assert backed_up_step(tmp_path / "run") == 6


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


def test_what_a_run_prepared_stays_without_a_backup_and_goes_when_it_starts_over(tmp_path, capsys):
    """A run killed in its first epoch, after it made its costly inputs (a teacher's outputs): its logs go, they stay
    for the rerun to read; starting over deletes them with the rest."""
    (tmp_path / ".run.backup" / "prepared").mkdir(parents=True)
    (tmp_path / ".run.backup" / "prepared" / "teacher_outputs.npz").write_text("outputs")
    (tmp_path / ".run.backup" / "history.csv").write_text("epoch,loss\n")
    (tmp_path / ".run.backup" / "logs").mkdir()
    backup = run_backup(tmp_path / "run", {})
    assert backup.prepared_dir == tmp_path / ".run.backup" / "prepared"
    assert [path.name for path in (tmp_path / ".run.backup").iterdir()] == ["prepared"]
    assert (backup.prepared_dir / "teacher_outputs.npz").read_text() == "outputs"
    run_backup(tmp_path / "run", {}, restart=True)
    assert list(tmp_path.iterdir()) == [] and "Started over: deleted the backup in" in capsys.readouterr().out


def test_only_the_chief_process_removes_anything(tmp_path, monkeypatch):
    (tmp_path / ".run.backup").mkdir()
    (tmp_path / ".run.partial-1").mkdir()
    monkeypatch.setattr(resume_policy, "chief_first", lambda work, read=lambda: None: read())  # another process
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
