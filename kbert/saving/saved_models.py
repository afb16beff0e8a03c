"""The Keras models and tokenizers kbert folders hold, and saving a backbone.

A kbert backbone folder holds `backbone.keras` (loads under any backend), `vocab.txt`
and `tokenizer_config.json` (the tokenizer, in Hugging Face's layout); a task run folder
`model.keras`, the tokenizer and `metrics.json` (`kbert.saving.run_folder`). What a source
is (a preset, a checkpoint, a folder, a file) is decided by `kbert.saving.model_source`.
"""

import inspect
import json
import pathlib
import re
import zipfile

import keras

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.saving.model_source import ModelSource, is_preset, model_source
from kbert.saving.run_folder import BACKBONE_FILE, METRICS_FILE, MODEL_FILE, read_json


# How Keras says that a config names a class or function it cannot find (keras.saving.serialization_lib).
_UNKNOWN_OBJECT = re.compile(r"Could not (?:locate|deserialize) (class|function) '([^']+)'")


def load_keras_file(path):
    """The model in the `.keras` file `path`, in safe mode and without its optimizer (the one way kbert loads them).

    A config that names a class or function neither kbert nor Keras defines (a file of other code, of a newer
    kbert, or edited) raises a ValueError naming the file, the name and where the config holds it.
    """
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except TypeError as error:
        unknown = _UNKNOWN_OBJECT.search(str(error))
        if unknown is None:
            raise
        kind, name = unknown.groups()
        where = _where_named(path, name)
        raise ValueError(f"{path}: its config.json names the {kind} {name!r}{where}, which neither kbert nor Keras "
                         f"defines: a file written by other code or a newer kbert, or edited.") from None


