"""The checks of a run folder that the apps make, in the apps' words (their arguments, `--restart`, the app that
trained a run). Imports kbert: import it after `app_cli.parse_args`, as the apps import kbert.

    check_run_task(args.model, "sentiment", "BertClassifier", regression=False)   # evaluate, predict
    check_run_settings(folder, settings, may_change=("steps",))                    # apps/pretrain.py
"""

import json
import pathlib
import tempfile
import zipfile

from kbert.saving import (BACKBONE_FILE, METRICS_FILE, MODEL_FILE, SETTINGS_FILE, RunFolderError, read_json,
                          write_json_atomic)


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
    if started is None:
        return
    started = {(renamed or {}).get(name, name): value for name, value in started.items()}
    for name in sorted(set(started) | set(settings)):
        if name not in may_change and started.get(name) != settings.get(name):
            option = "--" + name.replace("_", "-")
            raise RunFolderError(f"{path}: this run started with {option} {started.get(name)!r}, not "
                                 f"{settings.get(name)!r}. Repeat its settings to resume it, or start over "
                                 f"with --restart.")
