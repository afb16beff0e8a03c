"""Code that makes one backend faster and changes no result: every backend-specific speed-up, and the one
switch that turns them off.

Each speed-up has a name in `SPEEDUPS` (with the backend it is for) and runs where `active(name)` says so;
the layers, the optimizer and `BertTask.fit` ask it at each call. The environment variable
`KBERT_SPEEDUPS` chooses: unset or `all`, every one; `0` or `none`, none (Keras's own path everywhere: to
debug, or to compare); a comma-separated list of names, those alone; or of names each after a `-`, all
but those.

- `direct_sublayer_calls`: at inference a transformer block calls its sublayers' own `call`, without
  Keras's per-call work (`kbert.backend_speedups.sublayer_calls.sublayer_call`; every backend).
- `torch_dense`: at inference a `keras.layers.Dense` adds its bias inside the matmul (`torch_dense.dense_call`).
- `torch_backbone`: a `BertBackbone`'s forward pass as plain torch calls on its own weights, at inference and
  in training (fused attention with dropout), where nothing needs the graph (`torch_backbone.backbone_forward`).
- `torch_dropout`: dropout's mask from `torch.rand` instead of `bernoulli_` in training (`torch_dropout.dropout`).
- `torch_foreach_adamw`: `BertAdamW`'s update and global-norm clipping as fused list ops (`torch_foreach_adamw`).
- `torch_train_step`: what `BertTask`'s steps read from the model (trainable weights, optimizer moments, metrics,
  the backbone's weights) gathered once and kept until the model changes, and `fit`'s training step on them with the
  weight decay inside `torch_foreach_adamw`'s update (`torch_train_step.train_step`).
- `torch_predict_step`: `predict`'s step runs the task model's graph calling each node's own `call` where Keras's
  `Layer.__call__` would change nothing, with what it needs gathered as `torch_train_step` gathers
  (`torch_predict_step.predict_step`).
- `tensorflow_attention`: attention at inference as two batched matmuls on heads-first transposes with the mask
  added to the scores (`MultiHeadSelfAttention._matmul_attention`), not Keras's two einsums and a `where` over
  every score: TensorFlow's predict ~6% faster, and what tf2onnx writes for it is plain MatMul and Transpose
  nodes (the ONNX export 806 -> 467 nodes).
- `tensorflow_build_first`: a task's optimizer variables made before `fit` traces its training step (Keras makes
  them in the first trace, which makes TensorFlow trace it a second time): traced once, the five `bert_tiny` tasks
  of tests/tasks/test_task_api.py fit 16-30% sooner (`tensorflow_build_first.build_optimizer_first`).
- `tensorflow_open_predict`: a task's predict function traced once for batches of any size and length, not per
  shape as Keras traces it (three graphs for raw inputs served in batches of similar length:
  `tensorflow_open_predict.trace_for_any_shape`).
- `jax_dense`: dense matmuls whose kernel gradients XLA:CPU runs in YNNPACK, in training (`jax_dense`).
- `jax_gelu`: the exact GELU written out with `erf` (`ops.gelu` lowers to `erfc`, fused into more passes).
- `jax_dropout_masks`: while `BertTask.fit` trains, dropout masks from JAX's classic threefry stream, about
  2x faster on a CPU than the partitionable one (`fast_dropout.fast_dropout_masks`).
"""

import functools
import os

# name -> the Keras backend it is for (None: every backend)
SPEEDUPS = {"direct_sublayer_calls": None, "torch_dense": "torch", "torch_backbone": "torch",
            "torch_dropout": "torch", "torch_foreach_adamw": "torch", "torch_train_step": "torch",
            "torch_predict_step": "torch", "tensorflow_attention": "tensorflow",
            "tensorflow_build_first": "tensorflow", "tensorflow_open_predict": "tensorflow",
            "jax_dense": "jax", "jax_gelu": "jax",
            "jax_dropout_masks": "jax"}


def chosen(value=None):
    """The names that `value`, by default `KBERT_SPEEDUPS` (read at each call), turns on; a ValueError for a
    name it does not know.

    Example:
    >>> sorted(chosen("torch_dense,jax_gelu"))
    ['jax_gelu', 'torch_dense']
    >>> chosen("0")
    frozenset()
    >>> "torch_backbone" in chosen("-torch_backbone"), "torch_dense" in chosen("-torch_backbone")
    (False, True)
    >>> len(chosen("all")) == len(SPEEDUPS)
    True
    """
    if value is None:
        value = os.environ.get("KBERT_SPEEDUPS", "all")
    return _parse(value.strip().lower())


@functools.cache  # `active` runs at every sublayer call of a forward pass: each value is parsed once
def _parse(value):
    if value in ("", "1", "all"):
        return frozenset(SPEEDUPS)
    if value in ("0", "none"):
        return frozenset()
    names = [name.strip() for name in value.split(",") if name.strip()]
    left_out = [name[1:] for name in names if name.startswith("-")]
    unknown = sorted(set(left_out or names) - set(SPEEDUPS))
    if unknown or left_out and len(left_out) != len(names):
        raise ValueError(f"KBERT_SPEEDUPS={value!r}: unknown speed-up(s) {unknown}; give 0, all, names among "
                         f"{sorted(SPEEDUPS)}, or names each after a '-' (all but those), not both.")
    return frozenset(SPEEDUPS) - set(left_out) if left_out else frozenset(names)


def active(name):
    """Whether the speed-up `name` runs now: Keras's backend is the one it is for, and `KBERT_SPEEDUPS` allows it.

    Example:
    >>> import keras
    >>> active("jax_gelu") == ("jax_gelu" in chosen() and keras.config.backend() == "jax")
    True
    """
    import keras

    backend = SPEEDUPS[name]
    return name in chosen() and backend in (None, keras.config.backend())
