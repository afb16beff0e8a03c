def enable_lora(model, rank, target_names=("qkv_dense",)):
    """Freezes `model` and adds trainable low-rank updates (Keras's LoRA) to the named Dense layers.

    Every weight of `model` is frozen; the layers named in `target_names` (by default the
    fused query/key/value projection of each attention block) get trainable LoRA factors
    through Keras's `Dense.enable_lora`. Layers outside `model`, such as a task head,
    stay trainable. Saving merges the updates into the kernels: a saved model is a plain one.

    Args:
        model: a Keras model, typically a `BertBackbone`.
        rank: int. Rank of the updates.
        target_names: names of the Dense layers to adapt.

    Returns: the number of layers adapted.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("bert_tiny")
    >>> enable_lora(backbone, rank=4)
    2
    >>> [v.path for v in backbone.trainable_weights][:2]
    ['transformer_layer_0/self_attention/qkv_dense/lora_kernel_a', 'transformer_layer_0/self_attention/qkv_dense/lora_kernel_b']
    """
    for variable in model.weights:
        variable.trainable = False
    targets = [layer for layer in model._flatten_layers(include_self=False)
               if layer.name in target_names and hasattr(layer, "enable_lora")]
    if not targets:
        raise ValueError(f"No layer named {list(target_names)} to adapt with LoRA.")
    for layer in targets:
        layer.enable_lora(rank)
    return len(targets)
