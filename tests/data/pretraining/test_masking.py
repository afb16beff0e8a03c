"""kbert.data.pretraining.masking: the masking rates BERT specifies, whole words, stateless seeds."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.data.pretraining.masking import mask_batch, prediction_slots

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "home", "##s", "##ed", "##ing"]
VOCAB = SPECIAL + WORDS + [".", ","]
MASK, CLS, SEP = 4, 2, 3


def random_rows(rows=4000, length=64, seed=0):
    """Packed rows [CLS] ... [SEP] [PAD]..., with random lengths and random word pieces."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, len(VOCAB), (rows, length)).astype("int32")
    lengths = rng.integers(8, length + 1, rows)
    padding_mask = (np.arange(length) < lengths[:, None]).astype("int32")
    token_ids[:, 0] = CLS
    token_ids[np.arange(rows), lengths - 1] = SEP
    token_ids[padding_mask == 0] = 0
    return token_ids, padding_mask


def mask(token_ids, padding_mask, whole_word=False, seed=(1, 2), mask_rate=0.15, max_predictions=20):
    out = mask_batch(token_ids, padding_mask, tf.constant(seed), special_ids=[0, 1, 2, 3, 4],
                     is_suffix=[token.startswith("##") for token in VOCAB], mask_id=MASK,
                     replacement_ids=list(range(5, len(VOCAB))), mask_rate=mask_rate,
                     max_predictions=max_predictions, whole_word=whole_word)
    return {key: value.numpy() for key, value in out.items()}


@pytest.mark.parametrize("whole_word", [False, True])
def test_masking_rates(whole_word):
    token_ids, padding_mask = random_rows()
    out = mask(token_ids, padding_mask, whole_word)
    weights = out["mask_weights"].astype(bool)
    rows = np.nonzero(weights)[0]
    positions = out["mask_positions"][weights]
    candidates = padding_mask.sum() - 2 * len(token_ids)
    assert abs(weights.sum() / candidates - 0.15) < 0.005
    assert (out["mask_ids"][weights] == token_ids[rows, positions]).all()
    assert not np.isin(token_ids[rows, positions], [0, 1, 2, 3, 4]).any()
    corrupted = out["token_ids"][rows, positions]
    masked, kept = corrupted == MASK, corrupted == token_ids[rows, positions]
    assert abs(masked.mean() - 0.8) < 0.01
    # A random replacement can draw the original token: 1 in 15 of the 10%.
    assert abs(kept.mean() - (0.1 + 0.1 / 15)) < 0.01
    assert abs((~masked & ~kept).mean() - 0.1 * 14 / 15) < 0.01
    unchosen = np.ones_like(token_ids, bool)
    unchosen[rows, positions] = False
    assert (out["token_ids"][unchosen] == token_ids[unchosen]).all()


def test_whole_word_masking_never_splits_a_word():
    token_ids, padding_mask = random_rows(rows=500)
    out = mask(token_ids, padding_mask, whole_word=True)
    chosen = np.zeros_like(token_ids, bool)
    weights = out["mask_weights"].astype(bool)
    chosen[np.nonzero(weights)[0], out["mask_positions"][weights]] = True
    suffix = np.isin(token_ids, [VOCAB.index(t) for t in ("##s", "##ed", "##ing")])
    inside = suffix[:, 1:] & ~np.isin(token_ids[:, :-1], [0, 2, 3])  # a piece and its left part
    assert inside.any()
    assert (chosen[:, 1:][inside] == chosen[:, :-1][inside]).all()


def test_masking_is_stateless_and_row_width_is_max_predictions():
    token_ids, padding_mask = random_rows(rows=8)
    first, again = mask(token_ids, padding_mask), mask(token_ids, padding_mask)
    other = mask(token_ids, padding_mask, seed=(1, 3))
    assert (first["token_ids"] == again["token_ids"]).all()
    assert (first["token_ids"] != other["token_ids"]).any()
    assert first["mask_positions"].shape == (8, 20)


@pytest.mark.parametrize("whole_word", [False, True])
@pytest.mark.parametrize("length, mask_rate, slots", [(64, 0.15, 10), (128, 0.15, 19), (512, 0.15, 77),
                                                      (16, 0.5, 7), (4, 0.15, 1)])
def test_prediction_slots_hold_every_prediction_a_row_can_get(length, mask_rate, slots, whole_word):
    """Slots worked out by hand: ceil(rate x (length - 2)), e.g. 0.15 x 62 = 9.3 -> 10. Full rows (the most
    candidates) masked without a width limit never choose more; some choose exactly the slots or one fewer."""
    assert prediction_slots(length, mask_rate) == slots
    token_ids = np.random.default_rng(0).integers(5, len(VOCAB), (200, length)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = CLS, SEP
    padding_mask = np.ones_like(token_ids)
    out = mask(token_ids, padding_mask, whole_word, mask_rate=mask_rate, max_predictions=length)
    chosen = out["mask_weights"].sum(axis=1)
    assert chosen.max() <= slots and chosen.max() >= slots - 1, (chosen.max(), slots)
