"""TensorFlow ops on flat wordpiece rows: BERT's long-word rule, word ids, character offsets."""

import collections

import tensorflow as tf

Wordpieces = collections.namedtuple(
    "Wordpieces", ["token_ids", "starts", "ends", "rows", "word_ids"])


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
        `Wordpieces` of flat tensors: `token_ids`, byte `starts` and `ends` in `normalized`,
        `rows` (int64 batch index) and `word_ids` (word index within its text).

    Example:
    >>> pieces = merge_long_words(tf.constant(["abc d"]), tf.ragged.constant([[7, 8, 9]]),
    ...     tf.ragged.constant([[0, 1, 4]]), tf.ragged.constant([[1, 3, 5]]),
    ...     tf.constant([False] * 8 + [True, False]), unk_id=1, max_chars=2)
    >>> pieces.token_ids.numpy().tolist(), pieces.ends.numpy().tolist()
    ([1, 9], [3, 5])
    """
    rows, row_splits = token_ids.value_rowids(), token_ids.row_splits
    token_ids, starts, ends = token_ids.flat_values, starts.flat_values, ends.flat_values
    begins = tf.logical_not(tf.gather(is_suffix, token_ids))
    word = tf.cumsum(tf.cast(begins, tf.int64)) - 1
    first_piece = tf.where(begins)[:, 0]
    last_piece = tf.concat([first_piece, tf.shape(token_ids, out_type=tf.int64)], 0)[1:] - 1
    word_start, word_end = tf.gather(starts, first_piece), tf.gather(ends, last_piece)
    pieces = Wordpieces(token_ids, starts, ends, rows,
                        word - tf.gather(word, tf.gather(row_splits, rows)))

    def merge():
        # Only words of more than max_chars bytes can have more than max_chars characters.
        candidates = tf.where(word_end - word_start > max_chars)[:, 0]
        texts = tf.gather(normalized, tf.gather(rows, tf.gather(first_piece, candidates)))
        chars = tf.strings.length(
            tf.strings.substr(texts, tf.gather(word_start, candidates),
                              tf.gather(word_end - word_start, candidates)),
            unit="UTF8_CHAR")
        long_words = tf.scatter_nd(candidates[:, tf.newaxis],
                                   tf.cast(chars > max_chars, tf.int32),
                                   tf.shape(word_start, out_type=tf.int64))
        in_long_word = tf.gather(long_words, word) > 0
        keep = tf.logical_or(begins, tf.logical_not(in_long_word))
        merged = pieces._replace(
            token_ids=tf.where(in_long_word, tf.cast(unk_id, token_ids.dtype), token_ids),
            ends=tf.where(in_long_word, tf.gather(word_end, word), ends))
        return Wordpieces(*[tf.boolean_mask(field, keep) for field in merged])

    return tf.cond(tf.reduce_any(word_end - word_start > max_chars), merge, lambda: pieces)


def to_char_offsets(texts, byte_map, starts, ends, rows):
    """Maps [start, end) byte spans in normalized texts to character spans in the originals.

    A span starts at the character where its first byte came from and ends after the
    character where its last byte came from, as Hugging Face aligns normalized text.

    Args:
        texts: string tensor (batch,). The original UTF-8 texts.
        byte_map: ragged int (batch, (bytes + 1)). For each normalized byte, its origin byte,
            from `FastBertNormalizer.normalize_with_offsets`.
        starts, ends: int64 tensors (pieces,). Byte spans in the normalized texts.
        rows: int64 tensor (pieces,). The text of each span.

    Returns:
        Two int64 tensors (pieces,): character starts and ends.

    Example:
    >>> texts = tf.constant(["é b"])
    >>> byte_map = tf.ragged.constant([[0, 2, 3, 4]], dtype=tf.int64)  # "e b" came from "é b"
    >>> spans = to_char_offsets(texts, byte_map, tf.constant([0, 2], tf.int64),
    ...                         tf.constant([1, 3], tf.int64), tf.constant([0, 0], tf.int64))
    >>> [s.numpy().tolist() for s in spans]
    [[0, 2], [1, 3]]
    """
    map_start = tf.gather(byte_map.row_splits, rows)
    first_byte = tf.gather(byte_map.values, map_start + starts)
    last_byte = tf.gather(byte_map.values, map_start + ends - 1)
    # In ASCII texts characters are bytes; only the other texts are decoded.
    multibyte = tf.strings.length(texts, unit="UTF8_CHAR") < tf.strings.length(texts)
    _, char_starts = tf.strings.unicode_decode_with_offsets(
        tf.boolean_mask(texts, multibyte), "UTF-8")
    # Each text's place among the decoded ones; ASCII texts point at a padding entry.
    place = tf.gather(tf.cumsum(tf.cast(multibyte, tf.int64), exclusive=True), rows)
    byte_lengths = tf.cast(tf.strings.length(tf.boolean_mask(texts, multibyte)), tf.int64)
    text_start = tf.pad(tf.cumsum(byte_lengths, exclusive=True), [[0, 1]])
    all_char_starts = char_starts.values + tf.gather(text_start, char_starts.value_rowids())
    chars_before_text = tf.gather(char_starts.row_splits, place)
    is_multibyte = tf.gather(multibyte, rows)

    def char_index(byte):
        position = byte + tf.gather(text_start, place)
        found = tf.searchsorted(all_char_starts, position, side="right", out_type=tf.int64)
        return tf.where(is_multibyte, found - 1 - chars_before_text, byte)

    return char_index(first_byte), char_index(last_byte) + 1
