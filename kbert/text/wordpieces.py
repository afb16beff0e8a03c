"""Flat wordpiece ops that TFLite runs: BERT's long-word rule, word ids, character offsets.

Only TFLite builtins and tensorflow-text's `ByteSplitWithOffsets` (for character counts):
no ragged gathers, string lengths or Unicode decoding. A character is any byte that is not
a UTF-8 continuation byte (0x80-0xBF), which on valid UTF-8 is exact.
"""

import collections

import tensorflow as tf
from tensorflow_text.python.ops.byte_splitter import gen_byte_splitter

Wordpieces = collections.namedtuple(
    "Wordpieces", ["token_ids", "starts", "ends", "word_ids", "row_splits"])


def merge_long_words(normalized, token_ids, starts, ends, is_suffix, unk_id, max_chars):
    """Replaces the pieces of each word longer than `max_chars` characters by one [UNK].

    tensorflow-text limits words in bytes; BERT limits them in characters. The tokenizer
    lets words of up to `4 * max_chars` bytes through, and this op applies the character
    limit. A word starts at each piece that is not a suffix ("##...").

    Args:
        normalized: string tensor (batch,). The normalized texts.
        token_ids, starts, ends: ragged (batch, (pieces)) tensors from
            `FastWordpieceTokenizer.tokenize_with_offsets(normalized)`.
        is_suffix: bool tensor (vocabulary_size,). Whether each token starts with "##".
        unk_id: int. The id of [UNK].
        max_chars: int. The longest word that keeps its pieces.

    Returns:
        `Wordpieces` of flat int32 tensors: `token_ids`, byte `starts` and `ends` in
        `normalized`, `word_ids` (word index within its text) and `row_splits` (batch + 1,).

    Example:
    >>> pieces = merge_long_words(tf.constant(["abc d"]), tf.ragged.constant([[7, 8, 9]]),
    ...     tf.ragged.constant([[0, 1, 4]]), tf.ragged.constant([[1, 3, 5]]),
    ...     tf.constant([False] * 8 + [True, False]), unk_id=1, max_chars=2)
    >>> pieces.token_ids.numpy().tolist(), pieces.ends.numpy().tolist()
    ([1, 9], [3, 5])
    """
    row_splits = tf.cast(token_ids.row_splits, tf.int32)
    ids = tf.cast(token_ids.flat_values, tf.int32)
    starts, ends = tf.cast(starts.flat_values, tf.int32), tf.cast(ends.flat_values, tf.int32)
    count = tf.shape(ids)[0]
    rows = row_ids(row_splits, count)
    begins = tf.logical_not(tf.gather(is_suffix, ids))
    word = tf.cumsum(tf.cast(begins, tf.int32)) - 1  # global word index of each piece
    word_ids = word - tf.gather(tf.concat([word, [0]], 0), tf.gather(row_splits, rows))
    first_piece = tf.cast(tf.where(begins)[:, 0], tf.int32)
    last_piece = tf.concat([first_piece, [count]], 0)[1:] - 1
    word_start, word_end = tf.gather(starts, first_piece), tf.gather(ends, last_piece)
    # Characters are counted only in words with more bytes than `max_chars` (bytes bound
    # characters from above): in the texts of those words alone, so usually in none.
    candidates = tf.cast(tf.where(word_end - word_start > max_chars)[:, 0], tf.int32)
    cumulative, base = chars_before(
        tf.gather(normalized, tf.gather(rows, tf.gather(first_piece, candidates))))
    chars = (tf.gather(cumulative, base + tf.gather(word_end, candidates))
             - tf.gather(cumulative, base + tf.gather(word_start, candidates)))
    # One spare slot: TFLite's ScatterNd divides by the output size, so a batch without a
    # word (all texts empty) must not scatter into a 0-sized output.
    too_long = tf.scatter_nd(candidates[:, tf.newaxis], tf.cast(chars > max_chars, tf.int32),
                             tf.shape(first_piece) + 1) > 0
    in_long_word = tf.gather(too_long, word)
    keep = begins | tf.logical_not(in_long_word)
    ids = tf.where(in_long_word, unk_id, ids)
    ends = tf.where(in_long_word, tf.gather(word_end, word), ends)
    dropped = tf.concat([[0], tf.cumsum(tf.cast(tf.logical_not(keep), tf.int32))], 0)
    return Wordpieces(*[tf.boolean_mask(field, keep) for field in (ids, starts, ends, word_ids)],
                      row_splits - tf.gather(dropped, row_splits))


