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

    if _is_preset(init):
        return BertBackbone.from_preset(str(init), **overrides), load_tokenizer(init)
    folder = pathlib.Path(init)
    saved = load_saved_model(folder)
    if saved is not None:
        if overrides:
            raise ValueError(f"{folder}: a saved backbone is loaded as saved; got overrides {overrides}.")
        backbone = _under_global_policy(saved if isinstance(saved, BertBackbone) else saved.backbone)
    else:
        backbone = BertBackbone.from_hf(folder, **overrides)
    tokenizer = load_tokenizer(folder)
    if backbone.vocabulary_size != tokenizer.vocabulary_size:
        raise ValueError(
            f"{folder}: the backbone has {backbone.vocabulary_size} token ids but vocab.txt has "
            f"{tokenizer.vocabulary_size} tokens."
        )
    return backbone, tokenizer


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


def load_tokenizer(init):
    """The `BertTokenizer` of a preset (MiniLM's uncased vocabulary) or of a folder's vocab.txt."""
    from kbert.paths import minilm_dir
    from kbert.text import BertTokenizer

    return BertTokenizer.from_hf(minilm_dir() if _is_preset(init) else init)


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
