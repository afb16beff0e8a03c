"""The task apps' --distribution/--mesh/--gradient-accumulation/--remat on 8 virtual JAX devices, and
checkpoints written sharded that load unsharded in this (one-device) process, and the other way round."""

import json

import keras
import numpy as np
import pytest

from tests.conftest import TESTS, run_python
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX process")


@pytest.fixture(scope="module")
def spawned(tiny_init, tmp_path_factory):  # noqa: F811 (the imported fixture)
    work = tmp_path_factory.mktemp("apps_and_checkpoints")
    run_python(TESTS / "distribution" / "apps_and_checkpoints.py", tiny_init, work, backend="jax")
    return work, json.loads((work / "results.json").read_text()), dict(np.load(work / "results.npz"))


@pytest.mark.parametrize("case, message", [
    ("heads", "model dimension 4 does not divide num_heads=2 of the model"),  # a folder: checked when fit starts
    ("preset_heads", "model dimension 4 does not divide num_heads=2 of the model"),  # a preset: checked first
    ("folder_hidden", "model dimension 4 does not divide token_embedding/embeddings's size 6 (shape (50, 6))"),
    ("product", "The mesh 3x3 must be 2 numbers whose product is the number of devices, 8."),
    ("no_mesh", "--distribution model needs --mesh REPLICASxSHARDS"),
    ("mesh_without_model", "--mesh 8x1 is for --distribution model (got --distribution data)"),
    ("mesh_parse", "argument --mesh: expected REPLICASxSHARDS, two positive integers such as 2x4, got '2x'"),
])
def test_bad_distributions_exit_2_before_training(spawned, case, message):
    refused = spawned[1][f"refused/{case}"]
    assert refused["code"] == 2 and message in refused["message"] and not refused["written"], refused


def test_app_trains_model_parallel_with_accumulation_and_remat(spawned):
    work, results, arrays = spawned
    assert results["devices"] == 8 and results["app"] == [0, ""]
    metrics = results["app_metrics"]
    assert metrics["distribution"] == {"distribution": "model", "mesh": [4, 2], "devices": 8}
    assert (metrics["hyperparameters"]["gradient_accumulation"], metrics["hyperparameters"]["remat"]) == (2, True)
    assert metrics["steps"] == 1  # 22 examples, batches of 8: 3 batches, one optimizer step per 2
    assert results["run/sharding"] == {"transformer_layer_0/self_attention/qkv_dense/kernel": "(None, 'model')",
                                       "transformer_layer_0/output_dense/kernel": "('model', None)"}


def test_pretrain_app_trains_data_parallel_with_accumulation_and_remat(spawned):
    work, results, _ = spawned
    assert results["pretrain"][0] == 0, results["pretrain"]
    metrics = results["pretrain_metrics"]
    assert metrics["steps"] == 2  # optimizer steps: 4 batches of 8 rows, one step per 2
    assert metrics["end"]["loss"] < metrics["start"]["loss"]
    assert (work / "pretrain" / "backbone.keras").is_file()
    code, message, written = results["refused/pretrain_batch"]
    assert code == 2 and "--batch-size 12 does not divide by the data dimension 8" in message and not written


def test_run_folder_trained_sharded_loads_unsharded(spawned):
    from kbert.saving import load_run
    from tests.distribution.apps_and_checkpoints import TEXTS

    work, _, arrays = spawned
    model = load_run(work / "run")
    assert all(len(v.value.sharding.device_set) == 1 for v in model.weights)
    np.testing.assert_allclose(model.predict(TEXTS, verbose=0), arrays["run/probabilities"], atol=1e-6)


def test_backup_written_sharded_restores_unsharded(spawned, tiny_init):  # noqa: F811
    from tests.distribution.apps_and_checkpoints import fit_with_backup, state

    work, _, arrays = spawned
    restored = fit_with_backup(work / "sharded", tiny_init, work / "train.tsv")  # resumes after the only epoch
    assert int(restored.optimizer.iterations) == 3
    saved = [arrays[f"sharded/{i}"] for i in range(sum(key.startswith("sharded/") for key in arrays))]
    for value, expected in zip(state(restored), saved, strict=True):
        np.testing.assert_array_equal(value, expected)


def test_unsharded_checkpoints_load_sharded(spawned):
    loaded = spawned[1]["unsharded_to_sharded"]
    assert loaded["restored_steps"] == 3 and loaded["backup_equal"] and loaded["keras_equal"]
    by_name = {path.split("/")[-1]: spec for path, spec in loaded["backup_sharding"].items()}  # sgd_N/...
    assert by_name == {"kernel": "(None, 'model')",
                       "transformer_layer_1_intermediate_dense_kernel_momentum": "(None, 'model')"}
    assert loaded["keras_sharding"] == {"transformer_layer_1/output_dense/kernel": "('model', None)"}
