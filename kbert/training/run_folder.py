import contextlib
import fcntl
import glob
import inspect
import json
import os
import pathlib
import shutil
import tempfile
import zipfile

import keras

from kbert.checkpoints import BACKBONE_FILE, METRICS_FILE, MODEL_FILE

SETTINGS_FILE = "settings.json"  # the settings a resumable run started with (apps/pretrain.py)


class RunFolderError(ValueError):
    """A run folder that cannot be used as asked: not writable, in use, of another task, other settings."""


def check_writable(path, what="--out"):
    """Raises `RunFolderError` now, before any work, when the file or folder `path` could not be written.

    That is: a file stands where a folder of its path should be, or the nearest existing
    folder does not take new entries (read-only, no permission). Tries by creating and
    removing an empty folder there, so a read-only file system is caught too. `what`
    names the argument in the message.

    Example:
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "taken"), "w").close()
    >>> check_writable(os.path.join(folder, "taken", "run"))
    Traceback (most recent call last):
    kbert.training.run_folder.RunFolderError: --out .../taken/run: .../taken is a file, not a folder.
    """
    path = pathlib.Path(path)
    base = path.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    for folder in [*reversed(path.parents), path]:  # a file in the way, wherever it is
        if folder.exists() and not folder.is_dir() and folder != path:
            raise RunFolderError(f"{what} {path}: {folder} is a file, not a folder.")
        if not folder.exists():
            break
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=base))
    except OSError as error:
        raise RunFolderError(f"{what} {path}: cannot write in {base} ({error.strerror or error}).") from None


@contextlib.contextmanager
def claim_run_folder(path, what="--out", replaces=True):
    """Checks that the run folder `path` can be written, and keeps other runs out of it while the block runs.

    The lock is `.NAME.lock` beside the folder, holding this process's id, taken with
    `fcntl.flock`: the system releases it when the process ends, even by `kill -9`, so a
    lock file left behind blocks nobody. A second run on the same folder is refused at once.

    Args:
        path: the run folder.
        what: str. The argument that named it, for messages (`--out`, `--run`).
        replaces: bool. The run writes the folder anew (`write_run_folder`): an existing
            folder that is not a run folder (files, but no model.keras) is refused rather
            than replaced. False for a run that resumes in its folder.

    Example:
    >>> folder = os.path.join(tempfile.mkdtemp(), "run")
    >>> with claim_run_folder(folder):
    ...     with claim_run_folder(folder):
    ...         pass
    Traceback (most recent call last):
    kbert.training.run_folder.RunFolderError: --out .../run is in use by another run (process ...)...
    """
    path = pathlib.Path(path)
    check_writable(path, what)
    if path.exists() and not path.is_dir():
        raise RunFolderError(f"{what} {path} is a file, not a run folder.")
    if replaces and path.is_dir() and any(path.iterdir()) and not (path / MODEL_FILE).is_file():
        raise RunFolderError(f"{what} {path} holds files but no {MODEL_FILE}: not a run folder, which "
                             f"training would replace whole. Choose another {what}, or empty it.")
    created = [folder for folder in path.parents if not folder.exists()]  # removed again if the run fails
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.parent / f".{path.name}.lock"
    try:
        descriptor = _lock(lock, f"{what} {path}", what)
    except BaseException:
        _remove_empty(created)
        raise
    try:
        yield path
    finally:
        lock.unlink(missing_ok=True)
        os.close(descriptor)
        if not path.exists():
            _remove_empty(created)


def _lock(lock, name, what):
    """An open descriptor of the file `lock`, exclusively `flock`ed, holding this process's id."""
    while True:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(descriptor, 32).decode(errors="replace").strip() or "unknown"
            os.close(descriptor)
            raise RunFolderError(f"{name} is in use by another run (process {holder}, lock {lock}): "
                                 f"wait for it to end, or choose another {what}.") from None
        if lock.exists() and os.stat(lock).st_ino == os.fstat(descriptor).st_ino:
            break
        os.close(descriptor)  # its last holder removed it between our open and our lock: take a new one
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    return descriptor


