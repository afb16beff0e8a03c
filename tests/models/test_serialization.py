import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.optimizers import mixed_compute
from tests.conftest import BACKENDS, TESTS, TINY, run_python, tiny_batch


def test_keras_file_round_trip(tmp_path):
    model = BertBackbone(**TINY)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert isinstance(loaded, BertBackbone)
    batch = tiny_batch()
    for key, value in model(batch).items():
        np.testing.assert_allclose(ops.convert_to_numpy(loaded(batch)[key]), ops.convert_to_numpy(value), atol=1e-6)


@pytest.mark.parametrize("other", BACKENDS)
def test_keras_file_loads_under_other_backend(tmp_path, other):
    if other == keras.config.backend():
        pytest.skip("same backend")
    model = BertBackbone(**TINY)
    model.save(tmp_path / "model.keras")
    batch = tiny_batch()
    np.savez(tmp_path / "x.npz", **batch)
    run_python(TESTS / "load_and_predict.py", tmp_path, backend=other)
    loaded_outputs = np.load(tmp_path / "y.npz")
    for key, value in model(batch).items():
        np.testing.assert_allclose(loaded_outputs[key], ops.convert_to_numpy(value), atol=1e-5)


def compute_dtype(backbone):
    return backbone.get_layer("transformer_layer_0").compute_dtype


def test_only_an_explicit_dtype_policy_is_saved(tmp_path):
    with mixed_compute():
        BertBackbone(**TINY).save(tmp_path / "global.keras")
    BertBackbone(**TINY, dtype="mixed_bfloat16").save(tmp_path / "explicit.keras")
    assert compute_dtype(keras.saving.load_model(tmp_path / "global.keras")) == "float32"
    assert compute_dtype(keras.saving.load_model(tmp_path / "explicit.keras")) == "bfloat16"
