"""The Keras files kbert folders hold: reading one safely, a tokenizer that belongs to its model, the global
dtype policy, and saving a backbone.

A kbert backbone folder holds `backbone.keras` (loads under any backend), `vocab.txt`
and `tokenizer_config.json` (the tokenizer, in Hugging Face's layout); a task run folder
`model.keras`, the tokenizer and `metrics.json` (`kbert.saving.run_folder`). What a source
is (a preset, a checkpoint, a folder, a file) and loading it is `kbert.saving.model_source`'s.
"""

import json
import pathlib
import re
import zipfile

import keras

from kbert.saving.run_folder import BACKBONE_FILE


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


def check_vocabulary(backbone, tokenizer, source):
    """Raises a ValueError unless `tokenizer` has as many tokens as `backbone` has token ids, and lays out
    RoBERTa's inputs (byte-level BPE) exactly when the backbone is RoBERTa's.

    A longer vocabulary gives ids past the embedding table (an error on TensorFlow, NaN on
    JAX), a shorter one silently wrong tokens: the two do not belong together. RoBERTa has no
    token types and puts `</s></s>` between a pair's texts; the other tokenizers give token types.

    Args:
        backbone: `kbert.BertBackbone`.
        tokenizer: a `kbert.text` tokenizer.
        source: str or path. Where the vocabulary comes from, for the message.

    Example:
    >>> from kbert import BertBackbone, BertTokenizer
    >>> check_vocabulary(BertBackbone.from_preset("bert_tiny", vocabulary_size=1000),
    ...                  BertTokenizer.from_preset("bert_tiny"), "vocab.txt")
    Traceback (most recent call last):
    ValueError: vocab.txt has 30522 tokens but the model's vocabulary_size is 1000: ...
    """
    if tokenizer.vocabulary_size != backbone.vocabulary_size:
        raise ValueError(f"{source} has {tokenizer.vocabulary_size} tokens but the model's "
                         f"vocabulary_size is {backbone.vocabulary_size}: the vocabulary and "
                         "the model do not belong together.")
    family = getattr(backbone, "family", "bert")
    if (family == "roberta") != (getattr(tokenizer, "kind", None) == "byte_level_bpe"):
        raise ValueError(f"{source}: a {type(tokenizer).__name__} for a {family} model: RoBERTa models, and they "
                         "alone, read RoBERTa's byte-level BPE (kbert.text.ByteLevelBPETokenizer), without token "
                         "types.")


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
