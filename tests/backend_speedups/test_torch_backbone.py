import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from tests.conftest import TINY, tiny_batch

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="PyTorch's forward pass")

# The settings of BERT's family (`kbert.BertConfig`), each of which the plain-torch pass must compute as the graph.
FAMILY_SETTINGS = {
    "bert": {},
    "albert: projection, shared blocks, tanh GELU": dict(embedding_dim=6, num_layers=3, num_layer_groups=2,
                                                         activation="gelu_approximate"),
    "roberta: offset positions, one segment": dict(position_offset=2, num_segments=1),
    "distilbert: no segments, no pooler": dict(num_segments=0, pooler=False),
    "electra: projection, no pooler": dict(embedding_dim=12, pooler=False),
}


def family_batch(settings, **kwargs):
    """`tiny_batch`, its segment ids all 0 for a model with fewer than two segments."""
    batch = tiny_batch(**kwargs)
    if settings.get("num_segments", 2) < 2:
        batch["segment_ids"][:] = 0
    return batch


def randomized(backbone, seed=0):
    """`backbone` with every weight random (biases, layer norms and the pooler too, not their
    initial zeros and ones), so that a weight read wrongly or not at all shows."""
    rng = np.random.default_rng(seed)
    backbone.set_weights([rng.normal(0, 0.5, w.shape).astype(w.dtype) for w in backbone.get_weights()])
    return backbone


def outputs(backbone, batch, plain_torch, monkeypatch, **kwargs):
    """The backbone's outputs as numpy float32, computed by `backbone_forward` or by Keras's graph."""
    with monkeypatch.context() as patch:  # undoes its own patch alone, not the test's others
        if not plain_torch:
            patch.setattr(BertBackbone, "_runs_in_plain_torch", lambda *args: False)
        out = backbone(batch, **kwargs)
    return {k: ops.convert_to_numpy(ops.cast(v, "float32")) for k, v in out.items()}


@pytest.mark.parametrize("family", FAMILY_SETTINGS)
@pytest.mark.parametrize("dtype, atol", [("float32", 2e-6), ("bfloat16", None), ("mixed_bfloat16", None)])
def test_plain_torch_forward_gives_the_keras_graphs_outputs(dtype, atol, family, monkeypatch):
    settings = FAMILY_SETTINGS[family]
    backbone = randomized(BertBackbone(**{**TINY, "dropout": 0.3, **settings}, dtype=dtype))
    batch = family_batch(settings, batch=3, length=9)  # padded rows and (with segments) a second segment
    fast = outputs(backbone, batch, True, monkeypatch)
    graph = outputs(backbone, batch, False, monkeypatch)
    assert fast.keys() == graph.keys() == ({"sequence_output"} if backbone.pooler is None
                                           else {"sequence_output", "pooled_output"})
    mask = batch["padding_mask"].astype(bool)
    real = {key: value[mask] if key == "sequence_output" else value for key, value in fast.items()}
    expected = {key: value[mask] if key == "sequence_output" else value for key, value in graph.items()}
    if dtype == "float32":
        for key in real:
            np.testing.assert_allclose(real[key], expected[key], atol=atol, rtol=0, err_msg=key)
    else:  # bfloat16 rounds sums in another order: as close to float32's values as the graph, within half a unit
        exact = BertBackbone(**{**TINY, **settings})
        exact.set_weights([np.asarray(w, "float32") for w in backbone.get_weights()])
        exact = outputs(exact, batch, False, monkeypatch)
        for key in real:
            truth = exact[key][mask] if key == "sequence_output" else exact[key]
            unit = np.abs(truth).max() / 2 ** 8
            assert np.abs(real[key] - truth).max() <= np.abs(expected[key] - truth).max() + unit, key
    assert np.abs(graph["sequence_output"]).mean() > 0.1  # not trivially close


def test_under_a_mixed_policy_the_weights_are_kept_and_cast_where_keras_casts_them(monkeypatch):
    """The variables' own float32 tensors kept (`_gathered_weights`), cast in the pass: the same numbers as the
    weights read in the autocast scope at every call (KBERT_SPEEDUPS=-torch_train_step), and gathered once."""
    from kbert.backend_speedups import torch_backbone

    keras.config.set_dtype_policy("mixed_bfloat16")  # the backbone's own call too, in an autocast scope
    try:
        backbone = randomized(BertBackbone(**TINY))
    finally:
        keras.config.set_dtype_policy("float32")
    batch = tiny_batch()
    walks = []
    real = torch_backbone.backbone_weights
    monkeypatch.setattr(torch_backbone, "backbone_weights", lambda *args: walks.append(1) or real(*args))
    kept = [outputs(backbone, batch, True, monkeypatch) for _ in range(2)]
    assert len(walks) == 1
    monkeypatch.setenv("KBERT_SPEEDUPS", "-torch_train_step")
    read = outputs(backbone, batch, True, monkeypatch)
    for key in read:
        np.testing.assert_array_equal(kept[0][key], read[key], err_msg=key)
        np.testing.assert_array_equal(kept[1][key], read[key], err_msg=key)


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


