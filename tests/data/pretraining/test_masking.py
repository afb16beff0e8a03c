"""kbert.data.pretraining.masking: the masking rates BERT specifies, whole words, SpanBERT's spans, stateless seeds."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.data.pretraining.masking import MASK_UNITS, check_masking, mask_batch, prediction_slots, span_lengths

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


def mask(token_ids, padding_mask, mask_unit="token", seed=(1, 2), mask_rate=0.15, max_predictions=20, vocab=VOCAB,
         **span):
    out = mask_batch(token_ids, padding_mask, tf.constant(seed), special_ids=[0, 1, 2, 3, 4],
                     is_suffix=[token.startswith("##") for token in vocab], mask_id=MASK,
                     replacement_ids=list(range(5, len(vocab))), mask_rate=mask_rate,
                     max_predictions=max_predictions, mask_unit=mask_unit, **span)
    return {key: value.numpy() for key, value in out.items()}


@pytest.mark.parametrize("mask_unit", MASK_UNITS)
def test_masking_rates(mask_unit):
    """15% of the tokens (SpanBERT's budget is in tokens too), never a special one; 80/10/10 (for spans, decided
    per span: the shares of the tokens are the same in expectation)."""
    token_ids, padding_mask = random_rows()
    out = mask(token_ids, padding_mask, mask_unit)
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


@pytest.mark.parametrize("mask_unit", ["whole_word", "span"])
def test_whole_word_masking_never_splits_a_word(mask_unit):
    token_ids, padding_mask = random_rows(rows=500)
    out = mask(token_ids, padding_mask, mask_unit)
    chosen = np.zeros_like(token_ids, bool)
    weights = out["mask_weights"].astype(bool)
    chosen[np.nonzero(weights)[0], out["mask_positions"][weights]] = True
    suffix = np.isin(token_ids, [VOCAB.index(t) for t in ("##s", "##ed", "##ing")])
    inside = suffix[:, 1:] & ~np.isin(token_ids[:, :-1], [0, 2, 3])  # a piece and its left part
    assert inside.any()
    assert (chosen[:, 1:][inside] == chosen[:, :-1][inside]).all()


@pytest.mark.parametrize("mask_unit", MASK_UNITS)
def test_masking_is_stateless_and_row_width_is_max_predictions(mask_unit):
    token_ids, padding_mask = random_rows(rows=8)
    first, again = mask(token_ids, padding_mask, mask_unit), mask(token_ids, padding_mask, mask_unit)
    other = mask(token_ids, padding_mask, mask_unit, seed=(1, 3))
    assert (first["token_ids"] == again["token_ids"]).all()
    assert (first["token_ids"] != other["token_ids"]).any()
    assert first["mask_positions"].shape == (8, 20)


@pytest.mark.parametrize("mask_unit", MASK_UNITS)
@pytest.mark.parametrize("length, mask_rate, slots", [(64, 0.15, 10), (128, 0.15, 19), (512, 0.15, 77),
                                                      (16, 0.5, 7), (4, 0.15, 1)])
def test_prediction_slots_hold_every_prediction_a_row_can_get(length, mask_rate, slots, mask_unit):
    """Slots worked out by hand: ceil(rate x (length - 2)), e.g. 0.15 x 62 = 9.3 -> 10. Full rows (the most
    candidates) masked without a width limit never choose more; some choose exactly the slots or one fewer."""
    assert prediction_slots(length, mask_rate) == slots
    token_ids = np.random.default_rng(0).integers(5, len(VOCAB), (200, length)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = CLS, SEP
    padding_mask = np.ones_like(token_ids)
    out = mask(token_ids, padding_mask, mask_unit, mask_rate=mask_rate, max_predictions=length)
    chosen = out["mask_weights"].sum(axis=1)
    assert chosen.max() <= slots and chosen.max() >= slots - 1, (chosen.max(), slots)


def clipped_geometric(p, most):
    """SpanBERT's span lengths, from their definition: P(l) = p (1 - p)^(l - 1) for l = 1..most, over its sum
    (1 - (1 - p)^most)."""
    return {length: p * (1 - p) ** (length - 1) / (1 - (1 - p) ** most) for length in range(1, most + 1)}


@pytest.mark.parametrize("p, most", [(0.2, 10), (0.5, 3), (1.0, 4)])
def test_span_lengths_follow_the_clipped_geometric_distribution(p, most):
    """A chi-square test of 20,000 seeded draws against the pmf (p < 0.001 that a right sampler fails: 27.9 for 9
    degrees of freedom, 13.8 for 2); the paper's mean of 3.8 words at p = 0.2, 10."""
    draws = span_lengths(20000, tf.constant([3, 4]), span_p=p, max_span=most).numpy()
    pmf = clipped_geometric(p, most)
    assert set(draws) <= set(pmf)
    if p == 1.0:
        assert (draws == 1).all()
        return
    observed = np.array([(draws == length).sum() for length in pmf])
    expected = np.array(list(pmf.values())) * len(draws)
    assert ((observed - expected) ** 2 / expected).sum() < {10: 27.9, 3: 13.8}[most]
    if most == 10:
        assert abs(draws.mean() - 3.8) < 0.05 and abs(sum(length * q for length, q in pmf.items()) - 3.8) < 0.01


def masked_runs(out, token_ids):
    """The runs of consecutive chosen tokens of each row: (row, start, end) with end exclusive."""
    chosen = np.zeros(token_ids.shape, bool)
    weights = out["mask_weights"].astype(bool)
    chosen[np.nonzero(weights)[0], out["mask_positions"][weights]] = True
    edges = np.diff(np.pad(chosen.astype(int), [(0, 0), (1, 1)]), axis=1)
    starts, ends = np.nonzero(edges == 1), np.nonzero(edges == -1)
    return list(zip(starts[0], starts[1], ends[1]))


