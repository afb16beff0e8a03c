"""Inference in bfloat16: copies of a model whose backbone is built under Keras's "bfloat16" policy."""

import weakref

# dtype -> backbone policy. Inference only, so the copy stores its weights in bfloat16 too:
# "mixed_bfloat16" (float32 weights, cast on every call) ran STS-B through all-MiniLM-L6-v2 on
# torch at 1.26x float32, "bfloat16" at 1.55x, with embeddings as close (cosine >= 0.9998).
COMPUTE_POLICIES = {"float32": "float32", "bfloat16": "bfloat16"}
_copies = weakref.WeakKeyDictionary()  # model -> its copy for each dtype


def with_compute_dtype(model, dtype):
    """`model` computing in `dtype`: itself for "float32"; for "bfloat16", a copy whose
    backbone is built once under the "bfloat16" policy (weights stored and multiplied in
    bfloat16; Keras's layer norms normalize in float32) and given `model`'s current weights,
    rounded to bfloat16, on every call.

    `model` is a `BertBackbone`, or a model whose config holds one under "backbone" (the
    task models). Only the backbone's policy changes: heads keep their own dtype.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("bert_tiny")
    >>> with_compute_dtype(backbone, "bfloat16").get_layer("token_embedding").dtype_policy.name
    'bfloat16'
    >>> with_compute_dtype(backbone, "float32") is backbone
    True
    """
    if dtype not in COMPUTE_POLICIES:
        raise ValueError(f"dtype must be one of {sorted(COMPUTE_POLICIES)}, got {dtype!r}.")
    if dtype == "float32":
        return model
    copies = _copies.setdefault(model, {})
    if dtype not in copies:
        config = model.get_config()
        backbone_config = config["backbone"]["config"] if "backbone" in config else config
        backbone_config["dtype"] = COMPUTE_POLICIES[dtype]
        copies[dtype] = type(model).from_config(config)
    copies[dtype].set_weights(model.get_weights())
    return copies[dtype]
