"""`mixed_precision` of the recipes (`kbert.recipes`): build the model under Keras's "mixed_bfloat16" policy."""

import contextlib

import keras


@contextlib.contextmanager
def bfloat16_compute(enabled=True):
    """Sets the global dtype policy to "mixed_bfloat16" (else "float32") inside the block, then restores it.

    Build the model inside the block: its layers keep that policy for good, computing in
    bfloat16 with float32 weights, while models built after the block (the copy that
    `write_run_folder` saves, a reloaded run) get the previous policy, float32 by default.
    The task heads compute in float32 whatever the policy, so the loss sees float32 logits.

    Args:
        enabled: bool. False builds under "float32".

    Example:
    >>> with bfloat16_compute():
    ...     layer = keras.layers.Dense(2)
    >>> layer.compute_dtype, layer.variable_dtype, keras.config.dtype_policy().name
    ('bfloat16', 'float32', 'float32')
    """
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16" if enabled else "float32")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