def to_char_offsets(texts, byte_map, starts, ends, row_splits):
    """Maps [start, end) byte spans in normalized texts to character spans in the originals.

    A span starts at the character where its first byte came from and ends after the
    character where its last byte came from, as Hugging Face aligns normalized text.

    Args:
        texts: string tensor (batch,). The original UTF-8 texts.
        byte_map: ragged int (batch, (bytes + 1)). For each normalized byte, its origin byte,
            from `FastBertNormalizer.normalize_with_offsets`.
        starts, ends: int32 tensors (pieces,). Byte spans in the normalized texts.
        row_splits: int32 tensor (batch + 1,). The spans of each text.

    Returns:
        Two int32 tensors (pieces,): character starts and ends.

    Example:
    >>> byte_map = tf.ragged.constant([[0, 2, 3, 4]], dtype=tf.int64)  # "e b" came from "é b"
    >>> spans = to_char_offsets(tf.constant(["é b"]), byte_map, tf.constant([0, 2]),
    ...                         tf.constant([1, 3]), tf.constant([0, 2]))
    >>> [s.numpy().tolist() for s in spans]
    [[0, 2], [1, 3]]
    """
    rows = row_ids(row_splits, tf.shape(starts)[0])
    map_start = tf.gather(tf.cast(byte_map.row_splits, tf.int32), rows)
    map_values = tf.cast(byte_map.flat_values, tf.int32)
    first_byte = tf.gather(map_values, map_start + starts)
    last_byte = tf.gather(map_values, map_start + ends - 1)
    cumulative, text_start = chars_before(texts)
    base = tf.gather(text_start, rows)
    origin = tf.gather(cumulative, base)

    def chars_through(byte):  # characters that start at or before `byte`
        return tf.gather(cumulative, base + byte + 1) - origin

    return tf.maximum(chars_through(first_byte) - 1, 0), chars_through(last_byte)


def chars_before(texts):
    """Character counts over the concatenated bytes of `texts`, for differences of two bytes.

    Args:
        texts: string tensor (batch,).

    Returns:
        `(cumulative, text_start)`, int32: `cumulative[text_start[i] + b]` is the number of
        characters (non-continuation bytes) in the texts before byte `b` of text `i`.

    Example:
    >>> cumulative, text_start = chars_before(tf.constant(["aé", "b"]))
    >>> cumulative.numpy().tolist(), text_start.numpy().tolist()
    ([0, 1, 2, 2, 3], [0, 3])
    """
    # The op under `tf_text.ByteSplitter`, without its ragged checks: those add nine `If` ops,
    # and each costs as much as the rest of the tokenizer in a `tf.data` map.
    flat, row_splits, _, _ = gen_byte_splitter.tf_text_byte_split_with_offsets(texts)
    flat = tf.cast(flat, tf.int32)
    lead = tf.cast((flat < 128) | (flat >= 192), tf.int32)
    return tf.concat([[0], tf.cumsum(lead)], 0), tf.cast(row_splits[:-1], tf.int32)


def row_ids(row_splits, count):
    """The row of each of `count` flat values, from int32 `row_splits` (without ragged ops).

    Example:
    >>> row_ids(tf.constant([0, 2, 2, 3]), 3).numpy().tolist()
    [0, 0, 2]
    """
    marks = tf.scatter_nd(row_splits[1:-1, tf.newaxis], tf.ones_like(row_splits[1:-1]),
                          [count + 1])
    return tf.cumsum(marks)[:count]
