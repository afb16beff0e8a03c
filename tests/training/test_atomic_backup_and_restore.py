"""Backups that a killed fit resumes from, and that never replace the last good one with a non-finite model."""

import keras
import numpy as np
import pytest

from kbert.training import AtomicBackupAndRestore, NonFiniteLossError
from tests.conftest import Kill
from tests.training.conftest import dense_model


def test_a_backup_refuses_a_non_finite_epoch_and_keeps_the_last_good_one(tmp_path):
    x, y = np.ones((1, 2)), np.ones((1, 1))  # SGD at 1e30: the weights reach 1e30, the loss inf at step 2
    alone = AtomicBackupAndRestore(tmp_path / "alone")  # without StopOnNonFiniteLoss: the epoch's end refuses
    with pytest.raises(NonFiniteLossError, match=r"epoch's training loss is inf at step 2.*alone \(epoch 1, step 1\)"):
        dense_model(1e30).fit(x, y, epochs=3, callbacks=[alone], verbose=0)
    assert alone.weights_file() == tmp_path / "alone" / "step-1.weights.h5"  # the last good one
    assert AtomicBackupAndRestore(tmp_path / "none").weights_file() is None
    restored = dense_model(1e30)
    restored.load_weights(alone.weights_file())
    assert all(np.isfinite(w).all() for w in restored.get_weights())


@pytest.mark.parametrize("patience, kill_at, resumed_epochs", [(10, 2, [3, 4]), (1, 1, [])])
def test_a_resumed_fit_goes_on_as_the_killed_one_would_have(tmp_path, patience, kill_at, resumed_epochs):
    """SGD at 5 diverges along every direction: the loss is best at epoch 0, before the kill. Early stopping's
    state (its best weights, or that it had stopped the run: patience 1) comes back with the backup."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 2))
    y = x @ [[1.0], [-2.0]]

    def fit(folder, kill_at=None):
        stopping = keras.callbacks.EarlyStopping("loss", patience=patience, restore_best_weights=True)
        backup = AtomicBackupAndRestore(tmp_path / folder, callbacks=[stopping])
        model = dense_model(5.0, seed=1)
        callbacks = [stopping, backup, *([Kill(kill_at)] if kill_at is not None else [])]
        return model, model.fit(x, y, batch_size=8, epochs=5, shuffle=False, callbacks=callbacks, verbose=0)

    with pytest.raises(KeyboardInterrupt):
        fit("backup", kill_at=kill_at)
    resumed, history = fit("backup")
    reference, uninterrupted = fit("reference")
    assert history.epoch == resumed_epochs and uninterrupted.epoch[-1] == kill_at + len(resumed_epochs)
    np.testing.assert_allclose(history.history["loss"], uninterrupted.history["loss"], rtol=1e-5)
    for weights, expected in zip(resumed.get_weights(), reference.get_weights()):  # epoch 0's
        np.testing.assert_allclose(weights, expected, rtol=1e-5)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB file system of its own (tmpfs), as root can mount; skips where it cannot."""
    import subprocess

    folder = tmp_path / "small_disk"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root): the full-disk case is not run")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


class FillDisk(keras.callbacks.Callback):
    """Fills `folder`'s disk, leaving `leave` bytes, at the end of epoch `epoch` (after the backup before it)."""

    def __init__(self, folder, epoch, leave):
        super().__init__()
        self.folder, self.epoch, self.leave = folder, epoch, leave

    def on_epoch_end(self, epoch, logs=None):
        import shutil

        if epoch == self.epoch:
            (self.folder / "filler").write_bytes(b"x" * (shutil.disk_usage(self.folder).free - self.leave))


def test_a_full_disk_ends_the_fit_with_one_error_and_keeps_the_last_backup(small_disk):
    """Issue 43: a full disk during a checkpoint crashed the process (h5py tracebacks, SIGSEGV) and left a torn file."""
    import errno

    x, y = np.ones((4, 2)), np.ones((4, 1))
    backup = AtomicBackupAndRestore(small_disk / "backup")
    with pytest.raises(OSError) as error:
        dense_model(0.1).fit(x, y, epochs=3, callbacks=[backup, FillDisk(small_disk, 0, leave=4096)], verbose=0)
    assert error.value.errno == errno.ENOSPC
    assert f"No space left for a backup in {small_disk / 'backup'}" in str(error.value)
    assert f"the last good one, {small_disk / 'backup'} (epoch 1, step 1), is kept" in str(error.value)
    torch_random_state = ["step-1.arrays.npz"] if keras.config.backend() == "torch" else []  # torch's generator
    assert sorted(p.name for p in (small_disk / "backup").iterdir()) == [*torch_random_state, "step-1.weights.h5",
                                                                         "training_metadata.json"]
    (small_disk / "filler").unlink()  # space freed: the same fit resumes from the kept backup
    history = dense_model(0.1).fit(x, y, epochs=3, callbacks=[AtomicBackupAndRestore(small_disk / "backup")],
                                   verbose=0)
    assert history.epoch == [1, 2]
