import datetime
import hashlib
import importlib.metadata
import json
import pathlib
import platform
import subprocess

import keras

from kbert.saving import sha256

MODEL_CARD_FILE = "README.md"
LIBRARIES = ("keras", "tensorflow", "tensorflow-text", "jax", "torch", "numpy")


def write_model_card(folder, title, data, hyperparameters, metrics):
    """Writes `folder/README.md`: what made the run and what it scored, for whoever finds the folder.

    It records kbert's version and git commit, the Keras backend and the library versions,
    each data file with its size and SHA-256 (so a later reader can tell the same file from
    an edited one), the hyperparameters and the metrics (numbers only; the full record
    stays in `metrics.json`). Written by `write_run_folder` (fine-tuning) and apps/pretrain.py.

    Args:
        folder: the run folder.
        title: str. The heading, e.g. "sentiment from all_minilm_l6_v2".
        data: dict of role -> path (or list of paths), e.g. {"train": "train.tsv"}; None values are skipped.
        hyperparameters: dict of name -> value.
        metrics: dict, nested dicts allowed: its numbers are listed by dotted name.

    Example:
    >>> import tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "train.tsv").write_text("sentence\\tlabel\\n")
    >>> write_model_card(folder, "toy", {"train": folder / "train.tsv"}, {"epochs": 1},
    ...                  {"validation": {"accuracy": 0.5}})
    >>> card = (folder / MODEL_CARD_FILE).read_text()
    >>> "| validation.accuracy | 0.5 |" in card, hashlib.sha256(b"sentence\\tlabel\\n").hexdigest() in card
    (True, True)
    """
    import kbert

    lines = [f"# {title}", "",
             f"Written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by kbert {kbert.__version__} "
             f"(git {git_commit()}), Keras {keras.version()} on the {keras.config.backend()} backend.", "",
             "## Data", "", "| role | file | bytes | sha256 |", "|---|---|---|---|"]
    for role, paths in data.items():
        for path in [paths] if isinstance(paths, (str, pathlib.PurePath)) else paths or []:
            path = pathlib.Path(path)
            size, digest = (path.stat().st_size, sha256(path)) if path.is_file() else ("-", "(not a file)")
            lines.append(f"| {role} | {path.resolve() if path.exists() else path} | {size} | {digest} |")
    lines += ["", "## Hyperparameters", "", "| name | value |", "|---|---|"]
    lines += [f"| {name} | {json.dumps(value)} |" for name, value in hyperparameters.items()]
    lines += ["", "## Metrics", "", "| name | value |", "|---|---|"]
    lines += [f"| {name} | {value:.6g} |" for name, value in _numbers(metrics)]
    lines += ["", "## Software", "", f"Python {platform.python_version()} on {platform.platform()}.", ""]
    lines += [f"- {name} {version}" for name, version in library_versions().items()]
    (pathlib.Path(folder) / MODEL_CARD_FILE).write_text("\n".join(lines) + "\n", "utf-8")


def git_commit():
    """The git commit of kbert's source ("-dirty" when it has uncommitted changes), or "unknown"."""
    source = pathlib.Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}{'-dirty' if dirty else ''}" if commit else "unknown"


def library_versions():
    """{name: version} of the libraries in `LIBRARIES` that are installed."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def _numbers(values, prefix=""):
    """(dotted name, number) of every int or float in the nested dict `values` (bools left out)."""
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _numbers(value, f"{name}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield name, value
