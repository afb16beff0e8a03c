import keras
import numpy as np
import pytest
from keras import ops

from kbert.layers import MultiHeadSelfAttention, TransformerEncoder
from kbert.backend_speedups.sublayer_calls import sublayer_call


@pytest.fixture(autouse=True)
def speedups_on(monkeypatch):
    """These tests are of the speed-up `direct_sublayer_calls` itself: on, whatever KBERT_SPEEDUPS says
    (tests/backend_speedups/test_switch.py compares models with every speed-up and with none)."""
    monkeypatch.setenv("KBERT_SPEEDUPS", "all")


def built(layer, shape=(2, 3, 4)):
    layer.build(shape)
    return layer


@pytest.mark.parametrize("layer", [keras.layers.Dense(5, activation="tanh"), keras.layers.LayerNormalization()])
def test_inference_calls_give_the_layers_outputs(layer):
    layer = built(layer)
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32"))
    fast = sublayer_call(layer, training=False)
    assert fast is not layer
    np.testing.assert_allclose(ops.convert_to_numpy(fast(x)), ops.convert_to_numpy(layer(x)), atol=1e-6)


def test_the_layer_itself_where_its_per_call_work_matters():
    dense = built(keras.layers.Dense(5))
    assert (sublayer_call(dense, training=True) is dense) == (keras.config.backend() != "jax")
    norm = built(keras.layers.LayerNormalization())
    assert sublayer_call(norm, training=True) is norm
    unbuilt = keras.layers.Dense(5)
    assert sublayer_call(unbuilt, training=False) is unbuilt
    mixed = built(keras.layers.Dense(5, dtype="mixed_bfloat16"))  # float32 weights cast on every call
    assert sublayer_call(mixed, training=False) is mixed
    quantized = built(keras.layers.Dense(8))
    quantized.quantize("int8")  # runs `quantized_call`, not `call`
    assert sublayer_call(quantized, training=False) is quantized


def test_attention_projects_alike_at_inference_and_in_training():
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    layer = MultiHeadSelfAttention(num_heads=2)
    layer(x, np.ones((2, 5)))
    fused = layer._project(ops.convert_to_tensor(x), training=False)  # one matmul, then indexed
    sliced = layer._project(ops.convert_to_tensor(x), training=True)  # each third of the kernel
    for a, b in zip(fused, sliced):
        assert tuple(a.shape) == (2, 5, 2, 4)
        np.testing.assert_allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), atol=1e-5)


def test_a_block_gives_the_same_outputs_at_inference_and_in_training_without_dropout():
    block = TransformerEncoder(num_heads=2, intermediate_dim=12, dropout=0.0)
    x = np.random.default_rng(2).normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    inference = ops.convert_to_numpy(block(x, padding_mask=mask))
    training = ops.convert_to_numpy(block(x, padding_mask=mask, training=True))  # every sublayer's __call__
    np.testing.assert_allclose(inference, training, atol=1e-5)


@pytest.mark.parametrize("activation, lora, dtype", [(None, False, None), ("gelu", True, None),
                                                     (None, False, "mixed_bfloat16")])
def test_training_calls_give_the_layers_outputs(activation, lora, dtype):
    """Under JAX a Dense in training goes through `jax_dense.dense_call`; elsewhere it is the layer."""
    layer = built(keras.layers.Dense(6, activation=activation, bias_initializer="normal", dtype=dtype))
    if lora:
        layer.enable_lora(2, b_initializer="normal")  # the kernel read is the LoRA-updated one
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32"))
    if dtype:
        x = ops.cast(x, "bfloat16")
    call = sublayer_call(layer, training=True)
    expected, got = layer(x, training=True), call(x)
    assert got.dtype == expected.dtype
    tolerance = 1e-2 if dtype else 1e-6
    np.testing.assert_allclose(ops.convert_to_numpy(ops.cast(got, "float32")),
                               ops.convert_to_numpy(ops.cast(expected, "float32")), atol=tolerance)
