import contextlib
import inspect
import json
import os
import pathlib
import shutil
import tempfile

import keras

from kbert.checkpoints import METRICS_FILE, MODEL_FILE


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


def write_run_folder(out, model, tokenizer, metrics, history, title="", extra_json=None):
    """Writes a finished run: `model.keras`, the tokenizer, `metrics.json`, `curves.png`.

    All of it appears at once, or nothing does (`atomic_output_folder`). `model.keras`
    holds the architecture and weights, not the optimizer's state (twice the weights
    again under AdamW), which a finished run does not need.

    Args:
        out: path of the run folder.
        model: the trained Keras model.
        tokenizer: its `kbert.BertTokenizer`.
        metrics: dict, written as `metrics.json`.
        history: dict of per-epoch metric lists, plotted as `curves.png`.
        title: str. Title of the plot.
        extra_json: dict of file name -> content, more JSON files to write.
    """
    from kbert.training.curves import plot_history

    with atomic_output_folder(out) as folder:
        _uncompiled(model, folder).save(folder / MODEL_FILE)
        tokenizer.save(folder)
        for name, content in {METRICS_FILE: metrics, **(extra_json or {})}.items():
            (folder / name).write_text(json.dumps(content, indent=2))
        plot_history(history, folder / "curves.png", title=title)


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