def _where_named(path, name):
    """" (field FIELD)": where the config.json of the `.keras` file `path` names the class or function `name`
    (as `class_name`, `registered_name` or a function's name), e.g. " (field config.backbone.class_name)"; "" if
    it is not found."""
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    found = []

    def visit(value, field):
        if isinstance(value, dict):
            if value.get("class_name") == "function" and value.get("config") == name:
                found.append(f"{field}.config" if field else "config")
            for key in ("class_name", "registered_name"):
                if value.get(key) == name:
                    found.append(f"{field}.{key}" if field else key)
            for key, item in value.items():
                visit(item, f"{field}.{key}" if field else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                visit(item, f"{field}[{i}]")

    visit(config, "")
    return f" (field {found[0]})" if found else ""


def load_saved_model(init, verify=True):
    """The Keras model saved in the kbert source `init` (a folder's `backbone.keras` or
    `model.keras`, or a `.keras` file), loaded in safe mode without its optimizer (a task
    model with its preprocessor: `with_preprocessor`); None for presets and Hugging Face
    folders (`model_source` raises FileNotFoundError for anything else). `verify=False` skips
    the check of its files against the SHA-256 its folder recorded (`kbert.saving.checksums`).
    """
    return model_source(init, verify).saved_model


def load_tokenizer(init, model=None):
    """The `BertTokenizer` of a preset (MiniLM's uncased vocabulary), of a `ModelSource` (the
    vocab.txt of its folder) or of a folder's vocab.txt.

    Given the `model` it serves (a backbone or a task model), a vocabulary of another size
    than the model's `vocabulary_size` raises a ValueError (`check_vocabulary`).
    """
    from kbert.text import BertTokenizer

    folder = model_source(init).folder if isinstance(init, ModelSource) or is_preset(init) else pathlib.Path(init)
    tokenizer = BertTokenizer.from_hf(folder)
    if model is not None:
        check_vocabulary(getattr(model, "backbone", model), tokenizer, folder / "vocab.txt")
    return tokenizer


def check_vocabulary(backbone, tokenizer, source):
    """Raises a ValueError unless `tokenizer` has as many tokens as `backbone` has token ids.

    A longer vocabulary gives ids past the embedding table (an error on TensorFlow, NaN on
    JAX), a shorter one silently wrong tokens: the two do not belong together.

    Args:
        backbone: `kbert.BertBackbone`.
        tokenizer: `kbert.BertTokenizer`.
        source: str or path. Where the vocabulary comes from, for the message.

    Example:
    >>> from kbert import load_backbone
    >>> load_backbone("bert_tiny", vocabulary_size=1000)
    Traceback (most recent call last):
    ValueError: .../vocab.txt has 30522 tokens but the model's vocabulary_size is 1000: ...
    """
    if tokenizer.vocabulary_size != backbone.vocabulary_size:
        raise ValueError(f"{source} has {tokenizer.vocabulary_size} tokens but the model's "
                         f"vocabulary_size is {backbone.vocabulary_size}: the vocabulary and "
                         "the model do not belong together.")


def under_global_policy(backbone):
    """`backbone`, rebuilt with the same weights if its file fixed another dtype policy.

    Older kbert files name the policy they were built under, nearly always "float32",
    which would otherwise override `mixed_precision` without a word.
    """
    config = backbone.get_config()
    if config["dtype"] in (None, keras.config.dtype_policy().name):
        return backbone
    rebuilt = backbone.__class__.from_config({**config, "dtype": None})
    rebuilt.set_weights(backbone.get_weights())
    return rebuilt


def save_backbone(folder, backbone, tokenizer):
    """Writes `backbone.keras` and the tokenizer files into `folder` (which must exist)."""
    folder = pathlib.Path(folder)
    backbone.save(folder / BACKBONE_FILE)
    tokenizer.save(folder)


def with_preprocessor(model, folder):
    """`model`, loaded from a `.keras` file in `folder`, with a preprocessor if it is a task model
    saved without one (run folders from before preprocessors lived in the task models, 42628e5).

    The task's `preprocessor_class` is attached on the folder's vocab.txt, with `max_length`
    (else the task's `default_sequence_length`) and any other setting of that class (e.g.
    `doc_stride`) from `metrics.json`, so that old folders take raw inputs too. Other
    models come back as they are.
    """
    preprocessor_class = getattr(model, "preprocessor_class", None)
    if preprocessor_class is None or not hasattr(model, "preprocessor") or model.preprocessor is not None:
        return model
    metrics = read_json(pathlib.Path(folder) / METRICS_FILE, missing={})
    settings = set(inspect.signature(preprocessor_class.__init__).parameters) - {
        "self", "tokenizer", "sequence_length", "kwargs"}
    model.preprocessor = preprocessor_class(
        load_tokenizer(folder, model), sequence_length=metrics.get("max_length", model.default_sequence_length),
        **{key: metrics[key] for key in settings & set(metrics)})
    return model


def load_run(path, verify=True):
    """Returns `(model, tokenizer, max_length)` from a run folder written by
    `kbert.training.write_run_folder`, or from a `.keras` file a model was saved to.

    The files it reads are first checked against the SHA-256 the folder recorded when it was
    written (`kbert.saving.checksums`): a changed or damaged file raises
    `kbert.saving.ChangedFileError` naming it, unless `verify=False`. A folder written before
    kbert recorded them (no `SHA256SUMS`) loads unchecked.

    A task model carries its preprocessor (attached by `with_preprocessor` to one saved
    without): the tokenizer and `max_length` come from `model.preprocessor`. Other models
    come back as saved, with the tokenizer of the file's folder and the `max_length` of its
    `metrics.json` (`DEFAULT_SEQUENCE_LENGTH` without).
    """
    source = _run_source(path, verify)
    model = source.saved_model
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is not None:
        return model, preprocessor.tokenizer, preprocessor.sequence_length
    metrics = read_json(source.folder / METRICS_FILE, missing={})
    return model, load_tokenizer(source, model), metrics.get("max_length", DEFAULT_SEQUENCE_LENGTH)


def _run_source(path, verify):
    """The `ModelSource` of a run folder or `.keras` file; FileNotFoundError for anything else."""
    try:
        source = model_source(path, verify)
    except FileNotFoundError:
        source = None
    if source is None or source.kind not in ("run_folder", "keras_file"):
        given = pathlib.Path(getattr(path, "given", path))
        raise FileNotFoundError(f"{given / MODEL_FILE} does not exist: give a run folder written by training (it "
                                f"holds {MODEL_FILE}) or a .keras file.")
    return source
