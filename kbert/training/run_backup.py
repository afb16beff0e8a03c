import pathlib
import shutil

from kbert.distribution import is_chief
from kbert.saving import hidden_beside, remove_leftovers
from kbert.training.atomic_backup_and_restore import AtomicBackupAndRestore
from kbert.training.model_card import sha256


def run_backup(out, settings, callbacks=(), every_steps=None, every_minutes=None, inputs=()):
    """The `AtomicBackupAndRestore` of a training that writes the run folder `out`.

    It backs up into `.NAME.backup/` beside `out` at the end of every epoch and, with
    `every_steps` or `every_minutes`, within epochs, with the state of `callbacks` (e.g. early
    stopping): the same training run again after a kill (even `kill -9`) resumes from the last
    backup (`resumable_fit`), so at most one interval is lost. A backup of a run
    with other `settings` is not resumed but deleted. Call its `delete()` once the run
    folder is written; after a failure the backups stay (the last good one, after a
    `NonFiniteLossError`). Leftovers of a killed write of `out` are removed first
    (`remove_leftovers`): one training at a time writes `out`; so are the logs of a run
    that left no backup to resume (see `fine_tuning_logs`). In a job of several processes,
    process 0 alone writes and deletes (`kbert.distribution.is_chief`); every process resumes.
    The SHA-256 of each file of `inputs` is one of the settings: a training file edited in place
    is not resumed on (a note says so, and the run starts afresh).

    Fit with `callbacks=[StopOnNonFiniteLoss(backup), *callbacks, backup]`.

    Args:
        out: path of the run folder the training writes.
        settings: dict of JSON values. What the training was started with.
        callbacks: list of callbacks whose state the backups hold (see `AtomicBackupAndRestore`).
        every_steps, every_minutes: int or None, float or None. Also back up within an epoch every
            this many steps, or once this many minutes have passed since the last backup.
        inputs: paths of the files the run reads (None entries are passed over).

    Example:
    >>> import tempfile, keras, numpy as np
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = run_backup(out, {"epochs": 2})
    >>> _ = model.fit(np.zeros((4, 2)), np.zeros((4, 1)), epochs=2, callbacks=[backup], verbose=0)
    >>> [p.name for p in out.parent.iterdir()]
    ['.run.backup']
    >>> backup.delete()  # the run folder is written
    """
    out = pathlib.Path(out)
    if is_chief():
        remove_leftovers(out)
    settings = {**settings, "input_sha256": {str(path): sha256(path) for path in inputs if path is not None}}
    backup = AtomicBackupAndRestore(hidden_beside(out, "backup"), settings=settings, callbacks=callbacks,
                                    every_steps=every_steps, every_minutes=every_minutes)
    if backup.last_checkpoint() is None and is_chief():
        shutil.rmtree(backup.backup_dir, ignore_errors=True)
    return backup
