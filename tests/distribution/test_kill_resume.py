"""kill -9 resume under a distribution (8 virtual JAX devices): the sentiment app trained with
`--distribution data` is killed (SIGKILL) right after its first run backup, the same command resumes it
(on another mesh: `--distribution model --mesh 4x2`), and it ends as the same run never killed would have."""

import json
import os
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.conftest import TESTS
from tests.tasks.conftest import tiny_init, write_sentiment_tsv  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX processes")


def train(data, init, out, *distribution, kill=False):
    command = [sys.executable, str(TESTS / "distribution" / "sentiment_on_virtual_devices.py"), "train",
               "--data", data, "--init", init, "--out", out, "--epochs", "3", "--batch-size", "8", "--lr", "1e-3",
               "--patience", "3", "--progress", "0", *distribution]
    env = {**os.environ, "KILL_AFTER_BACKUP": "1" if kill else "0"}
    return subprocess.run(list(map(str, command)), env=env, cwd=TESTS.parent, capture_output=True, text=True)


@pytest.fixture(scope="module")
def runs(tiny_init, tmp_path_factory):  # noqa: F811 (the imported fixture)
    work = tmp_path_factory.mktemp("kill_resume")
    data = write_sentiment_tsv(work / "train.tsv", rows=24)  # 22 to train on: batches of 8, 8 and 6 (padded to 8)
    killed = train(data, tiny_init, work / "run", "--distribution", "data", kill=True)
    backup = sorted(path.name for path in (work / ".run.backup").iterdir()) + ["run"] * (work / "run").exists()
    resumed = train(data, tiny_init, work / "run", "--distribution", "model", "--mesh", "4x2")
    whole = train(data, tiny_init, work / "whole", "--distribution", "data")
    return work, killed, backup, resumed, whole


def test_the_killed_run_left_its_first_backup_and_no_run_folder(runs):
    work, killed, backup, _, _ = runs
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert "training_metadata.json" in backup and any(name.endswith(".weights.h5") for name in backup)
    assert "run" not in backup  # the run folder is written at the end only


def test_the_same_command_resumes_on_another_mesh_and_finishes_the_run(runs):
    """What the one-device kill test (tests/recipes/test_sentence.py) asserts, and every epoch as the
    uninterrupted run has it: the one before the kill from the backup, the later ones trained on the same
    batches with the same dropout masks (the backup holds their random state; without it the losses
    differed in the 4th digit)."""
    from kbert.saving import load_run

    work, _, _, resumed, whole = runs
    assert resumed.returncode == 0 and whole.returncode == 0, (resumed.stderr[-3000:], whole.stderr[-3000:])
    assert "Resuming from the backup in" in resumed.stdout and "Resuming" not in whole.stdout
    assert sorted(path.name for path in work.iterdir()) == ["run", "train.tsv", "whole"]  # the backups deleted
    metrics, expected = (json.loads((work / name / "metrics.json").read_text()) for name in ("run", "whole"))
    assert metrics["distribution"] == {"distribution": "model", "mesh": [4, 2], "devices": 8}
    assert expected["distribution"] == {"distribution": "data", "mesh": None, "devices": 8}
    steps_per_epoch = -(-metrics["train_examples"] // 8)
    assert (metrics["resumed_at_step"], metrics["steps"]) == (steps_per_epoch, 3 * steps_per_epoch)
    assert (expected["resumed_at_step"], expected["steps"]) == (0, 3 * steps_per_epoch)
    assert metrics["history"].keys() == expected["history"].keys()
    for key, values in metrics["history"].items():
        assert len(values) == 3, key
        np.testing.assert_allclose(values, expected["history"][key], rtol=1e-5, err_msg=key)
    model = load_run(work / "run")
    assert all(len(v.value.sharding.device_set) == 1 for v in model.weights)  # written sharded, read on one device