def _remove_empty(folders):
    """Removes the folders in `folders` (deepest first) that are empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


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
    metrics = _read_json(folder / METRICS_FILE) if (folder / METRICS_FILE).is_file() else {}
    recorded = metrics.get("task") if isinstance(metrics, dict) else None
    found = config.get("class_name")
    if recorded not in (None, task) or found != model_class:
        name = recorded or f"a {found}"
        raise RunFolderError(f"{what} {folder} is a run folder of {name}, not of {task}: "
                             f"use the app that trained it{f' (apps/{recorded}.py)' if recorded else ''}.")
    predicts_a_score = config.get("config", {}).get("num_classes") == 1
    if regression is not None and predicts_a_score != regression:
        kinds = {True: "a score (regression)", False: "classes"}
        raise RunFolderError(f"{what} {folder} predicts {kinds[predicts_a_score]}, not {kinds[regression]} "
                             f"as {task} does.")


def check_run_settings(folder, settings, may_change=()):
    """Raises `RunFolderError` when the run in `folder` started with settings other than `settings`.

    The settings it started with are in `folder/settings.json`; a setting in `may_change`
    may differ. Nothing is checked when the file does not exist (a new run).

    Example:
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> write_json_atomic(folder / SETTINGS_FILE, {"corpus": ["a.txt"], "steps": 10})
    >>> check_run_settings(folder, {"corpus": ["a.txt"], "steps": 20}, may_change=["steps"])
    >>> check_run_settings(folder, {"corpus": ["b.txt"], "steps": 10})
    Traceback (most recent call last):
    kbert.training.run_folder.RunFolderError: .../settings.json: this run started with --corpus ['a.txt'], not
    ['b.txt']...
    """
    path = pathlib.Path(folder) / SETTINGS_FILE
    if not path.is_file():
        return
    started = _read_json(path)
    for name in sorted(set(started) | set(settings)):
        if name not in may_change and started.get(name) != settings.get(name):
            option = "--" + name.replace("_", "-")
            raise RunFolderError(f"{path}: this run started with {option} {started.get(name)!r}, not "
                                 f"{settings.get(name)!r}. Repeat its settings to resume it, or start over "
                                 f"with --restart.")


def _read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise RunFolderError(f"{path}: not a JSON file ({error}).") from None


@contextlib.contextmanager
def atomic_output_folder(path):
    """Yields a temporary folder that replaces `path` only if the block finishes.

    An error or an interrupt (Ctrl-C, a kill) leaves `path` as it was: never
    half-written. The temporary folder sits beside `path`, so the final rename is
    atomic on one file system.

    Example:
    >>> import os
    >>> root = tempfile.mkdtemp()
    >>> with atomic_output_folder(os.path.join(root, "run")) as folder:
    ...     _ = (folder / "metrics.json").write_text("{}")
    >>> sorted(os.listdir(os.path.join(root, "run")))
    ['metrics.json']
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.partial-", dir=path.parent))
    temporary.chmod(0o777 & ~_umask())  # mkdtemp makes it private; a run folder is an ordinary one
    try:
        yield temporary
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if path.exists():
        old = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
        path.rename(old / path.name)
        temporary.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        temporary.rename(path)


def remove_leftovers(out):
    """Removes what a killed write of the run folder `out` left beside it (see
    `atomic_output_folder`): `.NAME.partial-*` folders, and `.NAME.old-*`
    ones, after putting back the previous run folder a kill between two renames left there."""
    out = pathlib.Path(out)
    name = glob.escape(out.name)
    for old in sorted(out.parent.glob(f".{name}.old-*")):
        if (old / out.name).is_dir() and not out.exists():
            (old / out.name).rename(out)
        shutil.rmtree(old, ignore_errors=True)
    for partial in out.parent.glob(f".{name}.partial-*"):
        shutil.rmtree(partial, ignore_errors=True)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json_atomic(path, content):
    """Writes `content` as JSON to `path` through a temporary file and a rename: never half-written.

    Example:
    >>> import json, os
    >>> path = os.path.join(tempfile.mkdtemp(), "metrics.json")
    >>> write_json_atomic(path, {"f1": 0.9})
    >>> json.load(open(path))
    {'f1': 0.9}
    """
    path = pathlib.Path(path)
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_text(json.dumps(content, indent=2))
    os.replace(temporary, path)


