"""mixed_compute: the global dtype policy "mixed_bfloat16" or "mixed_float16" inside the block, the previous one after
it, with a warning where bfloat16 is emulated or float16 computes on a CPU; loss_scaled: a float16 backbone's optimizer
under loss scaling."""

import warnings

import keras
import pytest

from kbert.optimizers import mixed_compute
from kbert.optimizers.mixed_precision import loss_scaled


@pytest.fixture(autouse=True)
def float32_after():
    yield
    keras.config.set_dtype_policy("float32")


def test_layers_built_inside_compute_in_bfloat16_and_keep_float32_weights():
    with mixed_compute():
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
        inside = keras.layers.Dense(2)
    outside = keras.layers.Dense(2)
    assert (inside.compute_dtype, inside.variable_dtype) == ("bfloat16", "float32")
    assert (outside.compute_dtype, outside.variable_dtype) == ("float32", "float32")
    assert keras.config.dtype_policy().name == "float32"


def test_disabled_builds_under_float32_and_restores_any_previous_policy():
    keras.config.set_dtype_policy("mixed_float16")
    with mixed_compute(False):
        assert keras.config.dtype_policy().name == "float32"
    assert keras.config.dtype_policy().name == "mixed_float16"
    with mixed_compute():
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
    assert keras.config.dtype_policy().name == "mixed_float16"


def test_float16_compute_warns_on_a_cpu_and_is_refused_there_under_jax(monkeypatch):
    from kbert.optimizers import mixed_precision

    monkeypatch.setattr(mixed_precision, "_computes_on_the_cpu", lambda: True)
    if keras.config.backend() == "jax":
        with pytest.raises(ValueError, match="float16 compute under JAX needs a GPU"):
            with mixed_compute("float16"):
                pass
        with pytest.raises(ValueError, match="float16 compute under JAX needs a GPU"):
            mixed_precision.check_mixed_precision("float16")  # what a recipe checks before it writes
        assert mixed_precision.check_mixed_precision(True) == "bfloat16"
    else:
        with pytest.warns(UserWarning, match="float16 compute on a CPU"):
            with mixed_compute("float16"):
                layer = keras.layers.Dense(2)
        assert (layer.compute_dtype, layer.variable_dtype) == ("float16", "float32")
    assert keras.config.dtype_policy().name == "float32"
    monkeypatch.setattr(mixed_precision, "_computes_on_the_cpu", lambda: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with mixed_compute("float16"):
            assert keras.config.dtype_policy().name == "mixed_float16"


def test_the_recipes_settings_name_their_compute_dtype():
    from kbert.optimizers.mixed_precision import compute_dtype_name

    assert [compute_dtype_name(setting) for setting in (True, "bfloat16", "float16", False, None, "float32")] == [
        "bfloat16", "bfloat16", "float16", "float32", "float32", "float32"]
    with pytest.raises(ValueError, match="mixed_precision must be one of .*'float16'.*got 'fp16'"):
        with mixed_compute("fp16"):
            pass
    assert keras.config.dtype_policy().name == "float32"


def test_the_policy_is_restored_when_the_block_raises():
    with pytest.raises(KeyboardInterrupt):
        with mixed_compute():
            raise KeyboardInterrupt
    assert keras.config.dtype_policy().name == "float32"


def test_a_float16_backbone_trains_under_loss_scaling_and_refuses_to_without():
    scaled = loss_scaled(keras.optimizers.SGD(0.1), "float16")
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert loss_scaled(scaled, "float16") is scaled  # the caller's own
    assert loss_scaled(None, "float16") is None
    optimizer = keras.optimizers.SGD(0.1)
    assert loss_scaled(optimizer, "bfloat16") is optimizer and loss_scaled(optimizer, "float32") is optimizer
    with pytest.raises(ValueError, match="computes in float16.*auto_scale_loss=True"):
        loss_scaled(optimizer, "float16", auto_scale_loss=False)


def test_bfloat16_on_a_cpu_without_bfloat16_units_warns_and_names_the_cpu(monkeypatch):
    from kbert.optimizers import mixed_precision
    from kbert_core.cpu import cpu_info

    monkeypatch.setattr(mixed_precision, "_computes_on_the_cpu", lambda: True)
    with pytest.warns(UserWarning, match="without bfloat16 units") as caught:
        mixed_precision.warn_if_bfloat16_is_emulated(cpu_flags={"avx2", "avx512f"})
    assert cpu_info()[0] in str(caught[0].message)
    assert mixed_precision.warn_if_bfloat16_is_emulated(cpu_flags={"avx512f", "amx_bf16"}) is None
    monkeypatch.setattr(mixed_precision, "_computes_on_the_cpu", lambda: False)  # on a GPU the CPU's units do not matter
    assert mixed_precision.warn_if_bfloat16_is_emulated(cpu_flags=set()) is None

