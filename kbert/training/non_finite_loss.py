import keras
import numpy as np


class NonFiniteLossError(FloatingPointError):
    """Training stopped because its loss (or its weights) went NaN or infinite.

    The message names the step and the last good checkpoint, which is kept.
    """


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops `fit` at the first batch whose loss is NaN or infinite: raises `NonFiniteLossError`.

    Unlike `keras.callbacks.TerminateOnNaN`, which ends `fit` as if it had finished (and the
    NaN model is then saved), the error stops the program, naming the step and the last
    good checkpoint of `backup`, which is kept: put this callback before the backup in
    `fit`'s list (`AtomicBackupAndRestore` itself never saves a non-finite model).

    Args:
        backup: `kbert.training.AtomicBackupAndRestore` or None. The run's backups.

    Example:
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(keras.optimizers.SGD(1e30), "mse")
    >>> x = np.ones((4, 1))
    >>> model.fit(x, x, batch_size=1, callbacks=[StopOnNonFiniteLoss()], verbose=0)
    Traceback (most recent call last):
    ...
    kbert.training.non_finite_loss.NonFiniteLossError: The training loss is inf at step 2: training stopped ...
    """

    def __init__(self, backup=None):
        super().__init__()
        self.backup = backup
        self._first_step = 0

    def on_epoch_begin(self, epoch, logs=None):
        # The optimizer's step, read here: JAX syncs the variables once per epoch.
        self._first_step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(float(loss)):
            raise NonFiniteLossError(stop_message(f"The training loss is {float(loss)}",
                                                  self._first_step + batch + 1, self.backup))


def stop_message(problem, step, backup=None):
    """The message of `NonFiniteLossError`: the problem, the step, the last good checkpoint."""
    checkpoint = backup.last_checkpoint() if backup is not None else None
    kept = (f"the last good checkpoint, {checkpoint}, is kept" if checkpoint else
            "there is no checkpoint before it")
    return f"{problem} at step {step}: training stopped and {kept}. A lower learning rate may help."


def non_finite_weights(model):
    """The names of `model`'s weights that hold NaN or infinite values."""
    return [w.path for w in model.weights if not np.isfinite(keras.ops.convert_to_numpy(w)).all()]
