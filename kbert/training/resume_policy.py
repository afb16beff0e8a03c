"""Every training run's one resume policy (`run_backup`): its backup beside the run folder, the settings it started
with, compared once, and whether a rerun resumes it, is refused, or starts it over; `KeptRunFolder`: the rules of a
run folder kept, with its backup, to train further (pretraining's)."""

import dataclasses
import json
import pathlib
import shutil

from kbert.distribution import chief_first
from kbert.saving import (MODEL_FILE, SETTINGS_FILE, RunFolderError, SettingsChangedError, changed_settings,
                          delete_folder, hidden_beside, read_json, remove_leftovers, sha256, write_json_atomic)
from kbert.training.atomic_backup_and_restore import METADATA_FILE, AtomicBackupAndRestore


@dataclasses.dataclass(frozen=True)
class KeptRunFolder:
    """A run folder that its training writes as it goes and keeps, with its backup, to train further (pretraining's).

    Its `settings.json` records, from the start, the settings its run started with: a rerun must repeat
    them but those of `may_change` (the run's length), and may not ask for fewer `steps` than its backup
    has trained. A folder of an older kbert resumes too: its settings under their former names
    (`renamed`), its backup moved out of its `backup/` to beside it; one without `settings.json` that
    holds one of `marks` cannot be checked, and is refused.

    Args:
        kind: str. What the run is, for messages ("pretraining run").
        marks: names of the files and folders (beside `settings.json`) that mark a folder of this kind.
        steps: int. The optimizer steps the run trains to.
        may_change: names of the settings a rerun may change.
        renamed: dict of a setting's former name -> its name now.
    """

    kind: str
    marks: tuple
    steps: int
    may_change: tuple = ()
    renamed: dict = dataclasses.field(default_factory=dict)


class ResumeRefusedError(RunFolderError):
    """A run folder that a training run neither resumes in nor starts over in, as asked. Its message names settings:
    `worded(named)` is the message with each setting `name` written `named(name)` (an app names its flags).

    Example:
    >>> error = ResumeRefusedError(lambda named: f"runs/wiki has trained 40 steps: start it over ({named('restart')})")
    >>> print(error, error.worded(str.upper), sep="\\n")
    runs/wiki has trained 40 steps: start it over (restart)
    runs/wiki has trained 40 steps: start it over (RESTART)
    """

    def __init__(self, words):
        self.worded = words
        super().__init__(words(str))


