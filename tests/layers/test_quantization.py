import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from tests.conftest import TINY, tiny_batch

pytestmark = pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")

# keras-hub's layer names -> kbert's, inside a transformer block.
KERAS_HUB_NAMES = {
    "self_attention_layer/attention_output": "self_attention/output_dense",
    "self_attention_layer_norm": "attention_layer_norm",
    "feedforward_intermediate_dense": "intermediate_dense",
    "feedforward_output_dense": "output_dense",
    "feedforward_layer_norm": "output_layer_norm",
}
QKV = ("query", "key", "value")


def copy_weights_to_keras_hub(backbone, hub):
    """Gives keras-hub's `BertBackbone` kbert's weights, the fused kernels cut into its per-head ones."""
    source = {w.path: ops.convert_to_numpy(w) for w in backbone.weights}
    for weight in hub.weights:
        block, _, rest = weight.path.partition("/")
        layer, _, kind = rest.rpartition("/")
        part = layer.rpartition("/")[2]
        if part in QKV:
            fused = source[f"{block}/self_attention/qkv_dense/{kind}"]
            value = np.split(fused, 3, axis=-1)[QKV.index(part)]
        else:
            value = source[f"{block}/{KERAS_HUB_NAMES.get(layer, layer)}/{kind}" if layer else weight.path]
        weight.assign(value.reshape(weight.shape))


def int8_error(model, batch):
    """Largest change of `sequence_output` when `model` is quantized to int8 in place."""
    before = ops.convert_to_numpy(model(batch)["sequence_output"])
    model.quantize("int8")
    return np.abs(ops.convert_to_numpy(model(batch)["sequence_output"]) - before).max()


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason=(
    "keras-hub's int8 is Keras's on every backend (the errors agreed to 1e-6 on all three): once, for CI time"))
def test_int8_backbone_moves_outputs_no_more_than_keras_hub():
    keras_hub = pytest.importorskip("keras_hub")
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(**{**TINY, "dropout": 0.0})
    hub = keras_hub.models.BertBackbone(**{**TINY, "dropout": 0.0})
    copy_weights_to_keras_hub(backbone, hub)
    batch = tiny_batch(batch=4, length=TINY["max_sequence_length"])
    # The same weights quantized the same way (per-channel kernels, per-token inputs): the
    # errors agreed to 1e-6 on every backend (0.009 to 0.014); the slack covers a rounding tie.
    # Before the fix, the fused QKV was multiplied by raw int8 and kbert's error was 3.3.
    kbert_error, hub_error = int8_error(backbone, batch), int8_error(hub, batch)
    assert kbert_error <= 1.25 * hub_error, (kbert_error, hub_error)
