import contextlib
import importlib.util
import pathlib

import keras

from kbert.distribution import is_chief

HISTORY_FILE = "history.csv"
TENSORBOARD_FOLDER = "logs"
LOG_NAMES = (HISTORY_FILE, TENSORBOARD_FOLDER)


def training_logs(folder):
    """The callbacks that log a fit into `folder`: `history.csv` (a row per epoch) and TensorBoard's `logs/`.

    `history.csv` is appended to, so a resumed fit goes on where the killed one stopped
    (a resumed epoch may then have two rows: the last one counts). TensorBoard's callback
    needs the `tensorboard` package: without it only the CSV is written, and a line says so.
    (Keras's CSVLogger writes `val_` columns even without validation data: "NA" then.)
    Used by apps/pretrain.py (into its run folder) and, through `fine_tuning_logs`, by the
    fine-tuning recipes. In a job of several processes, process 0 logs and the others get no
    callbacks (`kbert.distribution.is_chief`).

    Example:
    >>> import tempfile, numpy as np
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.zeros((4, 2)), np.zeros((4, 1)), epochs=2, callbacks=training_logs(folder), verbose=0)
    >>> (folder / HISTORY_FILE).read_text().splitlines()[0], (folder / TENSORBOARD_FOLDER).is_dir()
    ('epoch,loss,val_loss', True)
    """
    if not is_chief():
        return []
    folder = pathlib.Path(folder)
    callbacks = [keras.callbacks.LambdaCallback(on_train_begin=lambda logs: folder.mkdir(parents=True, exist_ok=True)),
                 keras.callbacks.CSVLogger(folder / HISTORY_FILE, append=True)]
    if importlib.util.find_spec("tensorboard"):
        callbacks.append(keras.callbacks.TensorBoard(folder / TENSORBOARD_FOLDER))
    else:
        print("TensorBoard logs off: pip install tensorboard to get them.", flush=True)
    return callbacks


@contextlib.contextmanager
def fine_tuning_logs(backup):
    """Yields `training_logs` into the folder of `backup` (a `run_backup`): put them after it in `fit`'s callbacks.

    The logs live beside the backups, so a resumed fit appends to its own logs, and
    `write_run_folder(..., logs=backup.backup_dir)` moves them into the run folder. A fit that fails before its
    first backup leaves nothing behind but what its run prepared (`prepared_dir`); after it, the logs stay with the
    backup that the next run resumes.
    """
    folder = pathlib.Path(backup.backup_dir)
    try:
        yield training_logs(folder)
    except BaseException:
        if backup.last_checkpoint() is None:
            backup.discard_unbacked()
        raise
