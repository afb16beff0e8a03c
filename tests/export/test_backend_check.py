"""Under JAX or torch, export refuses with a message that says how to run it."""

import keras
import pytest

from kbert.export import load_exportable


def test_other_backends_are_told_to_use_tensorflow(tmp_path):
    if keras.config.backend() == "tensorflow":
        pytest.skip("this checks the message under the other backends")
    with pytest.raises(RuntimeError, match="KERAS_BACKEND=tensorflow"):
        load_exportable(tmp_path)
