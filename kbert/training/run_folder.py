import contextlib
import json
import os
import pathlib
import shutil
import tempfile

MODEL_FILE = "model.keras"
METRICS_FILE = "metrics.json"


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

    All of it appears at once, or nothing does (`atomic_output_folder`).

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
        model.save(folder / MODEL_FILE)
        tokenizer.save(folder)
        for name, content in {METRICS_FILE: metrics, **(extra_json or {})}.items():
            (folder / name).write_text(json.dumps(content, indent=2))
        plot_history(history, folder / "curves.png", title=title)


def write_evaluation(model_dir, data, metrics, out=None):
    """Writes evaluation `metrics` as JSON to `out`, default `MODEL_DIR/eval_<data file stem>.json`.

    Returns the path written.

    Example:
    >>> folder = tempfile.mkdtemp()
    >>> write_evaluation(folder, "data/dev.tsv", {"accuracy": 0.9}).name
    Wrote .../eval_dev.json
    'eval_dev.json'
    """
    out = pathlib.Path(out or pathlib.Path(model_dir) / f"eval_{pathlib.Path(data).stem}.json")
    write_json_atomic(out, metrics)
    print(f"Wrote {out}")
    return out
