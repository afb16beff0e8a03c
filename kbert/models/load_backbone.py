from kbert.models.bert_backbone import BertBackbone
from kbert.saving import load_tokenizer, model_source
from kbert.saving.saved_models import under_global_policy


def load_backbone(init, **overrides):
    """Returns `(backbone, tokenizer)` for `init`, the one argument every app takes.

    Args:
        init: str, path or `kbert.saving.ModelSource` (`model_source` tells the kinds apart), one of:
            - a preset name from `kbert.PRESETS` (random weights, MiniLM's uncased vocabulary);
            - "all_minilm_l6_v2", the real pretrained checkpoint;
            - a Hugging Face BERT folder (`config.json`, `model.safetensors`, `vocab.txt`);
            - a kbert backbone folder written by `kbert.save_backbone` (e.g. by apps/pretrain.py);
            - a task run folder (`model.keras`, e.g. from apps/qa.py): its fine-tuned backbone,
              without the task's head, to fine-tune further;
            - a `.keras` file of a backbone or a task model.
        **overrides: constructor arguments for presets and Hugging Face folders (e.g. `dropout`).

    Every kind computes under the global dtype policy (e.g. "mixed_bfloat16" for
    `mixed_precision`), also a saved backbone whose file names another policy.

    Example:
    >>> backbone, tokenizer = load_backbone("bert_tiny")
    >>> backbone.vocabulary_size == tokenizer.vocabulary_size
    True
    """
    source = model_source(init)
    saved = source.saved_model
    if saved is not None:
        if overrides:
            raise ValueError(f"{source.given}: a saved backbone is loaded as saved; got overrides {overrides}.")
        backbone = under_global_policy(saved if isinstance(saved, BertBackbone) else saved.backbone)
    elif source.kind == "preset":
        backbone = BertBackbone.from_preset(source.given, **overrides)
    else:
        backbone = BertBackbone.from_hf(source.checkpoint, **overrides)
    return backbone, load_tokenizer(source, backbone)
