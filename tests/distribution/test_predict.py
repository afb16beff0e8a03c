"""`predict` on raw strings under keras.distribution (8 virtual JAX devices): row counts the data
dimension does not divide give one device's outputs, in input order."""

import keras
import numpy as np
import pytest

from tests.conftest import TESTS, run_python

pytestmark = pytest.mark.skipif(keras.config.backend() != "jax",
                                reason="keras.distribution runs on JAX; the test spawns its own JAX process")


@pytest.fixture(scope="module")
def predicted(tmp_path_factory):
    work = tmp_path_factory.mktemp("predict")
    run_python(TESTS / "distribution" / "predict_on_virtual_devices.py", work, backend="jax")
    return dict(np.load(work / "predictions.npz"))


@pytest.mark.parametrize("name, split", [("data", 8), ("model", 4)])
@pytest.mark.parametrize("case", ["13_batch32", "13_batch5", "1"])  # batches of 13; of 5, 5, 3; of 1
def test_predict_matches_one_device_in_input_order(predicted, name, split, case):
    assert int(predicted["devices"]) == 8 and int(predicted[f"{name}/data_dimension"]) == split
    errors = {key: str(predicted[key]) for key in (f"single/error/{case}", f"{name}/error/{case}") if key in predicted}
    assert not errors, errors
    single = predicted[f"single/probabilities/{case}"]
    assert len(single) == (1 if case == "1" else 13)
    assert len({tuple(row.round(6)) for row in single}) == len(single)  # distinct rows: the order shows
    np.testing.assert_allclose(predicted[f"{name}/probabilities/{case}"], single, atol=1e-5)
    np.testing.assert_allclose(predicted[f"{name}/logits/{case}"], predicted[f"single/logits/{case}"], atol=1e-5)
    np.testing.assert_array_equal(predicted[f"{name}/tags/{case}"], predicted[f"single/tags/{case}"])


@pytest.mark.parametrize("name, split", [("data", 8), ("model", 4)])
def test_each_device_computes_its_share_of_the_rows(predicted, name, split):
    """Each batch the models ran was padded to a multiple of the data dimension and laid out along it."""
    for case, batches in [(case, predicted[f"{name}/batches/{case}"]) for case in ("13_batch32", "13_batch5", "1")]:
        assert len(batches) == 3 * (1 if case != "13_batch5" else 3), (case, batches)  # classifier, tagger, tagger
        for batch in batches:
            rows, spec = str(batch).split(" ", 1)
            assert int(rows) % split == 0 and spec == "('batch', None)", (case, batches)
    assert {str(batch).split(" ", 1)[1] for batch in predicted["single/batches/1"]} == {"None"}
