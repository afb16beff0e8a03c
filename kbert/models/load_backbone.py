from kbert.models.bert_backbone import BertBackbone
from kbert.saving import is_preset, load_saved_model, load_tokenizer
from kbert.saving.saved_models import under_global_policy


def load_backbone(init, **overrides):
    """Returns `(backbone, tokenizer)` for `init`, the one argument every app takes.

    Args:
        init: str or path, one of:
            - a preset name from `kbert.PRESETS` (random weights, MiniLM's uncased vocabulary);
            - "all_minilm_l6_v2", the real pretrained checkpoint;
            - a Hugging Face BERT folder (`config.json`, `model.safetensors`, `vocab.txt`);
            - a kbert backbone folder written by `kbert.save_backbone` (e.g. by apps/pretrain.py);
            - a task run folder (`model.keras`, e.g. from apps/qa.py): its fine-tuned backbone,
              without the task's head, to fine-tune further.
        **overrides: constructor arguments for presets and Hugging Face folders (e.g. `dropout`).

    Every kind computes under the global dtype policy (e.g. "mixed_bfloat16" for
    `mixed_precision`), also a saved backbone whose file names another policy.

    Example:
    >>> backbone, tokenizer = load_backbone("bert_tiny")
    >>> backbone.vocabulary_size == tokenizer.vocabulary_size
    True
    """
    saved = load_saved_model(init)
    if saved is not None:
        if overrides:
            raise ValueError(f"{init}: a saved backbone is loaded as saved; got overrides {overrides}.")
        backbone = under_global_policy(saved if isinstance(saved, BertBackbone) else saved.backbone)
    elif is_preset(init):
        backbone = BertBackbone.from_preset(str(init), **overrides)
    else:
        backbone = BertBackbone.from_hf(init, **overrides)
    return backbone, load_tokenizer(init, backbone)
