"""Masked-LM masking of a batch, with TensorFlow ops (for `tf.data.Dataset.map`)."""

import math

import numpy as np

from kbert.layers.span_boundary_head import SPAN_BOUNDARY_KEYS
from kbert.start_up import import_tensorflow

tf = import_tensorflow()  # quietly; under torch or JAX, off the GPUs

# What a masked-LM target is drawn as: single WordPieces (BERT), whole words (BERT's whole-word masking) or
# SpanBERT's spans of whole words.
MASK_UNITS = ("token", "whole_word", "span")


def check_masking(mask_unit="token", mask_rate=0.15, span_p=0.2, max_span=10):
    """Raises ValueError, naming the setting and its range, for a masking setting out of range (`mask_batch`'s).

    Example:
    >>> check_masking("span", span_p=1.5)
    Traceback (most recent call last):
    ValueError: span_p 1.5: the parameter of the geometric distribution of span lengths must be in (0, 1].
    """
    if mask_unit not in MASK_UNITS:
        raise ValueError(f"mask_unit must be one of {MASK_UNITS}, got {mask_unit!r}.")
    if not 0 < mask_rate < 1:
        raise ValueError(f"mask_rate {mask_rate}: the share of the tokens to predict must be in (0, 1).")
    if not 0 < span_p <= 1:
        raise ValueError(f"span_p {span_p}: the parameter of the geometric distribution of span lengths must be in "
                         f"(0, 1].")
    if isinstance(max_span, bool) or not isinstance(max_span, (int, np.integer)) or max_span < 1:
        raise ValueError(f"max_span {max_span!r}: the longest span, in words, must be a whole number >= 1.")


def span_length_pmf(span_p=0.2, max_span=10):
    """The probabilities of span lengths 1..`max_span` (in words) that span masking draws from: SpanBERT's
    geometric distribution Geo(`span_p`), P(l) proportional to p (1 - p)^(l - 1), cut at `max_span` and
    renormalized (its code's `len_distrib`). At p = 0.2 and 10, the paper's mean of 3.8 words.

    Example:
    >>> pmf = span_length_pmf()
    >>> round(float(pmf @ np.arange(1, 11)), 2), round(float(pmf[0]), 3)
    (3.8, 0.224)
    """
    lengths = np.arange(max_span)
    pmf = span_p * (1.0 - span_p) ** lengths
    return pmf / pmf.sum()


def prediction_slots(sequence_length, mask_rate=0.15):
    """The most predictions `mask_batch` can choose in a row of `sequence_length` tokens: the
    default width of its outputs.

    A row holds at most `sequence_length - 2` candidates ([CLS] and [SEP] are never chosen) and
    predicts `round(mask_rate * n)` of its `n`, so wider outputs only carry slots weighted 0 that
    the masked-LM head still computes. BERT's `max_predictions_per_seq` of 20 at 128 tokens
    is this bound (19) plus one; at 64 tokens a row predicts at most 9, and 20 slots would leave
    at least 11 empty.

    Example:
    >>> prediction_slots(128), prediction_slots(64), prediction_slots(8, mask_rate=0.5)
    (19, 10, 3)
    """
    return max(1, math.ceil(mask_rate * (sequence_length - 2)))


