import keras
import numpy as np
import pytest

import kbert.distribution
from kbert.data.batches.padded import PaddedBatches
from tests.conftest import TESTS, run_python

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX process")

SHARDED = {  # what bert_layout_map says, as jax's PartitionSpec
    "token_embedding/embeddings": (None, "model"),
    "transformer_layer_0/self_attention/qkv_dense/kernel": (None, "model"),
    "transformer_layer_0/self_attention/output_dense/kernel": ("model", None),
    "transformer_layer_1/intermediate_dense/kernel": (None, "model"),
    "transformer_layer_1/output_dense/kernel": ("model", None),
    "transformer_layer_1/output_layer_norm/gamma": (None,),
    "logits/kernel": (None, None),
    "qkv momentum": (None, "model"),
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Losses, weights and shardings of bert_tiny trained on 1 and on 8 virtual devices."""
    out = tmp_path_factory.mktemp("distribution") / "trained.npz"
    run_python(TESTS / "distribution" / "train_on_virtual_devices.py", out, backend="jax")
    return dict(np.load(out))


def _weights(results, name):
    return [results[f"{name}/weight{i}"] for i in range(sum(k.startswith(f"{name}/weight") for k in results))]


@pytest.mark.parametrize("name, rows", [("data", 24), ("data", 20), ("model", 20)])
def test_training_matches_one_device(trained, name, rows):  # 20: a batch of 4, padded to 8 by DataParallel
    assert int(trained["devices"]) == 8
    assert float(trained[f"single{rows}/moved"]) > 1e-3  # training did move the weights
    for single, distributed in zip(_weights(trained, f"single{rows}"), _weights(trained, f"{name}{rows}"),
                                   strict=True):
        np.testing.assert_allclose(distributed, single, atol=2e-5)
    if rows == 24 or name == "model":  # no padded batch (4 rows divide the model mesh's data dimension 4)
        np.testing.assert_allclose(trained[f"{name}{rows}/loss"], trained[f"single{rows}/loss"], rtol=1e-5)


def test_pretrainer_drops_the_last_batch_it_cannot_pad(trained):
    assert int(trained["pretrainer/steps"]) == 2  # 20 texts in batches of 8 on 8 devices


def test_pretrainer_refuses_a_batch_size_the_data_dimension_does_not_divide(monkeypatch):
    import kbert.tasks.task_data

    model = kbert.BertPretrainer.from_preset("bert_tiny", next_sentence=False)
    monkeypatch.setattr(kbert.tasks.task_data, "data_dimension", lambda distribution=None: 8)
    with pytest.raises(ValueError, match="batch_size=12 does not divide by the data dimension 8"):
        model.fit(["a film", "another film"], batch_size=12)


def test_model_parallel_shards_as_the_layout_map_says(trained):
    for path, axes in SHARDED.items():
        assert str(trained[f"model20/sharding/{path}"]) == repr(axes), path
        assert str(trained[f"data24/sharding/{path}"]) == repr((None,) * len(axes)), path


def test_layout_map_covers_the_megatron_weights():
    devices = keras.distribution.list_devices()[:1]
    mesh = keras.distribution.DeviceMesh((1, 1), ("batch", "model"), devices)
    layout_map = kbert.distribution.bert_layout_map(mesh)
    backbone = kbert.BertBackbone(**{**kbert.PRESETS["bert_tiny"].to_dict(), "num_layers": 1})
    model = kbert.BertPretrainer(backbone)
    axes = {v.path: getattr(layout_map[v.path], "axes", None) for v in model.weights}
    assert axes["transformer_layer_0/self_attention/qkv_dense/bias"] == ("model",)
    assert axes["transformer_layer_0/intermediate_dense/bias"] == ("model",)
    assert axes["position_embedding/embeddings"] == axes["segment_embedding/embeddings"] == (None, "model")
    assert axes["mlm_head/dense/kernel"] == (None, "model")
    assert axes["mlm_head/bias"] is None and axes["transformer_layer_0/output_dense/bias"] is None


def test_padded_batches_weigh_padding_rows_out():
    inputs = {"token_ids": np.arange(20).reshape(5, 4), "padding_mask": np.ones((5, 4), "int32")}
    batches = PaddedBatches(inputs, y=np.arange(5), batch_size=3, batch_multiple=4)
    x, y, weight = batches[1]  # rows 3 and 4, padded with copies of them to 4
    np.testing.assert_array_equal(y, [3, 4, 3, 4])
    np.testing.assert_array_equal(weight, [2, 2, 0, 0])  # a loss averaged over 4 rows = over the 2 real
    x, y, weight = batches[0]
    assert len(y) == 4
    np.testing.assert_allclose(weight, [4 / 3] * 3 + [0])
    x, y = PaddedBatches(inputs, y=np.arange(5), batch_size=3)[1]  # no multiple: as before
    assert y.tolist() == [3, 4]


@pytest.mark.parametrize("mesh, message", [
    ((2, 4), "model dimension 4 does not divide num_heads=2"),
    ((1, 3), "model dimension 3 does not divide num_heads=2"),
])
def test_check_mesh_names_the_numbers(mesh, message):
    with pytest.raises(ValueError, match=message):
        kbert.distribution.check_mesh("bert_tiny", mesh)
    kbert.distribution.check_mesh("bert_base", (1, 4))  # 12 heads, 768, 3072


def test_check_mesh_hidden_and_intermediate():
    # A width that its heads do not divide is no BERT (BertConfig refuses it, issue 43), so a model dimension that
    # divides the heads divides the width too.
    with pytest.raises(ValueError, match="hidden_dim 18 does not divide into num_heads 4 heads"):
        kbert.BertConfig(num_heads=4, hidden_dim=18, intermediate_dim=48)
    config = kbert.BertConfig(num_heads=2, hidden_dim=8, intermediate_dim=12)
    with pytest.raises(ValueError, match="model dimension 8 does not divide num_heads=2"):
        kbert.distribution.check_mesh(config, (1, 8))
    config = kbert.BertConfig(num_heads=4, hidden_dim=16, intermediate_dim=42)
    with pytest.raises(ValueError, match="does not divide intermediate_dim=42"):
        kbert.distribution.check_mesh(config, (1, 4))
    config = kbert.BertConfig(num_heads=4, hidden_dim=16, intermediate_dim=48, embedding_dim=6)  # ALBERT's tables
    with pytest.raises(ValueError, match="does not divide embedding_dim=6"):
        kbert.distribution.check_mesh(config, (1, 4))


def test_bad_names_meshes_and_backends(monkeypatch):
    with pytest.raises(ValueError, match="Unknown distribution 'pipeline'; choose from"):
        kbert.distribution.get("pipeline")
    with pytest.raises(ValueError, match="needs a mesh shape"):
        kbert.distribution.get("model")
    with pytest.raises(ValueError, match=r"mesh 2x4 must be .* the number of devices, 1"):
        kbert.distribution.model_parallel((2, 4), devices=keras.distribution.list_devices()[:1])
    monkeypatch.setattr(keras.config, "backend", lambda: "torch")
    with pytest.raises(ValueError, match="needs the JAX backend .* this process runs 'torch'"):
        kbert.distribution.get("model", (1, 1))
