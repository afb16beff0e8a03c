import pathlib
import shutil

from kbert.distribution import is_chief
from kbert.saving import hidden_beside, read_json, remove_leftovers, sha256
from kbert.training.atomic_backup_and_restore import METADATA_FILE, AtomicBackupAndRestore


def run_backup(out, settings, callbacks=(), every_steps=None, every_minutes=None, inputs=(), steps_per_epoch=None,
               may_change=(), restart=False):
    """The `AtomicBackupAndRestore` of a training that writes the run folder `out`: every app's one resume policy.

    It backs up into `.NAME.backup/` beside `out` (`backup_folder`) at the end of every epoch and, with
    `every_steps` or `every_minutes`, within epochs, with the state of `callbacks` (e.g. early
    stopping): the same training run again after a kill (even `kill -9`) resumes from the last
    backup (`resumable_fit`), so at most one interval is lost. A backup of a run with other
    `settings` (but those in `may_change`) is refused at once, before any training, naming each
    setting with the value it started with and the new one (`kbert.saving.SettingsChangedError`);
    `restart` deletes the backup first, so the run starts over. The SHA-256 of each file of
    `inputs` is one of the settings: a training file edited in place is refused too. Call its
    `delete()` once the run folder is written (pretraining keeps it, to train further); after a
    failure the backups stay (the last good one, after a `NonFiniteLossError`). Leftovers of a
    killed write of `out` are removed first (`remove_leftovers`): one training at a time writes
    `out`; so are the logs of a run that left no backup to resume (see `fine_tuning_logs`). In a
    job of several processes, process 0 alone writes and deletes (`kbert.distribution.is_chief`);
    every process resumes.

    Fit with `callbacks=[StopOnNonFiniteLoss(backup), *callbacks, backup]` (`kbert.training.training_run`).

    Args:
        out: path of the run folder the training writes.
        settings: dict of JSON values. What the training was started with.
        callbacks: list of callbacks whose state the backups hold (see `AtomicBackupAndRestore`).
        every_steps, every_minutes: int or None, float or None. Also back up within an epoch every
            this many steps, or once this many minutes have passed since the last backup.
        inputs: paths of the files the run reads (None entries are passed over).
        steps_per_epoch: int or None. As `AtomicBackupAndRestore`'s (a fit of `steps_per_epoch`).
        may_change: names of `settings` that a resumed run may change (pretraining's `steps`).
        restart: bool. Delete the backup of an earlier run first: start over.

    Example:
    >>> import tempfile, keras, numpy as np
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = run_backup(out, {"epochs": 2})
    >>> _ = model.fit(np.zeros((4, 2)), np.zeros((4, 1)), epochs=2, callbacks=[backup], verbose=0)
    >>> [p.name for p in out.parent.iterdir()]
    ['.run.backup']
    >>> run_backup(out, {"epochs": 3})
    Traceback (most recent call last):
    kbert.saving.run_folder.SettingsChangedError: .../.run.backup: this run started with epochs 2, not 3. ...
    >>> backup.delete()  # the run folder is written
    """
    out = pathlib.Path(out)
    folder = backup_folder(out)
    if is_chief():
        remove_leftovers(out)
        if restart and folder.exists():
            shutil.rmtree(folder)
            print(f"Started over: deleted the backup in {folder}.", flush=True)
    settings = {name: value for name, value in settings.items() if name not in may_change}
    settings["input_sha256"] = {str(path): sha256(path) for path in inputs if path is not None}
    backup = AtomicBackupAndRestore(folder, steps_per_epoch=steps_per_epoch, settings=settings, callbacks=callbacks,
                                    every_steps=every_steps, every_minutes=every_minutes)
    if backup.last_checkpoint() is None and is_chief():
        shutil.rmtree(backup.backup_dir, ignore_errors=True)
    backup.check_settings()
    return backup


def backup_folder(out):
    """Where the backups of the training that writes the run folder `out` live: `.NAME.backup/` beside it.

    Example:
    >>> backup_folder("runs/sst2")
    PosixPath('runs/.sst2.backup')
    """
    return hidden_beside(out, "backup")


def backed_up_step(out):
    """The optimizer step of the last backup of the run folder `out` (0 without one).

    Example:
    >>> import tempfile
    >>> backed_up_step(pathlib.Path(tempfile.mkdtemp()) / "run")
    0
    """
    return read_json(backup_folder(out) / METADATA_FILE, missing={}).get("step", 0)
