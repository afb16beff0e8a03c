"""Masked-LM masking of a batch, with TensorFlow ops (for `tf.data.Dataset.map`)."""

import math

from kbert.start_up import import_tensorflow

tf = import_tensorflow()  # quietly; under torch or JAX, off the GPUs


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
               mask_rate=0.15, max_predictions=20, whole_word=False):
    """Chooses and corrupts BERT's masked-LM targets in a batch of packed sequences.

    Each row predicts `round(mask_rate * n)` of its `n` non-special, non-padding tokens (at
    least 1, at most `max_predictions`), chosen at random; 80% of them become [MASK], 10% a
    random non-special token and 10% stay. With `whole_word`, all the WordPieces of a word are
    chosen together: each word, in random order, is taken if it still fits the row's budget.
    Randomness is stateless, from `seed`: same seed, same masks.

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
        whole_word: bool. Mask whole words.

    Returns:
        dict: `token_ids` (corrupted), `mask_positions` and `mask_ids` (batch,
        max_predictions) int32, in position order, padded with 0, and `mask_weights`
        (float32, 1 for a real prediction).

    Example:
    >>> out = mask_batch(tf.constant([[2, 7, 8, 9, 3, 0]]), tf.constant([[1, 1, 1, 1, 1, 0]]),
    ...                  tf.constant([1, 2]), [0, 2, 3], [False] * 10, 4, [5, 6, 7, 8, 9],
    ...                  mask_rate=0.5, max_predictions=3)
    >>> out["mask_weights"].numpy().tolist()
    [[1.0, 1.0, 0.0]]
    """
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    shape = tf.shape(token_ids)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
    special = tf.reduce_any(token_ids[..., None] == tf.constant(special_ids, tf.int32), -1)
    candidate = (tf.cast(padding_mask, tf.bool)) & ~special
    count = tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1)
    budget = tf.cast(tf.round(tf.cast(count, tf.float32) * mask_rate), tf.int32)
    budget = tf.minimum(tf.minimum(tf.maximum(budget, 1), max_predictions), count)

    if whole_word:
        chosen = _choose_words(token_ids, candidate, budget, is_suffix, seeds[0])
    else:
        keys = tf.where(candidate, tf.random.stateless_uniform(shape, seeds[0]), 2.0)
        rank = tf.argsort(tf.argsort(keys, axis=1, stable=True), axis=1)
        chosen = candidate & (rank < budget[:, None])

    draw = tf.random.stateless_uniform(shape, seeds[1])
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
    return {
        "token_ids": corrupted,
        "mask_positions": positions,
        "mask_ids": tf.where(weights, tf.gather(token_ids, positions, batch_dims=1), 0),
        "mask_weights": tf.cast(weights, tf.float32),
    }


def _choose_words(token_ids, candidate, budget, is_suffix, seed):
    """Whole words in random order, each taken if it still fits the budget (as BERT does)."""
    shape = tf.shape(token_ids)
    slots = shape[1] + 1  # word 0 collects the tokens that are no candidates
    # A word starts at a candidate that is not "##..." or whose left neighbour is no candidate.
    suffix = tf.gather(tf.constant(is_suffix, tf.bool), token_ids)
    after_candidate = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
    words = tf.cumsum(tf.cast(candidate & ~(suffix & after_candidate), tf.int32), axis=1)
    words = tf.where(candidate, words, 0)
    rows = tf.range(shape[0])[:, None] * slots
    lengths = tf.reshape(tf.math.unsorted_segment_sum(
        tf.cast(candidate, tf.int32), words + rows, shape[0] * slots), [shape[0], slots])
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
