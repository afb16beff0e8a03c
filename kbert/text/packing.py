"""Truncating and packing token rows into `[CLS] A [SEP] B [SEP]`, in ops TFLite runs."""

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


def pack_segments(segments, kept, start_row, end_row, pad_row, width):
    """Packs flat token rows into `[CLS] A [SEP] (B [SEP])` rows of `width`, padded.

    Index arithmetic on flat tensors (no ragged ops): position `p` of a packed row gathers
    its token from the flat values of its segment, or takes a special row.

    Args:
        segments: list of one or two `(values, row_splits)`: int32 values (tokens, columns),
            the tokens of all texts one after another, and int32 row_splits (batch + 1,).
        kept: list of int32 tensors (batch,). Tokens kept of each segment, from the start
            (see `truncation_lengths`).
        start_row, end_row, pad_row: list of int. The columns of [CLS], [SEP] and padding.
        width: int or int32 scalar tensor. Positions per packed row, at least the longest.

    Returns:
        `(packed, segment_ids, padding_mask)`: int32 (batch, width, columns), int32
        (batch, width) (1 for the second segment and its [SEP]), bool (batch, width).

    Example:
    >>> a = (tf.constant([[7], [8], [9]]), tf.constant([0, 3]))
    >>> packed, segment_ids, _ = pack_segments(
    ...     [a, a], [tf.constant([1]), tf.constant([2])], [1], [2], [0], width=7)
    >>> packed[..., 0].numpy().tolist(), segment_ids.numpy().tolist()
    ([[1, 7, 2, 7, 8, 2, 0]], [[0, 0, 0, 1, 1, 1, 0]])
    """
    position = tf.range(width)[tf.newaxis, :]
    padding_mask = position < (sum(kept) + len(segments) + 1)[:, tf.newaxis]
    # expand_dims, not [..., tf.newaxis]: on a bool of two unknown dims (padding="longest") that
    # stays a TF StridedSlice, which TFLite lacks.
    packed = tf.where(tf.expand_dims(padding_mask, -1), end_row, pad_row)  # [SEP] where not a token
    packed = tf.where(tf.equal(position, 0)[..., tf.newaxis], start_row, packed)
    begin = 1  # the position of the segment's first token
    for (values, row_splits), length in zip(segments, kept):
        length = length[:, tf.newaxis]
        index = tf.minimum(tf.maximum(position - begin, 0), tf.maximum(length - 1, 0))
        # One row of zeros after the values: a batch of empty texts still has a row to gather.
        values = tf.concat([values, tf.zeros([1, values.shape[1]], values.dtype)], 0)
        gathered = tf.gather(values, row_splits[:-1, tf.newaxis] + index)
        inside = (position >= begin) & (position < begin + length)
        packed = tf.where(tf.expand_dims(inside, -1), gathered, packed)
        begin = begin + length + 1
    second = padding_mask & (position > kept[0][:, tf.newaxis] + 1)  # after the first [SEP]
    # A select, not a cast: with a cast from bool, the TFLite converter emitted a bool
    # zeros_like (for Embedding's index check), which TFLite lacks.
    return packed, tf.where(second, 1, 0), padding_mask
