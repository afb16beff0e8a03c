"""Issue 55: damaged files that the apps read end in one line naming the file and what to do: a run folder's model
that is not the one training wrote (its SHA-256 differs from SHA256SUMS), and a training backup that cannot be read
(--restart). In-process, on test_app_errors.py's workspace; backend-independent: once, under torch."""

import json

from kbert.saving import record_checksums
from tests.apps.test_app_errors import call, workspace  # noqa: F401 (a fixture)
from tests.apps.test_resume_policy import interrupt_after_the_first_backup
from tests.conftest import ONCE_ON_TORCH
from tests.saving.test_checksums import flip
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

pytestmark = ONCE_ON_TORCH


def test_evaluate_refuses_a_run_folder_whose_model_changed(workspace, tmp_path, monkeypatch, capsys):  # noqa: F811
    run = tmp_path / "run"
    run.mkdir()
    for name in ("model.keras", "vocab.txt", "tokenizer_config.json", "metrics.json"):
        (run / name).write_bytes((workspace / "sentiment_run" / name).read_bytes())
    record_checksums(run)  # as training records them
    flip(run / "model.keras", (run / "model.keras").stat().st_size // 2)
    monkeypatch.chdir(workspace)
    code, stdout, err = call("sentiment", ["evaluate", "--model", str(run), "--data", "sentiment.tsv"],
                             monkeypatch, capsys)
    assert code == 2 and stdout == "", err
    assert err.startswith(f"sentiment.py: error: {run / 'model.keras'}: its SHA-256 is not the one recorded in "
                          f"{run / 'SHA256SUMS'}") and err.count("\n") == 1, err


def test_a_damaged_backup_is_named_with_restart(tiny_init, workspace, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.chdir(workspace)
    out = tmp_path / "run"
    command = ["train", "--data", "sentiment.tsv", "--out", str(out), "--init", str(tiny_init), "--epochs", "2",
               "--batch-size", "4", "--max-length", "10", "--progress", "0"]
    with monkeypatch.context() as patch:
        interrupt_after_the_first_backup(patch)
        code, _, err = call("sentiment", command, monkeypatch, capsys)
    assert code == 130, err
    backup = tmp_path / ".run.backup"
    weights = backup / json.loads((backup / "training_metadata.json").read_text())["weights"]
    weights.write_bytes(weights.read_bytes()[:2000])  # cut short

    code, _, err = call("sentiment", command, monkeypatch, capsys)
    assert code == 2, err
    line = err.splitlines()[-1]
    assert line.startswith(f"sentiment.py: error: {weights}: this backup cannot be read (") and line.endswith(
        "no intact backup is left to resume from: start the run over with --restart, which discards what it "
        "trained."), err
    code, _, err = call("sentiment", [*command, "--restart"], monkeypatch, capsys)
    assert code == 0, err
