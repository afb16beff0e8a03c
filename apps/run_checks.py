"""The checks of a run folder that the apps make, in the apps' words (their arguments, `--restart`, the app that
trained a run). Imports kbert: import it after `app_cli.parse_args`, as the apps import kbert.

    check_run_task(args.model, "sentiment", "BertClassifier", regression=False)   # evaluate, predict
    with refusing_in_flags(args):                                                  # train: the resume policy's
        train()                                                                    # refusals, in flags
"""

import contextlib
import json
import pathlib
import zipfile

from kbert.saving import (BACKBONE_FILE, METRICS_FILE, MODEL_FILE, DamagedBackupError, RunFolderError,
                          SettingsChangedError, read_json)
from kbert.training.resume_policy import ResumeRefusedError


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


def flag_names(args, options=None):
    """How the apps name a setting: `--name`, as its flag, when `args` (the parsed arguments of the command) has it
    (`options` maps a setting to its argument's name where they differ); else (a number the run derived, a file's
    SHA-256) as it is.

    Example:
    >>> import argparse
    >>> named = flag_names(argparse.Namespace(lr=3e-5, restart=False), {"learning_rate": "lr"})
    >>> named("learning_rate"), named("restart"), named("train_examples")
    ('--lr', '--restart', 'train_examples')
    """
    options = options or {}

    def named(name):
        dest = options.get(name, name)
        return f"--{dest.replace('_', '-')}" if hasattr(args, dest) else name

    return named


def in_flags(error, named):
    """The `SettingsChangedError` `error` in the apps' words: a `RunFolderError` that names each setting as
    `named` (`flag_names`) does, and `--restart`.

    Example:
    >>> import argparse
    >>> named = flag_names(argparse.Namespace(lr=3e-5, epochs=2), {"learning_rate": "lr"})
    >>> print(in_flags(SettingsChangedError("runs/.sst2.backup", [("learning_rate", 5e-5, 3e-5),
    ...                                                             ("train_examples", 90, 80)]), named))
    runs/.sst2.backup: this run started with --lr 5e-05, not 3e-05; train_examples 90, not 80. Repeat its settings
    to resume it, or start over with --restart, which discards what it trained.
    """
    said = "; ".join(f"{named(name)} {started!r}, not {now!r}" for name, started, now in error.changes)
    return RunFolderError(f"{error.where}: this run started with {said}. Repeat its settings to resume it, or start "
                          f"over with --restart, which discards what it trained.")


@contextlib.contextmanager
def refusing_in_flags(args, options=None):
    """Within the block, the refusals of the resume policy (`kbert.training.resume_policy`) are raised again in the
    apps' words, each setting named as its flag (`flag_names`): a `SettingsChangedError` (a training resumed with
    other settings: `in_flags`), a `ResumeRefusedError` (a run folder neither resumed nor started over, as asked),
    and a `DamagedBackupError` (no intact backup to resume from) with `--restart`.

    Example:
    >>> import argparse
    >>> with refusing_in_flags(argparse.Namespace(steps=20, restart=False)):
    ...     raise ResumeRefusedError(lambda named: f"runs/wiki has trained 40 steps: {named('steps')} 20 cannot undo "
    ...                                            f"them ({named('restart')})")
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: runs/wiki has trained 40 steps: --steps 20 cannot undo them (--restart)
    >>> with refusing_in_flags(argparse.Namespace()):
    ...     raise DamagedBackupError("runs/.sst2.backup/step-40.weights.h5", "truncated file")
    Traceback (most recent call last):
    kbert.saving.run_folder.DamagedBackupError: runs/.sst2.backup/step-40.weights.h5: ... start the run over with
    --restart, which discards what it trained.
    """
    named = flag_names(args, options)
    try:
        yield
    except SettingsChangedError as error:
        raise in_flags(error, named) from None
    except ResumeRefusedError as error:
        raise RunFolderError(error.worded(named)) from None
    except DamagedBackupError as error:
        raise DamagedBackupError(error.file, error.reason, restart="--restart") from None
