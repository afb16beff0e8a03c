"""Dense matmuls whose kernel gradient XLA:CPU runs as a YNNPACK dot (JAX only; no JAX import)."""

from keras import ops


def matmul(inputs, kernel):
    """`inputs @ kernel` for a (..., in) input and an (in, out) kernel, written as an einsum
    against the kernel viewed (in, 1, out).

    The same product and the same forward program. What changes is the backward pass of a
    JAX training step on CPU: for `inputs @ kernel`, XLA folds the transpose that JAX puts
    after the kernel gradient `dy^T x` into the dot itself, which becomes `x^T dy` with both
    operands contracted on their first dimension, a dot that XLA:CPU computes itself rather
    than in YNNPACK, about 2x slower at bert_mini's shapes. Behind the unit axis the
    transpose is not folded and the dot stays `dy^T x`, a YNNPACK fusion, as in keras-hub's
    `EinsumDense`. In a bert_mini pretraining step (64 x 64 tokens) the 24 kernel gradients
    of the encoder's projections go to YNNPACK. Gradients round differently (relative 1e-6).
    """
    units = kernel.shape[-1]
    outputs = ops.einsum("...c,cde->...de", inputs, ops.reshape(kernel, (kernel.shape[0], 1, units)))
    return ops.reshape(outputs, (*ops.shape(inputs)[:-1], units))


def dense_call(layer, inputs):
    """What `layer(inputs)` computes for a float `keras.layers.Dense` in training, through
    `matmul`: same kernel (with LoRA's update when enabled, as `layer.kernel` gives it), bias
    and activation. Inputs of rank 2 go through the layer itself (no gain there).
    Called by `kbert.backend_speedups.sublayer_calls.sublayer_call` in JAX training, never for a
    quantized layer."""
    if len(inputs.shape) < 3:
        return layer(inputs)
    dtype = layer.compute_dtype  # as `Layer.__call__` casts (a no-op inside a block's own autocast scope)
    outputs = matmul(ops.cast(inputs, dtype), ops.cast(layer.kernel, dtype))
    if layer.bias is not None:
        outputs = ops.add(outputs, ops.cast(layer.bias, dtype))
    return outputs if layer.activation is None else layer.activation(outputs)
