"""kbert.layers.Dropout: Keras's Dropout, with PyTorch's training mask from torch.rand."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert.layers import Dropout
from tests.conftest import TINY


def test_inference_and_rate_0_give_the_inputs():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(ops.convert_to_numpy(Dropout(0.5)(x)), x)
    np.testing.assert_array_equal(ops.convert_to_numpy(Dropout(0.0)(x, training=True)), x)


def test_training_zeroes_rate_of_the_elements_and_scales_the_rest():
    out = ops.convert_to_numpy(Dropout(0.25)(np.full((500, 400), 3.0, "float32"), training=True))
    assert abs((out == 0).mean() - 0.25) < 5 * (0.25 * 0.75 / out.size) ** 0.5
    assert set(np.unique(out).tolist()) == {0.0, 4.0}


def test_a_seeded_layer_draws_as_keras_dropout():
    """With a seed, Keras's own masks (the same seed, the same draws)."""
    x = np.ones((8, 16), "float32")
    ours = ops.convert_to_numpy(Dropout(0.5, seed=3)(x, training=True))
    keras_own = ops.convert_to_numpy(keras.layers.Dropout(0.5, seed=3)(x, training=True))
    np.testing.assert_array_equal(ours, keras_own)


def test_unseeded_training_under_torch_uses_the_torch_mask(monkeypatch):
    if keras.config.backend() != "torch":
        pytest.skip("PyTorch only")
    from kbert.backend_speedups import torch_dropout

    monkeypatch.setenv("KBERT_SPEEDUPS", "all")  # the speed-up torch_dropout itself, whatever the suite runs with
    calls = []
    monkeypatch.setattr(torch_dropout, "dropout", lambda x, rate: calls.append(rate) or x)
    Dropout(0.1)(np.ones((2, 3), "float32"), training=True)
    assert calls == [0.1]


def test_the_backbone_drops_out_with_it_and_saves_it(tmp_path):
    """Its embeddings and each block's attention and residual dropouts; a saved backbone loads them back."""
    from kbert import BertBackbone

    backbone = BertBackbone(**TINY)
    dropouts = [layer for layer in backbone._flatten_layers() if isinstance(layer, keras.layers.Dropout)]
    assert len(dropouts) == 1 + 2 * TINY["num_layers"] and all(type(d) is Dropout for d in dropouts)
    backbone.save(tmp_path / "backbone.keras")
    loaded = keras.saving.load_model(tmp_path / "backbone.keras")
    assert all(type(d) is Dropout for d in loaded._flatten_layers() if isinstance(d, keras.layers.Dropout))
