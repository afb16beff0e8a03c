"""Mixed precision: `mixed_compute` (the recipes' `mixed_precision`: build the model under Keras's "mixed_bfloat16"
or "mixed_float16" policy), with a warning where bfloat16 is emulated (`warn_if_bfloat16_is_emulated`) or float16
computes on a CPU, and the loss scaling of a backbone computing in float16
(`loss_scaled`, what a task's `compile` wraps)."""

import contextlib
import warnings

import keras

from kbert_core.cpu import BFLOAT16_FLAGS, bfloat16_units, cpu_info

# A recipe's `mixed_precision` setting (True: bfloat16) -> the dtype policy it builds under
MIXED_POLICIES = {False: "float32", None: "float32", "float32": "float32", True: "mixed_bfloat16",
                  "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def compute_dtype_name(mixed_precision):
    """The compute dtype a recipe's `mixed_precision` setting means: "float32", "bfloat16" or "float16".

    Example:
    >>> compute_dtype_name(True), compute_dtype_name("float16"), compute_dtype_name(False)
    ('bfloat16', 'float16', 'float32')
    """
    if mixed_precision not in MIXED_POLICIES:
        raise ValueError(f"mixed_precision must be one of {list(MIXED_POLICIES)}, got {mixed_precision!r}.")
    return MIXED_POLICIES[mixed_precision].removeprefix("mixed_")


def check_mixed_precision(mixed_precision):
    """The compute dtype of a `mixed_precision` setting (`compute_dtype_name`), or a ValueError where it cannot
    compute here: float16 under JAX on a CPU. What `mixed_compute` checks first, and a recipe before it writes.

    Example:
    >>> check_mixed_precision(True)
    'bfloat16'
    """
    dtype = compute_dtype_name(mixed_precision)
    if dtype == "float16" and keras.config.backend() == "jax" and _computes_on_the_cpu():
        raise ValueError("float16 compute under JAX needs a GPU: XLA's CPU has no float16 matmul with float32 "
                         "results, which attention at inference takes. Use bfloat16 or float32 here.")
    return dtype


@contextlib.contextmanager
def mixed_compute(mixed_precision="bfloat16"):
    """Sets the global dtype policy to "mixed_bfloat16" or "mixed_float16" (else "float32") inside the block, then
    restores it.

    Build the model inside the block: its layers keep that policy for good, computing in
    bfloat16 or float16 with float32 weights, while models built after the block (the copy that
    `write_run_folder` saves, a reloaded run) get the previous policy, float32 by default.
    The task heads compute in float32 whatever the policy, so the loss sees float32 logits; a backbone
    computing in float16 trains under loss scaling (`loss_scaled`).

    Args:
        mixed_precision: "bfloat16" (or True), "float16" (for GPUs without bfloat16: warns on a CPU, and is refused
            under JAX there), or False / None / "float32".

    Example:
    >>> with mixed_compute():
    ...     layer = keras.layers.Dense(2)
    >>> layer.compute_dtype, layer.variable_dtype, keras.config.dtype_policy().name
    ('bfloat16', 'float32', 'float32')
    """
    dtype = check_mixed_precision(mixed_precision)
    if dtype == "bfloat16":
        warn_if_bfloat16_is_emulated()
    elif dtype == "float16" and _computes_on_the_cpu():
        warnings.warn("float16 compute on a CPU: emulated, many times slower than float32 (float16 is for GPUs "
                      "without bfloat16).", stacklevel=3)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(MIXED_POLICIES[mixed_precision])
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def warn_if_bfloat16_is_emulated(cpu_flags=None):
    """Warns, and returns the warning, when the backend computes on the CPU (no GPU visible to it) and the CPU has no
    bfloat16 units (`kbert_core.cpu.bfloat16_units`), where bfloat16 compute is emulated and slower than float32
    (on a 2-core Xeon without them, 500 steps of a 4 x 128 pretraining took 1.6x as long as in float32). None elsewhere.
    `cpu_flags`: this CPU's by default.

    Example:
    >>> warn_if_bfloat16_is_emulated(cpu_flags={"avx512_bf16"}) is None
    True
    """
    if bfloat16_units(cpu_flags) or not _computes_on_the_cpu():
        return None
    message = (f"bfloat16 compute on a CPU without bfloat16 units ({cpu_info()[0]}: no {' or '.join(BFLOAT16_FLAGS)}): "
               "emulated, slower than float32 here.")
    warnings.warn(message, stacklevel=2)
    return message


def _computes_on_the_cpu():
    backend = keras.config.backend()
    if backend == "torch":
        import torch

        return not torch.cuda.is_available()
    if backend == "jax":
        import jax

        return jax.default_backend() == "cpu"
    import tensorflow  # the backend, loaded with Keras

    return not tensorflow.config.list_physical_devices("GPU")


def loss_scaled(optimizer, compute_dtype, auto_scale_loss=True):
    """`optimizer` in a `LossScaleOptimizer` for a model whose backbone computes in float16 (Keras wraps it only
    for a model whose own policy is "mixed_float16"); a ValueError where scaling is turned off.

    Args:
        optimizer: a Keras optimizer or its name, or None (returned as it is).
        compute_dtype: str. The backbone's compute dtype; anything but "float16" leaves `optimizer` as it is.
        auto_scale_loss: bool. False refuses float16 without a `LossScaleOptimizer` of the caller's.

    Example:
    >>> type(loss_scaled("sgd", "float16")).__name__
    'LossScaleOptimizer'
    >>> loss_scaled("sgd", "float32")
    'sgd'
    """
    if compute_dtype != "float16" or optimizer is None:
        return optimizer
    optimizer = keras.optimizers.get(optimizer)
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer
    if not auto_scale_loss:
        raise ValueError("The backbone computes in float16, whose gradients below 6e-8 round to 0 without "
                         "loss scaling: compile with auto_scale_loss=True (the default) or a "
                         "keras.optimizers.LossScaleOptimizer.")
    return keras.optimizers.LossScaleOptimizer(optimizer)
