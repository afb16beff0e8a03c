"""Backups that a killed fit resumes from, and runs whose loss goes non-finite: stopped, the last good backup kept."""

import json

import keras
import numpy as np
import pytest

from kbert.training import AtomicBackupAndRestore, NonFiniteLossError, StopOnNonFiniteLoss


def dense_model(learning_rate, seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(learning_rate), "mse")
    return model


class Kill(keras.callbacks.Callback):
    """Interrupts `fit` at the end of an epoch, after the backups before it in the list."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


def test_non_finite_loss_stops_the_run_and_keeps_the_last_good_backup(tmp_path):
    x, y = np.ones((1, 2)), np.ones((1, 1))  # SGD at 1e30: the weights reach 1e30, the loss inf at step 2
    backup = AtomicBackupAndRestore(tmp_path / "backup")
    with pytest.raises(NonFiniteLossError, match=r"The training loss is inf at step 2: training stopped and the "
                                                 r"last good checkpoint, .*backup \(epoch 1, step 1\), is kept"):
        dense_model(1e30).fit(x, y, epochs=3, callbacks=[StopOnNonFiniteLoss(backup), backup], verbose=0)
    metadata = json.loads((tmp_path / "backup" / "training_metadata.json").read_text())
    assert (metadata["epoch"], metadata["step"], metadata["history"]["loss"][0] < 1e3) == (1, 1, True)

    alone = AtomicBackupAndRestore(tmp_path / "alone")  # without the callback: the epoch's end refuses to back up
    with pytest.raises(NonFiniteLossError, match=r"epoch's training loss is inf at step 2.*alone \(epoch 1, step 1\)"):
        dense_model(1e30).fit(x, y, epochs=3, callbacks=[alone], verbose=0)
    restored = dense_model(1e30)
    restored.load_weights(tmp_path / "alone" / json.loads((tmp_path / "alone" / "training_metadata.json")
                                                          .read_text())["weights"])
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
