"""Run folders on disk: written whole or never, leftovers of a killed write cleaned, the hidden names beside them."""

import os

import keras
import pytest

from kbert.saving import RunFolderError, atomic_output_folder, claim_run_folder, hidden_beside, remove_leftovers

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def test_interrupted_run_leaves_the_old_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.keras").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_output_folder(out) as folder:
            assert folder.name.startswith(".run.partial-") and folder.parent == tmp_path
            (folder / "model.keras").write_text("half")
            raise KeyboardInterrupt
    assert (out / "model.keras").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_finished_run_replaces_the_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "stale.txt").write_text("stale")
    with atomic_output_folder(out) as folder:
        (folder / "model.keras").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["model.keras"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_run_folder_is_an_ordinary_folder(tmp_path):
    with atomic_output_folder(tmp_path / "run") as folder:
        (folder / "metrics.json").write_text("{}")
    (tmp_path / "plain").mkdir()  # what the umask gives any new folder
    assert (tmp_path / "run").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777


def test_leftovers_of_a_killed_write_are_removed_and_the_old_folder_put_back(tmp_path):
    (tmp_path / ".run.partial-x1" / "model.keras").parent.mkdir()
    (tmp_path / ".run.old-x2" / "run").mkdir(parents=True)
    (tmp_path / ".run.old-x2" / "run" / "metrics.json").write_text("{}")  # killed between the two renames
    (tmp_path / ".other.partial-x3").mkdir()
    remove_leftovers(tmp_path / "run")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.partial-x3", "run"]
    assert (tmp_path / "run" / "metrics.json").is_file()
    remove_leftovers(tmp_path / "r[u]n")  # a name that, read as a glob pattern, would match "run"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.partial-x3", "run"]
    (tmp_path / ".run.partial-x4").mkdir()
    remove_leftovers(tmp_path / "r[u]n")
    assert (tmp_path / ".run.partial-x4").is_dir()


def test_hidden_names_beside_a_run_folder(tmp_path):
    assert hidden_beside(tmp_path / "run", "lock") == tmp_path / ".run.lock"
    assert hidden_beside("run", "backup").as_posix() == ".run.backup"


def test_a_read_and_a_training_run_keep_out_of_each_other(tmp_path):
    """Issue 43: evaluate took no lock, and could read a run folder a training run was replacing."""
    from kbert.saving import reading_run_folder

    run = tmp_path / "run"
    with reading_run_folder(run), reading_run_folder(run):  # readers share it
        with pytest.raises(RunFolderError, match="is in use by another run"):
            with claim_run_folder(run):
                pass
    with claim_run_folder(run):
        with pytest.raises(RunFolderError, match=rf"the run folder {run} is being written by a training run \(process "
                                                 rf"{os.getpid()}"):
            with reading_run_folder(run):
                pass
    assert list(tmp_path.iterdir()) == []  # the last one out removed the lock file