def mask_batch(token_ids, padding_mask, seed, special_ids, is_suffix, mask_id, replacement_ids,
               mask_rate=0.15, max_predictions=20, mask_unit="token", span_p=0.2, max_span=10):
    """Chooses and corrupts BERT's masked-LM targets in a batch of packed sequences.

    Each row predicts `round(mask_rate * n)` of its `n` non-special, non-padding tokens (at
    least 1, at most `max_predictions`), chosen at random as `mask_unit` says:
    - "token": single tokens; 80% of them become [MASK], 10% a random non-special token and 10% stay.
    - "whole_word": all the WordPieces of a word together: each word, in random order, is taken if it still fits
      the row's budget; 80/10/10 per token.
    - "span" (SpanBERT, section 3.1): spans of whole words, until the budget (in tokens) is spent. Each span
      starts at a word drawn at random among those not chosen yet (that fit the budget left) and is
      `span_length_pmf(span_p, max_span)` words long, cut short where a word would not fit the budget, at a
      word chosen before, or at the end of the segment (a span never crosses [SEP]). The 80/10/10 is
      decided per span, as SpanBERT does: all its tokens become [MASK], or all random tokens (drawn per token),
      or all stay.
    Randomness is stateless, from `seed`: same seed, same masks. Settings out of range raise ValueError
    (`check_masking`).

    Args:
        token_ids: int32 tensor (batch, length).
        padding_mask: int32 tensor (batch, length), 1 for real tokens.
        seed: int tensor of shape (2,).
        special_ids: list of int. Ids that are never chosen ([CLS], [SEP], [PAD], ...).
        is_suffix: list of bool, per vocabulary id: the token continues a word ("##").
        mask_id: int. The [MASK] id.
        replacement_ids: list of int. Ids that random replacement draws from.
        mask_rate: float. Share of the tokens to predict.
        max_predictions: int. Predictions per row at most (the width of the outputs; see
            `prediction_slots`).
        mask_unit: str. One of `MASK_UNITS`: "token", "whole_word" or "span".
        span_p, max_span: float in (0, 1], int >= 1. The span lengths' distribution (`span_length_pmf`).

    Returns:
        dict: `token_ids` (corrupted), `mask_positions` and `mask_ids` (batch,
        max_predictions) int32, in position order, padded with 0, and `mask_weights`
        (float32, 1 for a real prediction). With "span", also what the span-boundary objective reads
        (`kbert.layers.span_boundary_head.SpanBoundaryHead`), for each prediction of a span s..e at i:
        `span_left` (s - 1), `span_right` (e + 1) and `span_offset` (i - s), int32, 0 where `mask_weights` is 0.

    Example:
    >>> out = mask_batch(tf.constant([[2, 7, 8, 9, 3, 0]]), tf.constant([[1, 1, 1, 1, 1, 0]]),
    ...                  tf.constant([1, 2]), [0, 2, 3], [False] * 10, 4, [5, 6, 7, 8, 9],
    ...                  mask_rate=0.5, max_predictions=3)
    >>> out["mask_weights"].numpy().tolist()
    [[1.0, 1.0, 0.0]]
    """
    check_masking(mask_unit, mask_rate, span_p, max_span)
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    shape = tf.shape(token_ids)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
    special = tf.reduce_any(token_ids[..., None] == tf.constant(special_ids, tf.int32), -1)
    candidate = (tf.cast(padding_mask, tf.bool)) & ~special
    count = tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1)
    budget = tf.cast(tf.round(tf.cast(count, tf.float32) * mask_rate), tf.int32)
    budget = tf.minimum(tf.minimum(tf.maximum(budget, 1), max_predictions), count)

    draw = tf.random.stateless_uniform(shape, seeds[1])  # [MASK] below 0.8, a random token below 0.9
    if mask_unit == "span":
        chosen, draw, spans = _choose_spans(token_ids, candidate, budget, is_suffix, seeds[0], span_p, max_span,
                                            max_predictions)
    elif mask_unit == "whole_word":
        chosen = _choose_words(token_ids, candidate, budget, is_suffix, seeds[0])
    else:
        keys = tf.where(candidate, tf.random.stateless_uniform(shape, seeds[0]), 2.0)
        rank = tf.argsort(tf.argsort(keys, axis=1, stable=True), axis=1)
        chosen = candidate & (rank < budget[:, None])

    replacement = tf.gather(tf.constant(replacement_ids, tf.int32), tf.random.stateless_uniform(
        shape, seeds[2], maxval=len(replacement_ids), dtype=tf.int32))
    corrupted = tf.where(chosen & (draw < 0.8), mask_id,
                         tf.where(chosen & (draw < 0.9), replacement, token_ids))

    positions = tf.range(shape[1])[None, :]
    first_chosen = tf.argsort(tf.where(chosen, positions, positions + shape[1]), axis=1)
    first_chosen = tf.pad(first_chosen, [[0, 0], [0, tf.maximum(max_predictions - shape[1], 0)]])
    positions = first_chosen[:, :max_predictions]
    weights = tf.gather(tf.pad(chosen, [[0, 0], [0, 1]]), tf.minimum(positions, shape[1]),
                        batch_dims=1)
    positions = tf.where(weights, positions, 0)
    out = {
        "token_ids": corrupted,
        "mask_positions": positions,
        "mask_ids": tf.where(weights, tf.gather(token_ids, positions, batch_dims=1), 0),
        "mask_weights": tf.cast(weights, tf.float32),
    }
    if mask_unit == "span":
        boundaries = _span_boundaries(spans, max_predictions)
        out.update({key: tf.where(weights, tf.gather(boundaries[key], positions, batch_dims=1), 0)
                    for key in SPAN_BOUNDARY_KEYS})
    return out


def _words(token_ids, candidate, is_suffix):
    """The word of each token, numbered from 1 along the row (0: no candidate), each word's length in tokens
    (batch, length + 1), and the stretch of consecutive candidates (a segment) each word is in (also per word)."""
    shape = tf.shape(token_ids)
    slots = shape[1] + 1  # word 0 collects the tokens that are no candidates
    # A word starts at a candidate that is not "##..." or whose left neighbour is no candidate.
    suffix = tf.gather(tf.constant(is_suffix, tf.bool), token_ids)
    after_candidate = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
    words = tf.cumsum(tf.cast(candidate & ~(suffix & after_candidate), tf.int32), axis=1)
    words = tf.where(candidate, words, 0)
    segments = tf.cumsum(tf.cast(candidate & ~after_candidate, tf.int32), axis=1)
    rows = tf.range(shape[0])[:, None] * slots

    def per_word(reduce, values):
        return tf.reshape(reduce(values, words + rows, shape[0] * slots), [shape[0], slots])

    return (words, per_word(tf.math.unsorted_segment_sum, tf.cast(candidate, tf.int32)),
            per_word(tf.math.unsorted_segment_max, tf.where(candidate, segments, 0)))


