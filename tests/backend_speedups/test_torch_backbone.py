import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from tests.conftest import TINY, tiny_batch

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="PyTorch's inference forward pass")


def randomized(backbone, seed=0):
    """`backbone` with every weight random (biases, layer norms and the pooler too, not their
    initial zeros and ones), so that a weight read wrongly or not at all shows."""
    rng = np.random.default_rng(seed)
    backbone.set_weights([rng.normal(0, 0.5, w.shape).astype(w.dtype) for w in backbone.get_weights()])
    return backbone


def outputs(backbone, batch, plain_torch, monkeypatch, **kwargs):
    """The backbone's outputs as numpy float32, computed by `backbone_forward` or by Keras's graph."""
    if not plain_torch:
        monkeypatch.setattr(BertBackbone, "_runs_in_plain_torch", lambda *args: False)
    out = backbone(batch, **kwargs)
    monkeypatch.undo()
    return {k: ops.convert_to_numpy(ops.cast(v, "float32")) for k, v in out.items()}


@pytest.mark.parametrize("dtype, atol", [("float32", 2e-6), ("bfloat16", 1e-2)])
def test_plain_torch_forward_gives_the_keras_graphs_outputs(dtype, atol, monkeypatch):
    backbone = randomized(BertBackbone(**TINY, dropout=0.3, dtype=dtype))
    batch = tiny_batch(batch=3, length=9)  # padded rows and a second segment
    fast = outputs(backbone, batch, True, monkeypatch)
    graph = outputs(backbone, batch, False, monkeypatch)
    mask = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(fast["sequence_output"][mask], graph["sequence_output"][mask], atol=atol)
    np.testing.assert_allclose(fast["pooled_output"], graph["pooled_output"], atol=atol)
    assert np.abs(graph["sequence_output"]).mean() > 0.1  # not trivially close


def test_a_row_of_padding_alone_gets_the_keras_graphs_outputs(monkeypatch):
    """Keras adds a large negative bias to padded keys, so a row with no real token attends to
    every key alike; a boolean mask in torch's attention would give other numbers there."""
    backbone = randomized(BertBackbone(**TINY))
    batch = tiny_batch()
    batch["padding_mask"][1] = 0
    fast = outputs(backbone, batch, True, monkeypatch)
    graph = outputs(backbone, batch, False, monkeypatch)
    np.testing.assert_allclose(fast["pooled_output"], graph["pooled_output"], atol=2e-6)


def test_the_lora_updated_kernels_are_read(monkeypatch):
    backbone = randomized(BertBackbone(**TINY))
    dense = backbone.get_layer("transformer_layer_1").intermediate_dense
    dense.enable_lora(2, b_initializer="normal")
    batch = tiny_batch()
    fast = outputs(backbone, batch, True, monkeypatch)
    graph = outputs(backbone, batch, False, monkeypatch)
    np.testing.assert_allclose(fast["pooled_output"], graph["pooled_output"], atol=2e-6)


@pytest.fixture
def forward_calls(monkeypatch):
    """How many times `BertBackbone.call` handed its work to `backbone_forward`."""
    import kbert.backend_speedups.torch_backbone as torch_backbone

    calls = []
    real = torch_backbone.backbone_forward
    monkeypatch.setattr(torch_backbone, "backbone_forward", lambda *args: calls.append(1) or real(*args))
    return calls


def test_inference_calls_use_it(forward_calls):
    backbone = BertBackbone(**TINY)
    backbone(tiny_batch())
    backbone(tiny_batch(), training=False)
    backbone.predict(tiny_batch(), verbose=0)
    assert len(forward_calls) == 3


@pytest.mark.parametrize("case", ["training", "mixed_bfloat16", "int8", "building a model"])
def test_where_it_would_change_something_keras_runs_the_graph(case, forward_calls):
    backbone = BertBackbone(**TINY, dtype="mixed_bfloat16" if case == "mixed_bfloat16" else None)
    if case == "int8":
        backbone.quantize("int8")
    if case == "building a model":
        inputs = backbone.input
        keras.Model(inputs, backbone(inputs)["pooled_output"])
    else:
        backbone(tiny_batch(), training=case == "training")
    assert forward_calls == []
