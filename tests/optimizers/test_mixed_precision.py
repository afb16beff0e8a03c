"""bfloat16_compute: the global dtype policy "mixed_bfloat16" inside the block, the previous one after it."""

import keras
import pytest

from kbert.optimizers import bfloat16_compute


@pytest.fixture(autouse=True)
def float32_after():
    yield
    keras.config.set_dtype_policy("float32")


def test_layers_built_inside_compute_in_bfloat16_and_keep_float32_weights():
    with bfloat16_compute():
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
        inside = keras.layers.Dense(2)
    outside = keras.layers.Dense(2)
    assert (inside.compute_dtype, inside.variable_dtype) == ("bfloat16", "float32")
    assert (outside.compute_dtype, outside.variable_dtype) == ("float32", "float32")
    assert keras.config.dtype_policy().name == "float32"


def test_disabled_builds_under_float32_and_restores_any_previous_policy():
    keras.config.set_dtype_policy("mixed_float16")
    with bfloat16_compute(enabled=False):
        assert keras.config.dtype_policy().name == "float32"
    assert keras.config.dtype_policy().name == "mixed_float16"
    with bfloat16_compute():
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
    assert keras.config.dtype_policy().name == "mixed_float16"


def test_the_policy_is_restored_when_the_block_raises():
    with pytest.raises(KeyboardInterrupt):
        with bfloat16_compute():
            raise KeyboardInterrupt
    assert keras.config.dtype_policy().name == "float32"
