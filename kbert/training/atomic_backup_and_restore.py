import errno
import json
import pathlib
import re
import shutil
import time
import zipfile

import keras
import numpy as np

from kbert.distribution import is_chief, writing_alone
from kbert.saving import DamagedBackupError, RunFolderError, read_json, write_json_atomic
from kbert.training.non_finite_loss import NonFiniteLossError, non_finite_weights, stop_message
from kbert.training.random_state import random_state, restore_random_state
from kbert.training.training_logs import LOG_NAMES

METADATA_FILE = "training_metadata.json"
# What a run made before its fit that costs time to make again (a teacher's outputs): kept in the backup's folder even
# before its first backup, so that a rerun of the run reads it; deleted with the backup.
PREPARED_FOLDER = "prepared"
# The state a resumed fit needs of Keras's early stopping (`on_train_begin` resets it).
_EARLY_STOPPING_STATE = ("wait", "best", "best_epoch", "stopped_epoch", "best_weights")
# What reading a damaged backup file raises: h5py (OSError, KeyError), numpy's .npz reader, Keras's weight loading.
UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` whose backups survive a kill at any moment.

    Keras writes the backup in place, so a kill during the write (even `kill -9`) leaves a
    half-written file that the next run fails to load. Here each backup is written under
    new names (`step-N.weights.h5`, and `step-N.arrays.npz` for the callbacks' arrays), then
    `training_metadata.json`, which names them, is replaced by a rename (atomic on one file
    system): it always names a complete backup, and a newer file it does not name (a write a kill cut short) is
    passed over with a printed line. A backup whose files cannot be read back (damaged since) raises
    `kbert.saving.DamagedBackupError`, naming the file: start over (`run_backup`'s `restart`). A backup
    holds the weights and the optimizer state (the learning-rate schedule resumes at the same step), the random state
    dropout draws from (`kbert.training.random_state`: a resumed run draws the same masks), the epoch logs
    so far (restored into `fit`'s `History`) and the state of `callbacks` (early stopping's
    best score, patience count and best weights), so that a resumed `fit` goes on as the
    killed one would have, and a run that early stopping had ended ends. A backup is made
    at the end of every epoch and, with `every_steps` or `every_minutes`, within epochs too:
    such a backup also holds the epoch's batches done and its running metrics (the mean
    loss and accuracy so far), and `resume_position` tells where it resumes; `kbert.training.resumable_fit`
    resumes there, on the batches the uninterrupted run would have trained on.

    A backup never replaces the last good one with a model whose loss or weights are NaN or
    infinite: it raises `kbert.training.NonFiniteLossError` instead. A backup records `settings`,
    what the run started with (`started_with`): `kbert.training.resume_policy` refuses to resume a run
    with other settings, before any training.

    In a job of several processes (`kbert.distribution.is_chief`), every process restores
    the backup, and process 0 alone writes and deletes it: the others must see its folder
    (one host, or a shared file system) to resume with it.

    Args:
        backup_dir: str or path. A folder used by this run only.
        steps_per_epoch: int or None. The `steps_per_epoch` given to `fit`: the epoch to
            resume at is then the restored step count over it; None: the backup's epoch.
        settings: dict of JSON values or None. What the run was started with, recorded in each backup.
        callbacks: list of callbacks whose state the backups hold: `keras.callbacks.EarlyStopping`,
            or any with a `backed_up` tuple of attribute names (JSON values or numpy arrays).
            Put the backup after them in `fit`'s list.
        every_steps: int or None. Also back up within an epoch every this many steps.
        every_minutes: float or None. Also back up within an epoch once this many minutes
            have passed since the last backup (or the start).

    Example:
    >>> import tempfile
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = AtomicBackupAndRestore(tempfile.mkdtemp())
    >>> x, y = np.zeros((4, 2)), np.zeros((4, 1))
    >>> _ = model.fit(x, y, batch_size=2, epochs=3, callbacks=[backup], verbose=0)
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])  # as a new process would
    >>> model.compile("sgd", "mse")
    >>> history = model.fit(x, y, batch_size=2, epochs=5, callbacks=[backup], verbose=0)
    Resuming from the backup in ... (epoch 3, step 6).
    >>> history.epoch, len(history.history["loss"])
    ([3, 4], 5)
    """

    def __init__(self, backup_dir, steps_per_epoch=None, settings=None, callbacks=(), every_steps=None,
                 every_minutes=None):
        super().__init__(str(backup_dir), save_freq="epoch", delete_checkpoint=False)
        self.steps_per_epoch = steps_per_epoch
        self.settings = None if settings is None else json.loads(json.dumps(settings))
        self.callbacks = list(callbacks)
        self.every_steps, self.every_minutes = every_steps, every_minutes
        self.resumed_step = 0  # the step a resumed fit started at
        self._batch_in_epoch = 0  # batches of the current epoch done
        self._resuming_epoch = None  # (batch, metric values) of a backup made within the epoch a fit resumes
        self._unbuilt_metrics = None  # (index, values): saved metric state to add once the first step built them
        self._resuming_random_state = None  # dropout's random state, set before the first batch the fit resumes
        self._since_backup = None  # (steps, time.monotonic()) since the last backup, or the fit's start

    def resume_position(self):
        """(epoch, batch) where a fit resumes from the last backup: epoch `epoch` (0 is the
        first) from its batch `batch` (0: at its start); None without a backup to resume.

        Example:
        >>> import tempfile
        >>> AtomicBackupAndRestore(tempfile.mkdtemp()).resume_position() is None
        True
        """
        metadata = self._metadata()
        if metadata is None:
            return None
        return metadata["epoch"], metadata.get("batch", 0)

    def started_with(self):
        """The settings the run of the last backup started with (None without a backup, or one that records none).

        Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> write_json_atomic(pathlib.Path(folder) / METADATA_FILE, {"epoch": 1, "step": 2, "settings": {"lr": 0.1}})
        >>> AtomicBackupAndRestore(folder).started_with()
        {'lr': 0.1}
        """
        metadata = self._metadata()
        return metadata and metadata.get("settings")

    def last_checkpoint(self):
        """The last backup, described ("folder (epoch E, step S)"), or None."""
        metadata = self._metadata()
        return metadata and f"{self.backup_dir} ({_position(metadata)})"

    def weights_file(self):
        """The last backup's weights file (`step-N.weights.h5`), or None when there is no backup."""
        metadata = self._metadata()
        return metadata and self._weights_file(metadata)

    def _weights_file(self, metadata):
        return pathlib.Path(self.backup_dir) / metadata.get("weights", "latest.weights.h5")  # (older backups)

    @property
    def prepared_dir(self):
        """The folder of what the run made before its fit, to resume with (`PREPARED_FOLDER`): a rerun of the run finds
        it there, even one killed before its first backup; `delete` and starting over delete it."""
        return pathlib.Path(self.backup_dir) / PREPARED_FOLDER

    def delete(self):
        """Deletes the backups (once the run's results are saved); process 0's job in a job of several."""
        if is_chief():
            shutil.rmtree(self.backup_dir, ignore_errors=True)

    def discard_unbacked(self):
        """Deletes what a run that made no backup left in the backup's folder (its logs), but `prepared_dir`; the
        folder too when nothing else is left. Process 0's job in a job of several.

        Example:
        >>> import tempfile
        >>> backup = AtomicBackupAndRestore(pathlib.Path(tempfile.mkdtemp()) / "backup")
        >>> (backup.prepared_dir / "x.npz").parent.mkdir(parents=True)
        >>> (pathlib.Path(backup.backup_dir) / "history.csv").write_text("epoch")
        5
        >>> backup.discard_unbacked()
        >>> [path.name for path in pathlib.Path(backup.backup_dir).iterdir()]
        ['prepared']
        """
        folder = pathlib.Path(self.backup_dir)
        if not is_chief() or not folder.is_dir():
            return
        for path in folder.iterdir():
            if path.is_dir() and path != self.prepared_dir:
                shutil.rmtree(path)
            elif not path.is_dir():
                path.unlink()
        if not any(folder.iterdir()):
            folder.rmdir()

    def _metadata(self):
        path = pathlib.Path(self._training_metadata_path)
        try:
            return read_json(path, missing=None)
        except RunFolderError:
            raise DamagedBackupError(path, "not a JSON file") from None

    def _say_skipped(self, metadata):
        """Prints a line for each backup newer than the last recorded one: a write a kill cut short, passed over."""
        for path in sorted(pathlib.Path(self.backup_dir).glob("step-*.weights.h5")):
            step = re.fullmatch(r"step-(\d+)\.weights\.h5", path.name)
            if step and int(step[1]) > metadata["step"]:
                print(f"Skipped the backup {path}: its write was cut short (a kill or a crash) before "
                      f"{METADATA_FILE} recorded it; resuming from the last complete one.", flush=True)

    def _load_model(self):
        metadata = self._metadata()
        if metadata is None:
            return
        if self.model.optimizer is not None and not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)
        # A model already at the backup's step: the fit after the one that finished a resumed epoch. Its weights are
        # the backup's, but its learning-rate plan is this fit's own (`BertAdamW.plan_fit`): loaded back all the same.
        continuing = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == metadata["step"] > 0
        if not continuing:
            self._say_skipped(metadata)
        weights = self._weights_file(metadata)
        try:
            self.model.load_weights(weights)
        except UNREADABLE as error:
            raise DamagedBackupError(weights, _first_line(error)) from None
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        epoch = step // self.steps_per_epoch if self.steps_per_epoch else metadata["epoch"]
        arrays = {}
        if metadata.get("arrays"):
            path = pathlib.Path(self.backup_dir) / metadata["arrays"]
            try:
                with np.load(path, allow_pickle=False) as saved:
                    arrays = dict(saved)
            except UNREADABLE as error:
                raise DamagedBackupError(path, _first_line(error)) from None
        for callback, state in zip(self.callbacks, metadata.get("callbacks", [])):
            for name, value in state.items():
                setattr(callback, name, _decode(value, arrays))
        history = getattr(self.model, "history", None)
        if isinstance(history, keras.callbacks.History):
            history.history.update({key: list(values) for key, values in metadata.get("history", {}).items()})
        if metadata.get("batch"):
            self._resuming_epoch = (metadata["batch"], _decode(metadata["metrics"], arrays))
        if "random_state" in metadata:
            # Set where the run never killed stood after this backup. Keras makes the data iterator of an epoch
            # (on torch a DataLoader, which draws its seed from the global generator) at each epoch's start
            # without `steps_per_epoch`, once for the fit with it; the resumed fit makes one before its first
            # batch. So: before that draw after an epoch's end without steps_per_epoch, else after it.
            state = _decode(metadata["random_state"], arrays)
            if metadata.get("batch") or self.steps_per_epoch:
                self._resuming_random_state = state
            else:
                restore_random_state(self.model, state)
        self.model._initial_epoch = self.params["epochs"] if metadata.get("stopped") else epoch
        if not continuing:
            self.resumed_step = step
            print(f"Resuming from the backup in {self.backup_dir} ({_position(metadata)}).")

    def on_train_begin(self, logs=None):
        self._since_backup = (0, time.monotonic())
        super().on_train_begin(logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch, self._batch_in_epoch = epoch, 0
        if self._resuming_epoch is not None:  # the epoch the backup was made in: its batches done, its metrics
            self._batch_in_epoch, values = self._resuming_epoch
            self._resuming_epoch = None
            variables = self.model.metrics_variables
            for variable, value in zip(variables, values):
                variable.assign(value)
            # TensorFlow (without a distribution strategy) builds the compiled metrics (accuracy) in the first step:
            # their saved state is added to what that step counted (Keras's metrics sum their batches).
            self._unbuilt_metrics = (len(variables), values[len(variables):])

    def on_train_batch_begin(self, batch, logs=None):
        if self._resuming_random_state is not None:
            restore_random_state(self.model, self._resuming_random_state)
            self._resuming_random_state = None

    def on_train_batch_end(self, batch, logs=None):
        if self._unbuilt_metrics is not None:
            built, values = self._unbuilt_metrics
            self._unbuilt_metrics = None
            for variable, value in zip(self.model.metrics_variables[built:], values):
                variable.assign(keras.ops.convert_to_numpy(variable) + value)
        self._batch_in_epoch += 1
        steps, since = self._since_backup
        self._since_backup = steps + 1, since
        last_of_epoch = batch + 1 >= (self.params.get("steps") or float("inf"))  # the epoch's backup comes next
        due = ((self.every_steps and steps + 1 >= self.every_steps)
               or (self.every_minutes and time.monotonic() - since >= 60 * self.every_minutes))
        if due and not last_of_epoch:
            if hasattr(self.model, "jax_state_sync"):  # JAX keeps the state out of the variables within an epoch
                self.model.jax_state_sync()
            self._save_model(logs or {}, within_epoch=True)

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch, self._batch_in_epoch = epoch + 1, 0
        self._save_model(logs or {})

    def on_train_end(self, logs=None):
        self.model._initial_epoch = None  # Keras keeps it for the model's next fit otherwise

    def _save_model(self, logs, within_epoch=False):
        """Backs up the run: at an epoch's end, or `within_epoch` after its batch `_batch_in_epoch`."""
        self._since_backup = (0, time.monotonic())
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        loss = logs.get("loss")
        if loss is not None and not np.isfinite(float(loss)):
            raise NonFiniteLossError(stop_message(f"The epoch's training loss is {float(loss)}", step, self))
        bad = non_finite_weights(self.model)
        if bad:
            raise NonFiniteLossError(stop_message(f"The weights {bad[:3]} are not finite", step, self))
        if not is_chief():
            return  # process 0 writes the backup of the weights every process holds
        folder = pathlib.Path(self.backup_dir)
        folder.mkdir(parents=True, exist_ok=True)
        history = {key: list(values) for key, values in getattr(self.model.history, "history", {}).items()}
        if not within_epoch:
            for key, value in logs.items():  # this epoch's logs: `History` comes after the backup
                history.setdefault(key, []).append(float(value))
        arrays = []
        metadata = {"epoch": self._current_epoch, "step": step, "weights": f"step-{step}.weights.h5",
                    "stopped": bool(self.model.stop_training), "history": history,
                    "callbacks": [_encode({name: getattr(callback, name) for name in _state_names(callback)},
                                          arrays) for callback in self.callbacks],
                    "random_state": _encode(random_state(self.model), arrays),
                    "settings": self.settings}
        if within_epoch:
            metadata["batch"] = self._batch_in_epoch
            metadata["metrics"] = _encode([keras.ops.convert_to_numpy(v) for v in self.model.metrics_variables],
                                          arrays)
        if arrays:
            metadata["arrays"] = f"step-{step}.arrays.npz"
        self._check_space(folder, arrays)
        try:
            with writing_alone():
                self.model.save_weights(folder / metadata["weights"], overwrite=True)
            if arrays:
                np.savez(folder / metadata["arrays"], *arrays)
            write_json_atomic(self._training_metadata_path, metadata)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
            for name in (metadata["weights"], metadata.get("arrays")):
                if name:
                    (folder / name).unlink(missing_ok=True)
            raise self._no_space(folder) from None
        for path in folder.iterdir():  # earlier backups, and a write a kill cut short (the logs and prepared stay)
            if path.name not in (METADATA_FILE, metadata["weights"], metadata.get("arrays"), *LOG_NAMES,
                                 PREPARED_FOLDER):
                path.unlink()


    def _check_space(self, folder, arrays):
        """Raises the `_no_space` error before writing when the folder's disk cannot hold another backup
        beside the last one: h5py, cut short by a full disk, left a torn file and could crash the process."""
        last = self.weights_file()
        needed = (last.stat().st_size if last is not None and last.is_file() else
                  sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize
                      for v in [*self.model.weights, *getattr(self.model.optimizer, "variables", [])]))
        needed += sum(array.nbytes for array in arrays) + (1 << 20)
        if shutil.disk_usage(folder).free < needed:
            raise self._no_space(folder, needed)

    def _no_space(self, folder, needed=None):
        """The error of a disk too full for a backup: an OSError (ENOSPC) naming the folder and the last good
        backup, which is kept: free space and run the same command again to resume from it."""
        kept = self.last_checkpoint()
        size = f" (a backup needs about {needed / 1e6:,.0f} MB)" if needed else ""
        return OSError(errno.ENOSPC, f"No space left for a backup in {folder}{size}; "
                       + (f"the last good one, {kept}, is kept: free space and run the same command again to resume "
                          "from it" if kept else "there is no backup yet: free space and start again"))


def _first_line(error):
    """The first line of `error`'s message (its type's name without one), at most 200 characters.

    Example:
    >>> _first_line(OSError("Unable to open file (truncated file: eof = 96)\\nmore"))
    'Unable to open file (truncated file: eof = 96)'
    """
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def _position(metadata):
    """Where a backup stands, for people: "epoch 2, step 40", or within an epoch "epoch 2 after its batch 7, step 47"
    (epochs counted from 0: "epoch 2" is the third, or the start of it).

    Example:
    >>> _position({"epoch": 2, "step": 40}), _position({"epoch": 2, "batch": 7, "step": 47})
    ('epoch 2, step 40', 'epoch 2 after its batch 7, step 47')
    """
    within = f" after its batch {metadata['batch']}" if metadata.get("batch") else ""
    return f"epoch {metadata['epoch']}{within}, step {metadata['step']}"


def _state_names(callback):
    if isinstance(callback, keras.callbacks.EarlyStopping):
        return _EARLY_STOPPING_STATE
    return callback.backed_up


def _encode(value, arrays):
    """`value` as JSON values, its numpy arrays appended to `arrays` and replaced by {"array": index}."""
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if isinstance(value, (list, tuple)):
        return [_encode(item, arrays) for item in value]
    if isinstance(value, dict):
        return {key: _encode(item, arrays) for key, item in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def _decode(value, arrays):
    if isinstance(value, dict):
        if list(value) == ["array"]:
            return arrays[f"arr_{value['array']}"]
        return {key: _decode(item, arrays) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item, arrays) for item in value]
    return value
