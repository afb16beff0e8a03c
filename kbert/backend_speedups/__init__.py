"""Code that makes one backend faster and changes no result: every backend-specific speed-up in one place.

- `fast_dropout.use_fast_dropout_masks`: JAX's classic threefry stream for dropout masks on CPU.
- `torch_foreach_adamw.foreach_update`: `BertAdamW`'s update as fused list ops under PyTorch
  (imported by `kbert.optimizers.bert_adamw` under the torch backend only: it imports torch).
- `torch_dropout.dropout`: dropout's mask from `torch.rand` instead of `bernoulli_` under PyTorch
  (`kbert.layers.Dropout` uses it in training, torch only).
- `jax_dense.matmul`, `jax_dense.dense_call`: dense matmuls written so that XLA:CPU runs their kernel
  gradients in YNNPACK under JAX (`MultiHeadSelfAttention`'s projections and, through
  `kbert.layers.sublayer_calls.sublayer_call`, every `keras.layers.Dense` of a block in training).
- `torch_dense.dense_call`: a `keras.layers.Dense` with its bias added inside the matmul under
  PyTorch (`kbert.layers.sublayer_calls.sublayer_call` uses it at inference, torch only).
- `torch_backbone.backbone_forward`: a `BertBackbone`'s forward pass as plain torch calls on its own
  weights, at inference and in training (fused attention with dropout), where nothing needs the graph
  (`BertBackbone.call`, torch only). `KBERT_SPEEDUPS=0` turns it off (`enabled`).
"""

import os

from kbert.backend_speedups.fast_dropout import use_fast_dropout_masks


def enabled():
    """Whether the backbone's plain-torch pass may run: unless the environment sets KBERT_SPEEDUPS to 0 (to
    debug, or to compare with Keras's graph), read at each call.

    Example:
    >>> os.environ["KBERT_SPEEDUPS"] = "0"; enabled()
    False
    >>> del os.environ["KBERT_SPEEDUPS"]; enabled()
    True
    """
    return os.environ.get("KBERT_SPEEDUPS", "1") != "0"
