"""One resume policy for every app that trains (issue 41): a run interrupted after its first backup is refused when a
setting changed, before any training, naming the setting (its flag) with the value it started with and the new one,
and its backup is kept; the same command with --restart starts it over, discarding the backup. (A run resumed with
the same settings: tests/recipes/test_sentence.py; apps/pretrain.py's runs: tests/tasks/test_pretrain_app.py.)
In-process, on test_app_errors.py's workspace; once (torch): backend-independent."""

import json

import pytest

from kbert.training import AtomicBackupAndRestore
from tests.apps.test_app_errors import TRAIN, call, snapshot, workspace  # noqa: F401 (a fixture)
from tests.conftest import ONCE_ON_TORCH
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

pytestmark = ONCE_ON_TORCH

COMMANDS = {**TRAIN, "embed": ["train", "--data", "sts.tsv", "--out", "new_run"]}
SHORT = ["--max-length", "10"]
# (app, its options, the setting changed on the rerun, what the refusal says of it)
CHANGES = [
    ("sentiment", SHORT, ["--lr", "0.0001"], "--lr 3e-05, not 0.0001"),
    ("ner", SHORT, ["--max-length", "8"], "--max-length 10, not 8"),
    ("qa", ["--max-length", "12", "--doc-stride", "3", "--max-question-length", "4"], ["--epochs", "3"],
     "--epochs 2, not 3"),
    ("embed", [*SHORT, "--validation-fraction", "0.3"], ["--pooling", "cls"], "--pooling 'mean', not 'cls'"),
    ("nli", SHORT, ["--text-column", "sentence1"], "--text-column None, not 'sentence1'"),  # the same rows, by name
]


def interrupt_after_the_first_backup(monkeypatch):
    """Backups are written, then the run is stopped as a kill would (KeyboardInterrupt after the first)."""
    save = AtomicBackupAndRestore._save_model

    def save_then_stop(self, logs, within_epoch=False):
        save(self, logs, within_epoch)
        raise KeyboardInterrupt

    monkeypatch.setattr(AtomicBackupAndRestore, "_save_model", save_then_stop)


@pytest.mark.parametrize("app, options, change, said", CHANGES, ids=[case[0] for case in CHANGES])
def test_a_changed_setting_is_refused_naming_it_and_restart_starts_over(  # noqa: F811 (fixtures)
        app, options, change, said, tiny_init, workspace, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    out = tmp_path / "run"
    command = [*(str(out) if arg == "new_run" else arg for arg in COMMANDS[app]), "--init", str(tiny_init),
               "--epochs", "2", "--batch-size", "4", *options, "--progress", "0", "--json"]
    with monkeypatch.context() as patch:
        interrupt_after_the_first_backup(patch)
        code, _, err = call(app, command, monkeypatch, capsys)
    assert code == 130, err  # interrupted: the backup stays beside the run folder, which is not written
    backup = tmp_path / ".run.backup"
    assert (backup / "training_metadata.json").is_file() and not out.exists()
    kept = snapshot(backup)

    changed = [*command, *change]
    code, stdout, err = call(app, changed, monkeypatch, capsys)
    assert code == 2 and stdout == "", err
    assert f"{backup}: this run started with {said}" in err and "--restart" in err, err
    assert snapshot(backup) == kept and not out.exists()  # refused before any training: the backup is kept

    code, stdout, err = call(app, [*changed, "--restart"], monkeypatch, capsys)
    assert code == 0, err
    assert f"Started over: deleted the backup in {backup}" in err  # with --json, messages go to stderr
    metrics = json.loads(stdout)
    assert metrics["resumed_at_step"] == 0 and metrics == json.loads((out / "metrics.json").read_text())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]  # the backup is gone with the run written
