import keras
import numpy as np
import pytest
from keras import ops

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="PyTorch's fused bias add")


@pytest.mark.parametrize("use_bias, activation, lora", [(True, None, False), (True, "gelu", True), (False, None, False)])
def test_dense_call_gives_keras_dense_outputs(use_bias, activation, lora):
    from kbert.backend_speedups.torch_dense import dense_call

    layer = keras.layers.Dense(6, use_bias=use_bias, activation=activation, bias_initializer="normal")
    layer.build((None, 4))
    if lora:
        layer.enable_lora(2, b_initializer="normal")  # the kernel read is the LoRA-updated one
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32"))
    np.testing.assert_allclose(ops.convert_to_numpy(dense_call(layer, x)), ops.convert_to_numpy(layer(x)), atol=1e-6)
