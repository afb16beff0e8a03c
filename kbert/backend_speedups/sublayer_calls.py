import functools

import keras

from kbert.backend_speedups import active


def sublayer_call(layer, training):
    """How a layer calls one of its sublayers: `layer` itself, or at inference, where that changes
    nothing, the sublayer's own `call` without Keras's per-call work.

    Keras's `Layer.__call__` converts inputs, opens name and autocast scopes, resolves masks and
    the `training` argument and, under PyTorch, runs `nn.Module`'s call hooks: on torch (one thread) about a
    fifth of a float32 forward pass of all-MiniLM-L6-v2 on a batch of 32 short sentences. The
    sublayers of a transformer block need none of it at inference when they compute in the
    dtype they store (not under "mixed_bfloat16"), are not quantized (a quantized layer runs
    `quantized_call`) and no `keras.distribution` lays out their outputs; then their `call` is
    used directly, and under PyTorch a `keras.layers.Dense` adds its bias inside the matmul
    (`kbert.backend_speedups.torch_dense`). In training, `layer`; but under JAX a float
    `keras.layers.Dense` (no `keras.distribution`) computes its matmul through
    `kbert.backend_speedups.jax_dense`, whose kernel gradient XLA:CPU runs in YNNPACK.

    Example:
    >>> import numpy as np
    >>> dense = keras.layers.Dense(2)
    >>> dense.build((None, 3))
    >>> sublayer_call(dense, training=True) is dense or keras.config.backend() == "jax"
    True
    >>> tuple(sublayer_call(dense, training=False)(keras.ops.ones((1, 3))).shape)
    (1, 2)
    """
    if not layer.built or layer.quantization_mode or keras.distribution.distribution() is not None:
        return layer
    dense = type(layer) is keras.layers.Dense
    if training:
        if dense and active("jax_dense"):
            from kbert.backend_speedups.jax_dense import dense_call

            return functools.partial(dense_call, layer)
        return layer
    policy = layer.dtype_policy
    if policy.compute_dtype != policy.variable_dtype or not active("direct_sublayer_calls"):
        return layer
    if dense and active("torch_dense"):
        from kbert.backend_speedups.torch_dense import dense_call

        return functools.partial(dense_call, layer)
    return layer.call
