"""The checks of a run folder that the apps make, in the apps' words (their arguments, `--restart`, the app that
trained a run). Imports kbert: import it after `app_cli.parse_args`, as the apps import kbert.

    check_run_task(args.model, "sentiment", "BertClassifier", regression=False)   # evaluate, predict
    check_run_settings(folder, settings, may_change=("steps",))                    # apps/pretrain.py
"""

import contextlib
import json
import pathlib
import tempfile
import zipfile

from kbert.saving import (BACKBONE_FILE, METRICS_FILE, MODEL_FILE, SETTINGS_FILE, DamagedBackupError, RunFolderError,
                          SettingsChangedError, changed_settings, read_json, write_json_atomic)


def check_run_task(folder, task, model_class, regression=None, what="--model"):
    """Raises `RunFolderError` unless `folder` is a run folder of `task`, before anything loads.

    Reads what the folder records: the task of `metrics.json` (written by `train`) and the
    class of the model in `model.keras` (its config, without loading the weights).

    Args:
        folder: the run folder.
        task: str. The task name `train` records ("sentiment", "nli", "similarity", "ner", "qa").
        model_class: str. The task model's class name, e.g. "BertClassifier".
        regression: bool or None. For a `BertClassifier`: one score (True) or classes (False).
        what: str. The argument that named the folder, for messages.
    """
    folder = pathlib.Path(folder)
    model_file = folder / MODEL_FILE
    if not model_file.is_file():
        kind = ("a pretraining run (backbone.keras): give it to `train --init`" if (folder / BACKBONE_FILE).is_file()
                else "a file, not a folder" if folder.is_file() else
                "no such folder" if not folder.exists() else f"no {MODEL_FILE} in it")
        raise RunFolderError(f"{what} {folder}: {kind}; {what} takes a run folder written by `train`.")
    try:
        with zipfile.ZipFile(model_file) as archive:
            config = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, ValueError):
        raise RunFolderError(f"{what} {folder}: {model_file} is not a Keras model file.") from None
    metrics = read_json(folder / METRICS_FILE, missing={})
    recorded = metrics.get("task") if isinstance(metrics, dict) else None
    found = config.get("class_name")
    if recorded == task and found != model_class:  # a metrics.json of this task beside another task's model
        raise RunFolderError(f"{what} {folder}: its {model_file.name} holds a {found}, not the {model_class} of a "
                             f"{task} run (its {METRICS_FILE} says {task}).")
    if recorded not in (None, task) or found != model_class:
        name = recorded or f"a {found}"
        raise RunFolderError(f"{what} {folder} is a run folder of {name}, not of {task}: "
                             f"use the app that trained it{f' (apps/{recorded}.py)' if recorded else ''}.")
    predicts_a_score = config.get("config", {}).get("num_classes") == 1
    if regression is not None and predicts_a_score != regression:
        kinds = {True: "a score (regression)", False: "classes"}
        raise RunFolderError(f"{what} {folder} predicts {kinds[predicts_a_score]}, not {kinds[regression]} "
                             f"as {task} does.")


def check_run_settings(folder, settings, may_change=(), renamed=None):
    """Raises `RunFolderError` when the run in `folder` started with settings other than `settings`.

    The settings it started with are in `folder/settings.json`; a setting in `may_change`
    may differ. Nothing is checked when the file does not exist (a new run). `renamed` maps
    a setting's former name to its name now, so that a run started before the rename resumes.
    Each setting is named as its flag (`--name`), with the value the run started with and the new one.

    Example:
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> write_json_atomic(folder / SETTINGS_FILE, {"corpus": ["a.txt"], "steps": 10})
    >>> check_run_settings(folder, {"corpus": ["a.txt"], "steps": 20}, may_change=["steps"])
    >>> check_run_settings(folder, {"files": ["a.txt"], "steps": 10}, renamed={"corpus": "files"})
    >>> check_run_settings(folder, {"corpus": ["b.txt"], "steps": 10})
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: .../settings.json: this run started with --corpus ['a.txt'], not
    ['b.txt']...
    """
    path = pathlib.Path(folder) / SETTINGS_FILE
    started = read_json(path, missing=None)
    if started is not None:
        changes = changed_settings(started, settings, may_change, renamed)
        if changes:
            raise in_flags(SettingsChangedError(path, changes))


