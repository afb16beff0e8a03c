"""Where a run starts from (`--init`) and how a backbone is saved for the next run.

A kbert backbone folder holds `backbone.keras` (loads under any backend), `vocab.txt`
and `tokenizer_config.json` (the tokenizer, in Hugging Face's layout).
"""

import pathlib

import keras

from kbert.config import PRESETS

BACKBONE_FILE = "backbone.keras"
MODEL_FILE = "model.keras"  # a task run folder's model (`kbert.training.write_run_folder`)
METRICS_FILE = "metrics.json"


def load_backbone(init, **overrides):
    """Returns `(backbone, tokenizer)` for `init`, the one argument every app takes.

    Args:
        init: str or path, one of:
            - a preset name from `kbert.PRESETS` (random weights, MiniLM's uncased vocabulary);
            - "all_minilm_l6_v2", the real pretrained checkpoint;
            - a Hugging Face BERT folder (`config.json`, `model.safetensors`, `vocab.txt`);
            - a kbert backbone folder written by `save_backbone` (e.g. by apps/pretrain.py);
            - a task run folder (`model.keras`, e.g. from apps/qa.py): its fine-tuned backbone,
              without the task's head, to fine-tune further.
        **overrides: constructor arguments for presets and Hugging Face folders (e.g. `dropout`).

    Every kind computes under the global dtype policy (e.g. "mixed_bfloat16" for
    `--mixed-precision`), also a saved backbone whose file names another policy.

    Example:
    >>> backbone, tokenizer = load_backbone("bert_tiny")
    >>> backbone.vocabulary_size == tokenizer.vocabulary_size
    True
    """
    from kbert.models.bert_backbone import BertBackbone

    saved = load_saved_model(init)
    if saved is not None:
        if overrides:
            raise ValueError(f"{init}: a saved backbone is loaded as saved; got overrides {overrides}.")
        backbone = _under_global_policy(saved if isinstance(saved, BertBackbone) else saved.backbone)
    elif _is_preset(init):
        backbone = BertBackbone.from_preset(str(init), **overrides)
    else:
        backbone = BertBackbone.from_hf(init, **overrides)
    return backbone, load_tokenizer(init, backbone)


def load_saved_model(init):
    """The Keras model saved in the kbert folder `init` (`backbone.keras` or a run's `model.keras`),
    loaded in safe mode without its optimizer; None for presets and Hugging Face folders.

    Raises FileNotFoundError, listing the presets, when `init` is none of the kinds
    `load_backbone` takes.
    """
    if _is_preset(init):
        return None
    folder = pathlib.Path(init)
    saved = next((folder / name for name in (BACKBONE_FILE, MODEL_FILE) if (folder / name).is_file()), None)
    if saved is not None:
        return keras.saving.load_model(saved, compile=False, safe_mode=True)
    if (folder / "config.json").is_file():
        return None
    raise FileNotFoundError(
        f"{str(init)!r} is neither a preset ({', '.join(sorted(PRESETS))} or all_minilm_l6_v2), a "
        f"Hugging Face folder with config.json, nor a kbert folder with {BACKBONE_FILE} or {MODEL_FILE}."
    )


def load_tokenizer(init, model=None):
    """The `BertTokenizer` of a preset (MiniLM's uncased vocabulary) or of a folder's vocab.txt.

    Given the `model` it serves (a backbone or a task model), a vocabulary of another size
    than the model's `vocabulary_size` raises a ValueError (`check_vocabulary`).
    """
    from kbert.paths import minilm_dir
    from kbert.text import BertTokenizer

    folder = minilm_dir() if _is_preset(init) else pathlib.Path(init)
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
    >>> load_backbone("bert_tiny", vocabulary_size=1000)
    Traceback (most recent call last):
    ValueError: .../vocab.txt has 30522 tokens but the model's vocabulary_size is 1000: ...
    """
    if tokenizer.vocabulary_size != backbone.vocabulary_size:
        raise ValueError(f"{source} has {tokenizer.vocabulary_size} tokens but the model's "
                         f"vocabulary_size is {backbone.vocabulary_size}: the vocabulary and "
                         "the model do not belong together.")


def _is_preset(init):
    """True for a preset name (`PRESETS` or "all_minilm_l6_v2"), False for a folder."""
    return str(init) in PRESETS or str(init) == "all_minilm_l6_v2"


def _under_global_policy(backbone):
    """`backbone`, rebuilt with the same weights if its file fixed another dtype policy.

    Older kbert files name the policy they were built under, nearly always "float32",
    which would otherwise override `--mixed-precision` without a word.
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