def run_backup(out, settings, callbacks=(), every_steps=None, every_minutes=None, inputs=(), steps_per_epoch=None,
               restart=False, kept=None):
    """The `AtomicBackupAndRestore` of a training that writes the run folder `out`: every training's one resume policy.

    It backs up into `.NAME.backup/` beside `out` (`backup_folder`) at the end of every epoch and, with
    `every_steps` or `every_minutes`, within epochs, with the state of `callbacks` (e.g. early
    stopping): the same training run again after a kill (even `kill -9`) resumes from the last
    backup (`resumable_fit`), so at most one interval is lost. A run with other `settings` than the
    run it would resume started with is refused at once, before any training, naming each setting
    with the value it started with and the new one (`kbert.saving.SettingsChangedError`); `restart`
    deletes the backup first, so the run starts over. The SHA-256 of each file of `inputs` is one of
    the settings: a training file edited in place is refused too. The settings are recorded in the
    backup; in a run folder kept to train further (`kept`, a `KeptRunFolder`), in its `settings.json`
    from the start, and `restart` deletes the folder too. Call its `delete()` once the run folder is
    written (a kept run keeps it); after a failure the backups stay (the last good one, after a
    `NonFiniteLossError`). Leftovers of a killed write of `out` are removed first (`remove_leftovers`):
    one training at a time writes `out`; so are the logs of a run that left no backup to resume (see
    `fine_tuning_logs`). In a job of several processes, process 0 decides, writes and deletes, while the
    others wait (`kbert.distribution.chief_first`); every process resumes.

    Fit with `callbacks=[StopOnNonFiniteLoss(backup), *callbacks, backup]` (`kbert.training.training_run`).

    Args:
        out: path of the run folder the training writes.
        settings: dict of JSON values. What the training was started with.
        callbacks: list of callbacks whose state the backups hold (see `AtomicBackupAndRestore`).
        every_steps, every_minutes: int or None, float or None. Also back up within an epoch every
            this many steps, or once this many minutes have passed since the last backup.
        inputs: paths of the files the run reads (None entries are passed over).
        steps_per_epoch: int or None. As `AtomicBackupAndRestore`'s (a fit of `steps_per_epoch`).
        restart: bool. Delete the backup of an earlier run (and a kept run folder) first: start over.
        kept: a `KeptRunFolder`, or None: `out` is written at the end, whole (`write_run_folder`).

    Raises:
        kbert.saving.SettingsChangedError: other settings than those the run started with.
        ResumeRefusedError: a kept folder that cannot be resumed, or not started over, as asked.

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
    recorded = {name: value for name, value in settings.items() if not kept or name not in kept.may_change}
    recorded["input_sha256"] = {str(path): sha256(path) for path in inputs if path is not None}
    backup = AtomicBackupAndRestore(backup_folder(out), steps_per_epoch=steps_per_epoch, settings=recorded,
                                    callbacks=callbacks, every_steps=every_steps, every_minutes=every_minutes)
    chief_first(lambda: _start_or_resume(out, settings, backup, restart, kept))
    return backup


def _start_or_resume(out, settings, backup, restart, kept):
    """Process 0's part of `run_backup`: starts the run over (`restart`), or checks that it may resume; then checks the
    settings against those the run started with, once, and records them in a kept folder."""
    remove_leftovers(out)
    if kept:
        _move_inner_backup(out)
    if restart:
        _start_over(out, backup, kept)
    elif kept:
        _check_kept_folder(out, kept)
    if backup.last_checkpoint() is None:
        backup.discard_unbacked()  # the logs of a run killed before its first backup (not what it prepared)
    settings_file = out / SETTINGS_FILE
    settings = json.loads(json.dumps(settings))  # as settings.json reads back
    if kept and settings_file.is_file():
        where, started, now = settings_file, read_json(settings_file), settings
    else:
        where, started, now = backup.backup_dir, backup.started_with(), backup.settings
    may_change, renamed = (kept.may_change, kept.renamed) if kept else ((), None)
    changes = [] if started is None else changed_settings(started, now, may_change, renamed)
    if changes:
        raise SettingsChangedError(where, changes)
    if kept:
        trained = backed_up_step(out)
        if kept.steps < trained:
            raise ResumeRefusedError(lambda named: (
                f"{out} has trained {trained} steps already: {named('steps')} {kept.steps} cannot undo them; give "
                f"{named('steps')} {trained} or more, or start the run over ({named('restart')})."))
        if read_json(settings_file, missing=None) != settings:  # a new run, or one trained further
            out.mkdir(parents=True, exist_ok=True)
            write_json_atomic(settings_file, settings)


def _check_kept_folder(out, kept):
    """Refuses a folder `out` without `settings.json` that holds another kind of run, or one of `kept`'s marks (an older
    run, which cannot be checked); a folder without either is the start of a run that a kill cut short."""
    if not out.is_dir() or (out / SETTINGS_FILE).is_file():
        return
    if (out / MODEL_FILE).is_file():
        raise RunFolderError(f"{out} holds a fine-tuned model ({MODEL_FILE}), not a {kept.kind}: choose another run "
                             f"folder.")
    if any((out / mark).exists() for mark in kept.marks):
        raise ResumeRefusedError(lambda named: (
            f"{out} records no {SETTINGS_FILE} (a {kept.kind} of a kbert from before they were kept), so a rerun "
            f"cannot be checked against it: start it over ({named('restart')}), or choose another run folder."))


def _start_over(out, backup, kept):
    """Deletes the backup of the run that writes `out` and, for a kept run, `out` itself: refused when it holds files
    but is not a folder of `kept`'s kind."""
    deleted = []
    if kept and out.exists() and (not out.is_dir() or any(out.iterdir())):
        if (not out.is_dir() or (out / MODEL_FILE).exists()
                or not any((out / mark).exists() for mark in (SETTINGS_FILE, *kept.marks))):
            raise ResumeRefusedError(lambda named: (
                f"{out} is not a {kept.kind} folder: not deleting it to start over ({named('restart')}). Choose "
                f"another run folder."))
        delete_folder(out)
        deleted.append(str(out))
    if pathlib.Path(backup.backup_dir).exists():
        shutil.rmtree(backup.backup_dir)
        deleted.append(f"the backup in {backup.backup_dir}")
    if deleted:
        print(f"Started over: deleted {' and '.join(deleted)}.", flush=True)


def _move_inner_backup(out):
    """Moves the backup that a run folder of an older kbert kept inside, in `backup/`, to beside it (`backup_folder`),
    where the run resumes from it."""
    inner, beside = out / "backup", backup_folder(out)
    if inner.is_dir() and not beside.exists():
        inner.rename(beside)


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
