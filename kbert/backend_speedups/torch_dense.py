"""Keras's `Dense` under PyTorch with its bias added inside the matmul (imports torch: torch backend only)."""

import torch
from keras import ops


def dense_call(layer, inputs):
    """What `layer.call(inputs)` computes for a float `keras.layers.Dense`, the bias added
    inside the matmul.

    Keras's `Dense.call` is a matmul, then an add that reads and writes the whole output again;
    `torch.nn.functional.linear` is one `addmm`. Same kernel (with LoRA's update when enabled,
    as `layer.kernel` gives it), bias and activation; sums round differently (all-MiniLM-L6-v2's
    pooled outputs move by up to 1.2e-6).
    Called by `kbert.backend_speedups.sublayer_calls.sublayer_call` at inference, never for a quantized
    layer (`tests/backend_speedups/test_torch_dense.py` compares it with `Dense.__call__`).
    """
    kernel = ops.convert_to_tensor(layer.kernel)
    bias = None if layer.bias is None else ops.convert_to_tensor(layer.bias)
    return layer.activation(torch.nn.functional.linear(inputs, kernel.T, bias))