def in_flags(error, args=None, options=None):
    """The `SettingsChangedError` `error` in the apps' words: a `RunFolderError` that names each setting
    as its flag where it is one, and `--restart`.

    A setting is a flag `--name` of `args` (the parsed arguments of the command) when `args` has it,
    as `options` (setting -> argument name) names it, or, without `args`, always (pretraining's settings
    are its arguments); else (a number the run derived, a file's SHA-256) it keeps its name.

    Example:
    >>> import argparse
    >>> args = argparse.Namespace(lr=3e-5, epochs=2)
    >>> print(in_flags(SettingsChangedError("runs/.sst2.backup", [("learning_rate", 5e-5, 3e-5),
    ...                                                             ("train_examples", 90, 80)]), args, {"learning_rate": "lr"}))
    runs/.sst2.backup: this run started with --lr 5e-05, not 3e-05; train_examples 90, not 80. Repeat its settings
    to resume it, or start over with --restart, which discards what it trained.
    """
    options = options or {}

    def named(name):
        dest = options.get(name, name)
        return f"--{dest.replace('_', '-')}" if args is None or hasattr(args, dest) else name

    said = "; ".join(f"{named(name)} {started!r}, not {now!r}" for name, started, now in error.changes)
    return RunFolderError(f"{error.where}: this run started with {said}. Repeat its settings to resume it, or start "
                          f"over with --restart, which discards what it trained.")


@contextlib.contextmanager
def refusing_in_flags(args, options=None):
    """Within the block, a `SettingsChangedError` (a training resumed with other settings) is raised again in the
    apps' words (`in_flags`), and a `DamagedBackupError` (no intact backup to resume from) with `--restart`.

    Example:
    >>> with refusing_in_flags(None):
    ...     raise DamagedBackupError("runs/.sst2.backup/step-40.weights.h5", "truncated file")
    Traceback (most recent call last):
    kbert.saving.run_folder.DamagedBackupError: runs/.sst2.backup/step-40.weights.h5: ... start the run over with
    --restart, which discards what it trained.
    """
    try:
        yield
    except SettingsChangedError as error:
        raise in_flags(error, args, options) from None
    except DamagedBackupError as error:
        raise DamagedBackupError(error.file, error.reason, restart="--restart") from None


def check_resumable(folder, settings, may_change=(), renamed=None):
    """Raises `RunFolderError` unless `folder` (--run) is new, or a pretraining run started with `settings`
    (but `may_change`, with the former names `renamed`: `check_run_settings`) that has not trained past
    `settings["steps"]`. A backup that an older kbert kept inside the folder is moved beside it first
    (`kbert.recipes.pretrain.move_inner_backup`)."""
    from kbert.recipes.pretrain import VOCABULARY_FILE, move_inner_backup
    from kbert.training.run_backup import backed_up_step

    folder = pathlib.Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    if not (folder / SETTINGS_FILE).is_file():
        if (folder / MODEL_FILE).is_file():
            raise RunFolderError(f"--run {folder} holds a fine-tuned model ({MODEL_FILE}), not a pretraining run: "
                                 f"choose another --run.")
        if (folder / VOCABULARY_FILE).is_file():
            raise RunFolderError(f"--run {folder} records no {SETTINGS_FILE} (a run from before kbert kept them), "
                                 f"so a rerun cannot be checked against it: start over with --restart, or choose "
                                 f"another --run.")
        return  # a run killed while writing its data split, before it was prepared: prepared again
    check_run_settings(folder, settings, may_change=may_change, renamed=renamed)
    move_inner_backup(folder)
    trained = backed_up_step(folder)
    if settings["steps"] < trained:
        raise RunFolderError(f"--run {folder} has trained {trained} steps already: --steps {settings['steps']} "
                             f"cannot undo them (start over with --restart).")


def start_over(folder):
    """Deletes the pretraining run folder `folder` and its backup (--restart); refuses a folder of anything else."""
    from kbert.recipes.pretrain import delete_run
    from kbert.training.run_backup import backup_folder

    folder = pathlib.Path(folder)
    if not folder.exists() and not backup_folder(folder).exists():
        return
    marks = (SETTINGS_FILE, "backup", BACKBONE_FILE, "train.txt", "history.csv")
    if folder.exists() and (not folder.is_dir() or (folder / MODEL_FILE).exists()
                            or not any((folder / mark).exists() for mark in marks)):
        raise RunFolderError(f"--restart: {folder} is not a pretraining run folder; not deleting it. "
                             f"Choose another --run.")
    delete_run(folder)
    print(f"--restart: deleted {folder}.", flush=True)