def write_run_folder(out, model, tokenizer, metrics, history, title="", extra_json=None, data=None, logs=None):
    """Writes a finished run: `model.keras`, the tokenizer, `metrics.json`, `curves.png`, the
    model card `README.md`, and the fit's `history.csv` and TensorBoard `logs/`.

    All of it appears at once, or nothing does (`atomic_output_folder`). `model.keras`
    holds the architecture, the weights and the preprocessor (tokenizer and lengths), not
    the optimizer's state (twice the weights again under AdamW), which a finished run does
    not need. The logs (`history.csv`, `logs/`) are moved in from the folder `logs`, where
    `kbert.training.training_logs.fine_tuning_logs` wrote them while the run trained.

    Args:
        out: path of the run folder.
        model: the trained Keras model.
        tokenizer: its `kbert.BertTokenizer`.
        metrics: dict, written as `metrics.json`; its `hyperparameters` and the other numbers
            (not `history`) go into the model card.
        history: dict of per-epoch metric lists, plotted as `curves.png`.
        title: str. Title of the plot and of the model card.
        extra_json: dict of file name -> content, more JSON files to write.
        data: dict of role -> data file, for the model card (`write_model_card`).
        logs: path of the folder of the fit's logs, or None.
    """
    from kbert.training.curves import plot_history
    from kbert.training.model_card import write_model_card
    from kbert.training.training_logs import LOG_NAMES

    with atomic_output_folder(out) as folder:
        _uncompiled(model, folder).save(folder / MODEL_FILE)
        tokenizer.save(folder)
        for name, content in {METRICS_FILE: metrics, **(extra_json or {})}.items():
            (folder / name).write_text(json.dumps(content, indent=2))
        plot_history(history, folder / "curves.png", title=title)
        write_model_card(folder, title, data or {}, metrics.get("hyperparameters", {}),
                         {k: v for k, v in metrics.items() if k not in ("hyperparameters", "history")})
        for name in LOG_NAMES if logs else ():
            if (pathlib.Path(logs) / name).exists():
                os.replace(pathlib.Path(logs) / name, folder / name)


def _uncompiled(model, folder):
    """`model` without its optimizer, so that saving it skips the optimizer's state.

    The weights go through a weights file in `folder` (and LoRA updates are merged into
    the kernels on the way, as `model.save` does).
    """
    if getattr(model, "optimizer", None) is None:
        return model
    copy = model.__class__.from_config(model.get_config())
    weights = folder / "weights.weights.h5"
    model.save_weights(weights)
    copy.load_weights(weights)
    weights.unlink()
    return copy


def write_evaluation(model_dir, data, scores, out=None, summary=None, **fields):
    """Prints `summary` and writes an evaluation of the run folder `model_dir` on the file `data`.

    The JSON file `out` (default `MODEL_DIR/eval_<data file stem>.json`) holds `model`,
    `data`, `backend`, then `fields`, then `scores`.

    Returns: `(metrics, path)`, the dict written and where.

    Example:
    >>> folder = tempfile.mkdtemp()
    >>> metrics, path = write_evaluation(folder, "data/dev.tsv", {"accuracy": 0.9}, summary="dev: 0.9")
    dev: 0.9
    Wrote .../eval_dev.json
    >>> path.name, list(metrics)
    ('eval_dev.json', ['model', 'data', 'backend', 'accuracy'])
    """
    metrics = {"model": str(model_dir), "data": str(data), "backend": keras.config.backend(), **fields, **scores}
    if summary:
        print(summary)
    out = pathlib.Path(out or pathlib.Path(model_dir) / f"eval_{pathlib.Path(data).stem}.json")
    write_json_atomic(out, metrics)
    print(f"Wrote {out}")
    return metrics, out


def load_run(folder):
    """Returns `(model, tokenizer, max_length)` from a run folder written by `write_run_folder`.

    A task model's `model.keras` carries its preprocessor: the tokenizer and `max_length`
    come from `model.preprocessor`. A folder saved before preprocessors lived in the task
    models gets one attached, the task's `preprocessor_class` on the folder's vocab.txt
    with `max_length` (and any other setting of that class, e.g. `doc_stride`) from
    `metrics.json`, so that old folders take raw inputs too. Other models come back as
    saved, with the folder's tokenizer and `max_length` (128 without `metrics.json`).
    """
    folder = pathlib.Path(folder)
    if not (folder / MODEL_FILE).is_file():
        raise FileNotFoundError(f"{folder / MODEL_FILE} does not exist: --model takes a folder written by `train`.")
    model = keras.saving.load_model(folder / MODEL_FILE, compile=False, safe_mode=True)
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is not None:
        return model, preprocessor.tokenizer, preprocessor.sequence_length
    from kbert.checkpoints import load_tokenizer

    metrics_file = folder / METRICS_FILE
    metrics = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
    tokenizer, max_length = load_tokenizer(folder, model), metrics.get("max_length", 128)
    preprocessor_class = getattr(model, "preprocessor_class", None)
    if preprocessor_class is not None and hasattr(model, "preprocessor"):  # a task saved before 42628e5
        settings = set(inspect.signature(preprocessor_class.__init__).parameters) - {
            "self", "tokenizer", "sequence_length", "kwargs"}
        model.preprocessor = preprocessor_class(
            tokenizer, sequence_length=max_length, **{key: metrics[key] for key in settings & set(metrics)})
    return model, tokenizer, max_length
