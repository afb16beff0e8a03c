"""A backbone of some of another's layers: the layers chosen, their weights copied exactly, every other weight too,
and with every layer kept the same outputs; bad choices refused. Every backend."""

import dataclasses

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertConfig
from kbert.models.kept_layers import every_kth_layer, with_layers
from tests.conftest import TINY, tiny_batch


@pytest.fixture(scope="module")
def backbone():
    keras.utils.set_random_seed(3)
    return BertBackbone(**{**TINY, "num_layers": 5})


def weights(layer):
    return [keras.ops.convert_to_numpy(weight) for weight in layer.weights]


@pytest.mark.parametrize("num_layers, k, kept", [
    (6, 2, [1, 3, 5]), (12, 2, [1, 3, 5, 7, 9, 11]), (12, 3, [2, 5, 8, 11]), (5, 2, [0, 2, 4]), (5, 4, [0, 4]),
    (5, 5, [4]), (4, 1, [0, 1, 2, 3])])
def test_every_kth_layer_counts_down_from_the_top_layer(num_layers, k, kept):
    assert every_kth_layer(num_layers, k) == kept


@pytest.mark.parametrize("k", [0, 6, 2.0, True])
def test_a_k_that_keeps_no_layers_of_its_own_is_refused(k):
    with pytest.raises(ValueError, match=r"Keeping every k-th of 5 layers takes k from 1 to 5 \(5: the top layer "
                                         f"alone\\), not {k!r}."):
        every_kth_layer(5, k)


def test_the_kept_layers_are_the_chosen_layers_weights_exactly(backbone):
    kept = with_layers(backbone, [0, 2, 4])
    assert type(kept) is BertBackbone and kept.num_layers == 3
    assert {**kept.get_config(), "num_layers": 5, "name": None} == {**backbone.get_config(), "name": None}
    for j, i in enumerate([0, 2, 4]):
        for got, expected in zip(weights(kept.get_layer(f"transformer_layer_{j}")),
                                 weights(backbone.get_layer(f"transformer_layer_{i}")), strict=True):
            np.testing.assert_array_equal(got, expected)
    blocks = {f"transformer_layer_{i}" for i in range(5)}
    others = [layer for layer in backbone.layers if layer.weights and layer.name not in blocks]
    assert {layer.name for layer in others} >= {"token_embedding", "position_embedding", "embeddings_layer_norm",
                                                "pooled_dense"}
    for layer in others:
        for got, expected in zip(weights(kept.get_layer(layer.name)), weights(layer), strict=True):
            np.testing.assert_array_equal(got, expected)
    assert len(kept.weights) == len(backbone.weights) - 2 * len(backbone.get_layer("transformer_layer_0").weights)


def test_every_layer_kept_gives_the_same_outputs(backbone):
    batch = tiny_batch(vocabulary_size=TINY["vocabulary_size"])
    got, expected = with_layers(backbone, every_kth_layer(5, 1))(batch), backbone(batch)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got[key]), keras.ops.convert_to_numpy(expected[key]))


def test_the_top_layers_alone_give_the_outputs_of_the_embeddings_through_them(backbone):
    """Keeping layers 3 and 4 equals running the full backbone's last two blocks on the embeddings: each kept
    block is the teacher's block itself."""
    batch = tiny_batch(vocabulary_size=TINY["vocabulary_size"])
    kept = with_layers(backbone, [3, 4])
    x = keras.Model(backbone.input, backbone.get_layer("embeddings_layer_norm").output)(batch)
    for i in (3, 4):
        x = backbone.get_layer(f"transformer_layer_{i}")(x, padding_mask=batch["padding_mask"])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(kept(batch)["sequence_output"]),
                               keras.ops.convert_to_numpy(x), atol=1e-6)


@pytest.mark.parametrize("layers", [[], [2, 1], [1, 1], [0, 5], [-1]])
def test_bad_layer_choices_are_refused(backbone, layers):
    with pytest.raises(ValueError, match=r"Keep increasing layer numbers, at least one, from 0 to 4"):
        with_layers(backbone, layers)


@pytest.mark.skipif("num_layer_groups" not in {field.name for field in dataclasses.fields(BertConfig)},
                    reason="no blocks sharing weights in this BertConfig")
def test_layers_that_share_weights_are_refused():
    with pytest.raises(ValueError, match="share 1 group"):
        with_layers(BertBackbone(**{**TINY, "num_layer_groups": 1}), [1])
