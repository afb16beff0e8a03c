"""A fine-tuning killed (SIGKILL) part-way through an epoch, right after a backup, resumes there and ends
as the run never killed: the same weights and the same epoch losses, dropout's masks included, on every backend."""

import json
import os
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.recipes import SENTIMENT, sentence
from kbert.saving import BACKBONE_FILE, load_run
from tests.conftest import TESTS, TINY
from tests.tasks.conftest import VOCABULARY, write_sentiment_tsv

# The run: 36 sentences, 4 held out; batches of 6 (6 an epoch), 2 epochs, a backup every 4 steps and at each
# epoch's end: within epoch 0 after batch 4 (step 4), at its end (step 6), within epoch 1 after batch 4 (step 10).
RUN = dict(epochs=2, batch_size=6, learning_rate=1e-2, patience=2, backup_steps=4, verbose=0)

KILLED_AFTER_A_BACKUP_WITHIN_AN_EPOCH = """
import json, os, signal, sys
from kbert.recipes import SENTIMENT, sentence
from kbert.training import AtomicBackupAndRestore

save = AtomicBackupAndRestore._save_model
def save_then_die(self, logs, within_epoch=False):
    save(self, logs, within_epoch)
    if within_epoch and self._current_epoch == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)
AtomicBackupAndRestore._save_model = save_then_die
sentence.train(SENTIMENT, sys.argv[1], sys.argv[2], sys.argv[3], **json.loads(sys.argv[5]))
"""


@pytest.fixture(scope="module")
def dropout_init(tmp_path_factory):
    """A tiny backbone whose dropout (a third of the units) changes every step's result."""
    folder = tmp_path_factory.mktemp("dropout_init")
    BertBackbone(**TINY, dropout=0.3).save(folder / BACKBONE_FILE)
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY))
    return folder


@pytest.fixture(scope="module")
def uninterrupted(dropout_init, tmp_path_factory):
    work = tmp_path_factory.mktemp("uninterrupted")
    data = write_sentiment_tsv(work / "train.tsv", rows=36)
    metrics = sentence.train(SENTIMENT, data, dropout_init, work / "run", **RUN)
    return data, metrics, load_run(work / "run")


# Killed in the first epoch on TensorFlow alone (CI time): the second, resumed with the first epoch's state, on every backend.
@pytest.mark.parametrize("killed_in_epoch", [1] if keras.config.backend() != "tensorflow" else [0, 1])
def test_killed_within_an_epoch_the_run_resumes_there_and_ends_as_if_never_killed(
        dropout_init, uninterrupted, killed_in_epoch, tmp_path, capsys):
    data, expected, expected_model = uninterrupted
    out = tmp_path / "run"
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_A_BACKUP_WITHIN_AN_EPOCH, data, dropout_init, out,
                             str(killed_in_epoch), json.dumps(RUN)], cwd=TESTS.parent, capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": keras.config.backend()})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    backup = json.loads((tmp_path / ".run.backup" / "training_metadata.json").read_text())
    assert (backup["epoch"], backup["batch"], backup["step"]) == (killed_in_epoch, 4, 6 * killed_in_epoch + 4)

    metrics = sentence.train(SENTIMENT, data, dropout_init, out, **RUN)
    printed = capsys.readouterr().out
    assert f"Resuming from the backup in {tmp_path / '.run.backup'} (epoch {killed_in_epoch} after its batch 4, " \
           f"step {6 * killed_in_epoch + 4})." in printed
    assert printed.count("Resuming") == 1  # not again when the resumed epoch's own backup carries on
    assert (metrics["resumed_at_step"], metrics["steps"]) == (6 * killed_in_epoch + 4, 12)
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):  # the resumed epoch's mean loss and accuracy too
        np.testing.assert_allclose(metrics["history"][key], expected["history"][key], atol=1e-5, err_msg=key)
    model = load_run(out)
    for weight, expected_weight in zip(model.weights, expected_model.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(weight), keras.ops.convert_to_numpy(expected_weight),
                                   atol=1e-5, err_msg=weight.path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]  # the backups deleted


def test_the_uninterrupted_run_saw_every_sentence_once_an_epoch_in_another_order_each_epoch(uninterrupted):
    """What makes the comparison above mean something: the batches change between epochs and the run learns."""
    _, expected, _ = uninterrupted
    losses = expected["history"]["loss"]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert expected["steps"] == 12 and expected["resumed_at_step"] == 0
