"""Where a run starts from (`--init`) and how a backbone is saved for the next run.

A kbert backbone folder holds `backbone.keras` (loads under any backend), `vocab.txt`
and `tokenizer_config.json` (the tokenizer, in Hugging Face's layout).
"""

import pathlib

import keras

from kbert.config import PRESETS

BACKBONE_FILE = "backbone.keras"


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
    from kbert.paths import minilm_dir
    from kbert.text import BertTokenizer
    from kbert.training.run_folder import MODEL_FILE

    init = str(init)
    if init in PRESETS:
        return BertBackbone.from_preset(init, **overrides), BertTokenizer.from_hf(minilm_dir())
    if init == "all_minilm_l6_v2":
        return BertBackbone.from_hf(minilm_dir(), **overrides), BertTokenizer.from_hf(minilm_dir())
    folder = pathlib.Path(init)
    saved = next((folder / name for name in (BACKBONE_FILE, MODEL_FILE) if (folder / name).is_file()), None)
    if saved:
        if overrides:
            raise ValueError(f"{folder}: a saved backbone is loaded as saved; got overrides {overrides}.")
        model = keras.saving.load_model(saved, compile=False, safe_mode=True)
        backbone = _under_global_policy(model if saved.name == BACKBONE_FILE else model.backbone)
        backbone.train_pooler(True)  # NER, QA and MLM-only models froze it
        tokenizer = BertTokenizer.from_hf(folder)
    elif (folder / "config.json").is_file():
        backbone, tokenizer = BertBackbone.from_hf(folder, **overrides), BertTokenizer.from_hf(folder)
    else:
        raise FileNotFoundError(
            f"--init {init!r} is neither a preset ({sorted(PRESETS)} or 'all_minilm_l6_v2'), "
            f"a Hugging Face folder with config.json, nor a kbert folder with {BACKBONE_FILE} or {MODEL_FILE}."
        )
    if backbone.vocabulary_size != tokenizer.vocabulary_size:
        raise ValueError(
            f"{folder}: the backbone has {backbone.vocabulary_size} token ids but vocab.txt has "
            f"{tokenizer.vocabulary_size} tokens."
        )
    return backbone, tokenizer


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
