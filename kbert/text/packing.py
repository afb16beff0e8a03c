"""Truncating and packing token rows into `[CLS] A [SEP] B [SEP]`, with TensorFlow ops only."""

import tensorflow as tf

TRUNCATIONS = ("longest_first", "only_second")


def truncation_lengths(lengths, budget, truncation="longest_first"):
    """How many tokens of each segment fit in `budget`, the way Hugging Face `tokenizers` cuts.

    `longest_first` leaves a pair alone when it fits; otherwise it cuts the longer segment down
    to what the shorter leaves free, and when both are too long gives each half the budget (the
    longer one, or the second on a tie, takes the odd token). `only_second` cuts the second
    segment; if the first alone exceeds the budget it is cut too and the second is emptied
    (Hugging Face raises an error there). A lone segment is cut to the budget.

    Args:
        lengths: list of int tensors of shape (batch,), one per segment (one or two).
        budget: int. Tokens available for the segments, special tokens excluded.
        truncation: str. "longest_first" or "only_second".

    Example:
    >>> [n.numpy().tolist() for n in truncation_lengths([tf.constant([5]), tf.constant([5])], 5)]
    [[2], [3]]
    """
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    first, second = lengths
    budget = tf.cast(budget, first.dtype)
    if truncation == "only_second":
        kept_first = tf.minimum(first, budget)
        return [kept_first, tf.minimum(second, budget - kept_first)]
    shorter = tf.minimum(first, second)
    longer_kept = tf.where(shorter > budget, shorter, tf.maximum(shorter, budget - shorter))
    over = shorter + longer_kept > budget
    shorter_kept = tf.where(over, budget // 2, shorter)
    longer_kept = tf.where(over, budget // 2 + budget % 2, longer_kept)
    swapped = first > second
    return [
        tf.minimum(first, tf.where(swapped, longer_kept, shorter_kept)),
        tf.minimum(second, tf.where(swapped, shorter_kept, longer_kept)),
    ]


def pack_segments(segments, start_row, end_row, max_length, truncation="longest_first"):
    """Truncates one or two segments to fit `max_length` and packs them between special rows.

    Each segment is a ragged tensor of shape (batch, (tokens), columns); `start_row` goes
    first and `end_row` after each segment. A last column holds the segment id (0, then 1;
    the special rows take the id of the segment they close or open).

    Args:
        segments: list of one or two int32 `tf.RaggedTensor`s with the same number of columns.
        start_row: list of int. The row for [CLS].
        end_row: list of int. The row for [SEP].
        max_length: int. Rows in the packed output at most, special rows included.
        truncation: str. "longest_first" or "only_second" (see `truncation_lengths`).

    Example:
    >>> a = tf.ragged.constant([[[7], [8], [9]]], ragged_rank=1)
    >>> pack_segments([a, a], [1], [2], max_length=6).to_list()
    [[[1, 0], [7, 0], [2, 0], [7, 1], [8, 1], [2, 1]]]
    """
    budget = max_length - len(segments) - 1
    if budget < 0:
        raise ValueError(f"max_length={max_length} leaves no room for the special tokens.")
    kept = truncation_lengths([s.row_lengths() for s in segments], budget, truncation)
    batch = segments[0].nrows()
    pieces = []
    for segment_id, (segment, length) in enumerate(zip(segments, kept)):
        if segment_id == 0:
            pieces.append(_special(start_row, batch, segment_id))
        pieces.append(_with_segment_id(_keep_first(segment, length), segment_id))
        pieces.append(_special(end_row, batch, segment_id))
    return tf.concat(pieces, axis=1)


def _keep_first(rows, lengths):
    """The first `lengths[i]` entries of each row `i` of a ragged tensor."""
    position = tf.range(tf.shape(rows.values, out_type=tf.int64)[0]) - tf.gather(
        rows.row_splits, rows.value_rowids()
    )
    keep = position < tf.gather(lengths, rows.value_rowids())
    return tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(rows.values, keep),
        tf.boolean_mask(rows.value_rowids(), keep),
        nrows=rows.nrows(),
    )


def _with_segment_id(rows, segment_id):
    values = tf.pad(rows.values, [[0, 0], [0, 1]], constant_values=segment_id)
    return rows.with_values(values)


def _special(row, batch, segment_id):
    values = tf.tile(tf.constant([[*row, segment_id]], tf.int32), [tf.cast(batch, tf.int32), 1])
    return tf.RaggedTensor.from_uniform_row_length(values, 1, nrows=batch)