@pytest.mark.parametrize("training", [False, True])
def test_the_pass_never_waits_for_the_gpu(training):
    """On tensors already on the device, the pass (and in training its backward) makes no tensor from host data
    and reads nothing back: on a GPU either would wait for everything queued (tests/host_transfers.py)."""
    from tests.host_transfers import HostTransfers

    backbone = BertBackbone(**TINY)
    batch = {key: ops.convert_to_tensor(value) for key, value in tiny_batch().items()}
    with HostTransfers() as seen:
        out = backbone(batch, training=training)
        if training:
            out["pooled_output"].sum().backward()
    assert seen.transfers() == []


@pytest.fixture
def forward_calls(monkeypatch):
    """How many times `BertBackbone.call` handed its work to `backbone_forward`."""
    import kbert.backend_speedups.torch_backbone as torch_backbone

    calls = []
    real = torch_backbone.backbone_forward
    monkeypatch.setattr(torch_backbone, "backbone_forward",
                        lambda *args, **kwargs: calls.append(kwargs.get("training", False)) or real(*args, **kwargs))
    return calls


def test_inference_and_training_calls_use_it(forward_calls):
    backbone = BertBackbone(**TINY)
    backbone(tiny_batch())
    backbone(tiny_batch(), training=False)
    backbone.predict(tiny_batch(), verbose=0)
    from kbert.tasks import BertClassifier

    classifier = BertClassifier(backbone, 2)
    assert forward_calls == [False, False, False]
    classifier.fit(tiny_batch(), np.array([0, 1, 0]), epochs=1, verbose=0)
    assert True in forward_calls[3:]  # the training step


@pytest.mark.parametrize("case", ["int8", "building a model", "remat", "seeded dropout",
                                  "KBERT_SPEEDUPS=0"])
def test_where_it_would_change_something_keras_runs_the_graph(case, forward_calls, monkeypatch):
    from kbert.training.remat import rematerialized

    with rematerialized(case == "remat"):
        backbone = BertBackbone(**TINY)
    if case == "int8":
        backbone.quantize("int8")
    if case == "seeded dropout":
        backbone.get_layer("embeddings_dropout").seed = 7
    if case == "KBERT_SPEEDUPS=0":
        monkeypatch.setenv("KBERT_SPEEDUPS", "0")
    if case == "building a model":
        inputs = backbone.input
        keras.Model(inputs, backbone(inputs)["pooled_output"])
    else:
        backbone(tiny_batch(), training=True)
        if case in ("int8", "KBERT_SPEEDUPS=0"):
            backbone(tiny_batch(), training=False)
    assert forward_calls == []


@pytest.mark.parametrize("case", ["int8", "seeded dropout"])
def test_a_setting_changed_after_a_plain_torch_call_still_counts(case, forward_calls):
    backbone = BertBackbone(**TINY)
    backbone(tiny_batch(), training=True)
    if case == "int8":
        backbone.quantize("int8")
    else:
        backbone.get_layer("embeddings_dropout").seed = 7
    backbone(tiny_batch(), training=True)
    assert forward_calls == [True]


def gradients(backbone, batch, plain_torch, monkeypatch, seed=0):
    """The training outputs (numpy float32) and the gradient of every trainable weight of a fixed random
    function of them (real tokens only), by `backbone_forward` or by Keras's graph."""
    import torch

    for weight in backbone.trainable_weights:
        weight.value.grad = None
    with monkeypatch.context() as patch:
        if not plain_torch:
            patch.setattr(BertBackbone, "_runs_in_plain_torch", lambda *args: False)
        out = backbone(batch, training=True)
    rng = np.random.default_rng(seed)
    device = out["sequence_output"].device  # a GPU's where Keras computes there
    mask = torch.tensor(batch["padding_mask"], dtype=torch.float32, device=device)[..., None]
    projection = {k: torch.tensor(rng.normal(size=out[k].shape[1:]), dtype=torch.float32, device=device)
                  for k in ("sequence_output", "pooled_output") if k in out}  # drawn in this order
    loss = (out["sequence_output"].float() * mask * projection["sequence_output"]).sum()
    if "pooled_output" in out:
        loss = loss + (out["pooled_output"].float() * projection["pooled_output"]).sum()
    loss.backward()
    return ({k: ops.convert_to_numpy(ops.cast(v, "float32")) for k, v in out.items()},
            {w.path: w.value.grad.float().cpu().numpy() for w in backbone.trainable_weights})