def _choose_words(token_ids, candidate, budget, is_suffix, seed):
    """Whole words in random order, each taken if it still fits the budget (as BERT does)."""
    shape = tf.shape(token_ids)
    slots = shape[1] + 1
    words, lengths, _ = _words(token_ids, candidate, is_suffix)
    keys = tf.where(lengths > 0, tf.random.stateless_uniform([shape[0], slots], seed), 2.0)
    order = tf.argsort(keys, axis=1)

    def take(state, length):
        used, _ = state
        fits = (length > 0) & (used + length <= budget)
        return used + tf.where(fits, length, 0), fits

    _, taken = tf.scan(take, tf.transpose(tf.gather(lengths, order, batch_dims=1)),
                       initializer=(tf.zeros_like(budget), tf.zeros_like(budget, tf.bool)))
    taken = tf.gather(tf.transpose(taken), tf.argsort(order, axis=1), batch_dims=1)
    return tf.gather(taken, words, batch_dims=1) & candidate


def span_lengths(count, seed, span_p=0.2, max_span=10):
    """`count` span lengths in words (int32), drawn from `span_length_pmf(span_p, max_span)` with the stateless
    `seed`: those of span masking.

    Example:
    >>> lengths = span_lengths(1000, tf.constant([0, 1]), span_p=1.0)
    >>> sorted(set(lengths.numpy().tolist()))
    [1]
    """
    logits = tf.math.log(tf.constant(span_length_pmf(span_p, max_span), tf.float32))
    logits = tf.tile(logits[None], [count, 1])
    return tf.cast(tf.random.stateless_categorical(logits, 1, seed)[:, 0], tf.int32) + 1


def _choose_spans(token_ids, candidate, budget, is_suffix, seed, span_p, max_span, max_predictions):
    """SpanBERT's spans (see `mask_batch`): the chosen tokens, for each the draw that decides [MASK], random or
    kept, one per span, and the round that chose it (-1 where none did): a span's number in its row. Each round
    adds a span to every row with budget left and a word that fits it, so `max_predictions` rounds suffice."""
    shape = tf.shape(token_ids)
    slots = shape[1] + 1
    words, lengths, segments = _words(token_ids, candidate, is_suffix)
    numbers = tf.range(slots)[None, :]

    def add_span(round_, taken, used, draws, rounds):
        round_seeds = tf.random.experimental.stateless_split(
            tf.random.experimental.stateless_fold_in(seed, round_), 3)
        left = budget - used
        fits = (lengths > 0) & ~taken & (lengths <= left[:, None])
        start = tf.argmax(tf.where(fits, tf.random.stateless_uniform([shape[0], slots], round_seeds[0]), -1.0),
                          axis=1, output_type=tf.int32)
        end = start + span_lengths(shape[0], round_seeds[1], span_p, max_span)
        # cut short at the first word after the start in another segment, or taken, or past the last word
        segment = tf.gather(segments, start, batch_dims=1)
        stop = (numbers > start[:, None]) & ((segments != segment[:, None]) | taken | (lengths == 0))
        end = tf.minimum(end, tf.reduce_min(tf.where(stop, numbers, slots), axis=1))
        span = (numbers >= start[:, None]) & (numbers < end[:, None]) & tf.reduce_any(fits, axis=1)[:, None]
        span &= tf.cumsum(tf.where(span, lengths, 0), axis=1) <= left[:, None]  # whole words within the budget
        draw = tf.random.stateless_uniform([shape[0], 1], round_seeds[2])
        return (round_ + 1, taken | span, used + tf.reduce_sum(tf.where(span, lengths, 0), axis=1),
                tf.where(span, draw, draws), tf.where(span, round_, rounds))

    def budget_left(round_, taken, used, draws, rounds):
        return tf.reduce_any((lengths > 0) & ~taken & (lengths <= (budget - used)[:, None]))

    _, taken, _, draws, rounds = tf.while_loop(
        budget_left, add_span,
        (tf.constant(0), tf.zeros([shape[0], slots], tf.bool), tf.zeros_like(budget), tf.ones([shape[0], slots]),
         tf.fill([shape[0], slots], -1)),
        maximum_iterations=max_predictions)
    chosen = tf.gather(taken, words, batch_dims=1) & candidate
    return chosen, tf.gather(draws, words, batch_dims=1), tf.where(chosen, tf.gather(rounds, words, batch_dims=1), -1)


def _span_boundaries(spans, max_spans):
    """For each token of a span (`spans`: its number in the row, -1 outside any, fewer than `max_spans`): the positions
    just before and after its span and its offset from the span's start."""
    shape = tf.shape(spans)
    positions = tf.broadcast_to(tf.range(shape[1])[None, :], shape)
    keys = tf.where(spans >= 0, tf.range(shape[0])[:, None] * max_spans + spans, shape[0] * max_spans)
    starts = tf.gather(tf.math.unsorted_segment_min(positions, keys, shape[0] * max_spans + 1), keys)
    ends = tf.gather(tf.math.unsorted_segment_max(positions, keys, shape[0] * max_spans + 1), keys)
    return {"span_left": starts - 1, "span_right": ends + 1, "span_offset": positions - starts}