def test_spans_are_runs_of_words_replaced_alike():
    """Rows of 200 one-token words: span masking chooses runs of about 3.8 words (where token masking's runs are
    about 1.2 long), and [MASK], random or kept is decided per span: a run is all [MASK] or has none, but where two
    spans meet (3% of the runs here; over 40% would mix under per-token decisions). Special tokens stay."""
    rng = np.random.default_rng(1)
    token_ids = rng.integers(5, len(VOCAB), (400, 202)).astype("int32")
    token_ids[np.isin(token_ids, [VOCAB.index(t) for t in ("##s", "##ed", "##ing")])] = 5  # every token a word
    token_ids[:, 0], token_ids[:, 101], token_ids[:, -1] = CLS, SEP, SEP
    padding_mask = np.ones_like(token_ids)
    out = mask(token_ids, padding_mask, "span", max_predictions=30)
    runs = masked_runs(out, token_ids)
    lengths = np.array([end - start for _, start, end in runs])
    assert 3.3 < lengths.mean() < 4.6 and lengths.max() > 10  # merged spans: longer than one span can be
    token_runs = np.array([end - start for _, start, end in masked_runs(mask(token_ids, padding_mask), token_ids)])
    assert token_runs.mean() < 1.3
    masked = out["token_ids"] == MASK
    mixed = [masked[row, start:end].any() and not masked[row, start:end].all() for row, start, end in runs]
    assert np.mean(mixed) < 0.08
    assert (out["token_ids"][:, [0, 101, -1]] == token_ids[:, [0, 101, -1]]).all()


@pytest.mark.parametrize("setting, message", [
    (dict(mask_unit="spans"), "mask_unit must be one of"),
    (dict(mask_rate=0.0), "mask_rate 0.0: .* in \\(0, 1\\)"), (dict(mask_rate=1.0), "mask_rate 1.0"),
    (dict(span_p=0.0), "span_p 0.0: .* in \\(0, 1\\]"), (dict(span_p=1.5), "span_p 1.5"),
    (dict(max_span=0), "max_span 0: .* >= 1"), (dict(max_span=2.5), "max_span 2.5")])
def test_settings_out_of_range_are_refused_in_one_line(setting, message):
    with pytest.raises(ValueError, match=message):
        check_masking(**{"mask_unit": "span", **setting})
    token_ids, padding_mask = random_rows(rows=2)
    with pytest.raises(ValueError, match=message):
        mask(token_ids, padding_mask, **{"mask_unit": "span", **setting})


@pytest.mark.parametrize("max_span", [10, 2])
def test_span_boundaries_frame_whole_words_within_a_segment(max_span):
    """Each prediction's span s..e (from `span_left` s - 1, `span_right` e + 1 and `span_offset`): the prediction
    inside it, every token of it chosen, no special token in it (a span never crosses [SEP]), whole words (it starts
    at a word's first piece and the token after it starts a word), at most `max_span` words. Row 0 by hand."""
    token_ids, padding_mask = random_rows(rows=300)
    token_ids[:, 20] = SEP  # two segments
    padding_mask[:, :21] = 1
    out = mask(token_ids, padding_mask, "span", max_span=max_span)
    suffix = np.isin(token_ids, [VOCAB.index(t) for t in ("##s", "##ed", "##ing")])
    special = np.isin(token_ids, [0, 1, 2, 3, 4])
    chosen = np.zeros_like(token_ids, bool)
    weights = out["mask_weights"].astype(bool)
    chosen[np.nonzero(weights)[0], out["mask_positions"][weights]] = True
    for row, slot in zip(*np.nonzero(weights)):
        left, right = out["span_left"][row, slot], out["span_right"][row, slot]
        position, offset = out["mask_positions"][row, slot], out["span_offset"][row, slot]
        assert left < position < right and position == left + 1 + offset
        inside = slice(left + 1, right)
        assert chosen[row, inside].all() and not special[row, inside].any()
        assert not suffix[row, left + 1] or special[row, left]
        assert not suffix[row, right] or special[row, right - 1] or special[row, right]
        starts = ~suffix[row, inside] | np.r_[True, special[row, left + 1:right - 1]]
        assert starts.sum() <= max_span


def test_span_boundaries_by_hand():
    """[CLS] a b c ##s d [SEP] e f [SEP]: with 70% to mask of 7 tokens (5) and spans of one word, one-word spans
    (c ##s a single word: 2 tokens): every word's boundaries are its neighbours."""
    vocab = SPECIAL + ["a", "b", "c", "d", "e", "f", "##s"]
    token_ids = np.array([[2, 5, 6, 7, 11, 8, 3, 9, 10, 3]], "int32")
    out = mask(token_ids, np.ones_like(token_ids), "span", mask_rate=0.7, max_predictions=5, vocab=vocab,
               span_p=1.0)
    weights = out["mask_weights"][0].astype(bool)
    positions = out["mask_positions"][0][weights].tolist()
    expected = {1: (0, 2, 0), 2: (1, 3, 0), 3: (2, 5, 0), 4: (2, 5, 1), 5: (4, 6, 0), 7: (6, 8, 0), 8: (7, 9, 0)}
    assert len(positions) == 5 and set(positions) <= set(expected)
    got = {p: (out["span_left"][0][i], out["span_right"][0][i], out["span_offset"][0][i])
           for i, p in enumerate(out["mask_positions"][0]) if weights[i]}
    assert got == {p: expected[p] for p in positions}