@pytest.mark.parametrize("dtype, atol, gradient_rtol, family", [
    ("float32", 1e-5, 1e-5, "bert"), ("bfloat16", 1e-2, 3e-2, "bert"), ("mixed_bfloat16", 1e-2, 3e-2, "bert"),
    *[("float32", 1e-5, 1e-5, family) for family in list(FAMILY_SETTINGS)[1:]]])
def test_training_gives_the_graphs_outputs_and_gradients_of_every_weight(dtype, atol, gradient_rtol, family,
                                                                           monkeypatch):
    """Dropout off (rate 0): the same function, so the same values; with padding and a second segment. In
    bfloat16 (8 bits of mantissa, two orders of summation) all the gradients together within 3% of the graph's in
    norm (0.5-1.7% over 8 seeds; a weight of 8 numbers alone differed by up to 10%). Under "mixed_bfloat16" the
    weights are float32 and the gradients reach them through the casts to bfloat16, as through Keras's layers.
    Each family's settings in float32: a block whose weights several share gets the sum of their gradients."""
    keras.utils.set_random_seed(0)  # the LoRA factor's initializer
    settings = FAMILY_SETTINGS[family]
    backbone = randomized(BertBackbone(**{**TINY, "dropout": 0.0, **settings}, dtype=dtype))
    backbone.get_layer("transformer_layer_0").intermediate_dense.enable_lora(2, b_initializer="normal")
    batch = family_batch(settings, batch=3, length=9)
    (fast, fast_grads), (graph, graph_grads) = (gradients(backbone, batch, plain, monkeypatch)
                                                for plain in (True, False))
    mask = batch["padding_mask"].astype(bool)  # (bfloat16: one unit in the last place of a 2 is 0.016)
    np.testing.assert_allclose(fast["sequence_output"][mask], graph["sequence_output"][mask], atol=atol, rtol=atol)
    if "pooled_output" in graph:
        np.testing.assert_allclose(fast["pooled_output"], graph["pooled_output"], atol=atol, rtol=atol)
    assert fast_grads.keys() == graph_grads.keys() and len(fast_grads) == len(backbone.trainable_weights)
    if dtype == "float32":
        for name, grad in graph_grads.items():
            np.testing.assert_allclose(fast_grads[name], grad, atol=gradient_rtol * max(1.0, np.abs(grad).max()),
                                       err_msg=name)
    else:
        fast_all, graph_all = (np.concatenate([grads[name].ravel() for name in graph_grads])
                               for grads in (fast_grads, graph_grads))
        assert np.linalg.norm(fast_all - graph_all) <= gradient_rtol * np.linalg.norm(graph_all)
    assert any("lora" in name and np.abs(grad).max() > 0 for name, grad in fast_grads.items())


def test_dropout_falls_where_the_graphs_does():
    """Rate 0.3 (embeddings, attention probabilities, both residual branches): the mean and the spread of the
    outputs over 300 training calls agree with the graph's within sampling error, and differ from rate 0's."""
    import torch

    backbone = randomized(BertBackbone(**TINY, dropout=0.3), seed=1)
    batch = tiny_batch(batch=2, length=6)
    torch.manual_seed(0)

    def pooled_samples(plain_torch, rate=0.3):
        backbone.dropout = rate  # what backbone_forward reads; the graph's Dropout layers keep 0.3
        with pytest.MonkeyPatch.context() as patch, torch.no_grad():
            if not plain_torch:
                patch.setattr(BertBackbone, "_runs_in_plain_torch", lambda *args: False)
            return np.stack([ops.convert_to_numpy(backbone(batch, training=True)["pooled_output"])
                             for _ in range(300)])

    fast, graph, undropped = pooled_samples(True), pooled_samples(False), pooled_samples(True, rate=0.0)
    error = np.sqrt((fast.var(0) + graph.var(0)) / 300)
    assert np.all(np.abs(fast.mean(0) - graph.mean(0)) < 5 * error + 1e-6)
    np.testing.assert_allclose(fast.std(0), graph.std(0), rtol=0.25, atol=1e-3)
    assert graph.std(0).mean() > 0.01 and undropped.std(0).max() < 1e-4  # dropout does something; rate 0 nothing
