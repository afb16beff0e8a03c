"""BERT tokenization as a graph that TFLite runs: tensorflow-text's fast ops and builtins only.

`kbert.text.BertTokenizer.encode` gives the same ids, but its graph holds ops that TFLite
lacks (string length and substr, ragged gathers, bincounts, Unicode decoding). This graph
uses only TFLite builtins and three tensorflow-text ops that have TFLite kernels
(`CUSTOM_OPS`): `FastBertNormalize`, `FastWordpieceTokenizeWithOffsets` and
`TFText>ByteSplitWithOffsets` (UTF-8 lead bytes, for character counts). Packing and padding
are index arithmetic on flat tensors; no SELECT_TF_OPS (Flex) op is needed.

On valid UTF-8 it returns exactly what `BertTokenizer.encode` returns (tested). Invalid
UTF-8 bytes are kept as bytes: each acts as an unknown character (an [UNK] token or part
of one) and counts as one character in the offsets, where a Python caller that decodes
with replacement would see U+FFFD, which BERT deletes.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text.packing import truncation_lengths
from kbert.text.tokenizer import MAX_WORD_CHARS

# The TFLite custom ops (tensorflow-text kernels) that the string-in graphs need.
CUSTOM_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "TFText>ByteSplitWithOffsets")


def encode(tokenizer, texts, pairs=None, max_length=128, padding="max_length",
           truncation="longest_first", max_first_length=None, return_offsets=False):
    """Tokenizes and packs string tensors like `BertTokenizer.encode`, in TFLite-friendly ops.

    Args:
        tokenizer: `kbert.text.BertTokenizer`.
        texts: string tensor (batch,). UTF-8.
        pairs: None or string tensor (batch,). The second segments.
        max_length: int. Most tokens per row, special tokens included.
        padding: "max_length" (a static width) or "longest".
        truncation: "longest_first" or "only_second" (as `BertTokenizer`).
        max_first_length: int or None. With "only_second", first segments (QA questions) are
            first cut to this many tokens, as `kbert.data.SquadWindows` does.
        return_offsets: bool. Also `offsets` (batch, length, 2), character spans in the
            original texts, and `word_ids` (batch, length); -1 / (0, 0) for special tokens.

    Returns:
        dict of int32 tensors: `token_ids`, `segment_ids`, `padding_mask`, `lengths` (the
        tokens each row would have without truncation, special tokens included), and the
        offsets when asked.

    Example (TensorFlow ops; runs under any backend):
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> encode(tokenizer, tf.constant(["hi hi", ""]), max_length=5)["token_ids"].numpy().tolist()
    [[2, 5, 5, 3, 0], [2, 3, 0, 0, 0]]
    """
    segments = [texts] if pairs is None else [texts, pairs]
    rows = [_tokenize(tokenizer, segment, return_offsets) for segment in segments]
    lengths = [row["row_lengths"] for row in rows]
    budget = max_length - len(segments) - 1
    if budget < 1:
        raise ValueError(f"max_length={max_length} leaves no room for the text.")
    if max_first_length is not None and len(segments) == 2:
        first = tf.minimum(lengths[0], max_first_length)
        kept = [first, tf.minimum(lengths[1], tf.maximum(budget - first, 0))]
    else:
        kept = truncation_lengths(lengths, budget, truncation)
    full = sum(lengths) + len(segments) + 1
    total = sum(kept) + len(segments) + 1
    if padding == "max_length":
        width = max_length
    elif padding == "longest":
        width = tf.reduce_max(tf.concat([total, [0]], 0))
    else:
        raise ValueError(f"padding must be 'max_length' or 'longest', got {padding!r}.")
    position = tf.range(width)[tf.newaxis, :]
    cls = tf.equal(position, 0)
    first_end = kept[0][:, tf.newaxis] + 1  # the position of the first [SEP]
    in_first = (position >= 1) & (position < first_end)
    is_sep = tf.equal(position, first_end)
    pieces = [(in_first, _gather_rows(rows[0], position - 1))]
    segment_ids = tf.zeros_like(position + first_end)
    if len(segments) == 2:
        second_end = first_end + kept[1][:, tf.newaxis] + 1
        in_second = (position > first_end) & (position < second_end)
        pieces.append((in_second, _gather_rows(rows[1], position - first_end - 1)))
        is_sep |= tf.equal(position, second_end)
        second = (position > first_end) & (position <= second_end)
        segment_ids = tf.where(second, tf.ones_like(segment_ids), segment_ids)
    padding_mask = position < total[:, tf.newaxis]

    def column(name, special, pad):
        value = tf.fill(tf.shape(segment_ids), pad)
        value = tf.where(padding_mask, tf.fill(tf.shape(segment_ids), special), value)
        for inside, gathered in pieces:
            value = tf.where(inside, gathered[name], value)
        return value

    token_ids = column("token_ids", tokenizer.sep_token_id, tokenizer.pad_token_id)
    token_ids = tf.where(cls, tokenizer.cls_token_id, token_ids)
    outputs = {"token_ids": token_ids, "segment_ids": segment_ids,
               "padding_mask": tf.cast(padding_mask, tf.int32), "lengths": full}
    if return_offsets:
        outputs["offsets"] = tf.stack([column("starts", 0, 0), column("ends", 0, 0)], axis=-1)
        outputs["word_ids"] = column("word_ids", -1, -1)
    if padding == "max_length":
        for key, value in outputs.items():
            if key != "lengths":
                value.set_shape([None, max_length, *value.shape[2:]])
    return outputs


def _gather_rows(row, index):
    """Values of each row at `index` (batch, width); out-of-row positions give junk."""
    count = row["row_lengths"][:, tf.newaxis]
    flat = row["row_starts"][:, tf.newaxis] + tf.minimum(tf.maximum(index, 0), tf.maximum(count - 1, 0))
    return {name: tf.gather(tf.concat([values, tf.zeros([1], values.dtype)], 0), flat)
            for name, values in row["values"].items()}


def _tokenize(tokenizer, texts, return_offsets):
    """Flat wordpieces of each text, with BERT's long-word rule and, if asked, char offsets."""
    normalized, byte_map, ids, starts, ends = tokenizer.wordpieces(texts, return_offsets)
    row_splits = tf.cast(ids.row_splits, tf.int32)
    ids = ids.flat_values
    starts, ends = tf.cast(starts.flat_values, tf.int32), tf.cast(ends.flat_values, tf.int32)
    count = tf.shape(ids)[0]
    rows = _row_ids(row_splits, count)
    begins = tf.logical_not(tf.gather(tokenizer.is_suffix(), ids))
    word = tf.cumsum(tf.cast(begins, tf.int32)) - 1  # global word index of each piece
    word_ids = word - tf.gather(tf.concat([word, [0]], 0), tf.gather(row_splits, rows))
    first_piece = tf.cast(tf.where(begins)[:, 0], tf.int32)
    last_piece = tf.concat([first_piece[1:], [count]], 0) - 1
    word_start, word_end = tf.gather(starts, first_piece), tf.gather(ends, last_piece)
    long_candidates = word_end - word_start > MAX_WORD_CHARS  # bytes: an upper bound on chars
    values = {"token_ids": ids, "starts": starts, "ends": ends, "word_ids": word_ids}
    names = sorted(values)

    def merge():
        chars = _chars_before(normalized)
        base = tf.gather(chars["row_starts"], tf.gather(rows, first_piece))
        characters = (tf.gather(chars["cumulative"], base + word_end)
                      - tf.gather(chars["cumulative"], base + word_start))
        in_long_word = tf.gather(long_candidates & (characters > MAX_WORD_CHARS), word)
        keep = begins | tf.logical_not(in_long_word)
        merged = dict(values, token_ids=tf.where(in_long_word, tokenizer.unk_token_id, ids),
                      ends=tf.where(in_long_word, tf.gather(word_end, word), ends))
        dropped = tf.concat([[0], tf.cumsum(tf.cast(tf.logical_not(keep), tf.int32))], 0)
        splits = row_splits - tf.gather(dropped, row_splits)
        return [tf.boolean_mask(merged[name], keep) for name in names] + [splits]

    merged = tf.cond(tf.reduce_any(long_candidates), merge,
                     lambda: [values[name] for name in names] + [row_splits])
    values, row_splits = dict(zip(names, merged[:-1])), merged[-1]
    if return_offsets:
        rows = _row_ids(row_splits, tf.shape(values["token_ids"])[0])
        values["starts"], values["ends"] = _char_offsets(
            texts, byte_map, values["starts"], values["ends"], rows)
    else:
        del values["starts"], values["ends"], values["word_ids"]
    return {"values": values, "row_lengths": row_splits[1:] - row_splits[:-1],
            "row_starts": row_splits[:-1]}


def _row_ids(row_splits, count):
    """The row of each of `count` flat values, from int32 `row_splits` (rows + 1,)."""
    marks = tf.scatter_nd(row_splits[1:-1, tf.newaxis], tf.ones_like(row_splits[1:-1]), [count + 1])
    return tf.cumsum(marks)[:count]


def _chars_before(texts):
    """`cumulative[row_starts[i] + b]`: the UTF-8 characters (lead bytes) before byte b of text i."""
    data = tf_text.ByteSplitter().split(texts)
    flat = tf.cast(data.flat_values, tf.int32)
    lead = tf.cast((flat < 128) | (flat >= 192), tf.int32)
    cumulative = tf.concat([[0], tf.cumsum(lead)], 0)
    row_starts = tf.cast(data.row_splits[:-1], tf.int32)
    return {"cumulative": cumulative, "row_starts": row_starts, "offset": tf.gather(cumulative, row_starts)}


def _char_offsets(texts, byte_map, starts, ends, rows):
    """[start, end) byte spans in the normalized texts to character spans in the originals."""
    map_start = tf.gather(tf.cast(byte_map.row_splits, tf.int32), rows)
    map_values = tf.cast(byte_map.flat_values, tf.int32)
    first_byte = tf.gather(map_values, map_start + starts)
    last_byte = tf.gather(map_values, map_start + ends - 1)
    chars = _chars_before(texts)
    base = tf.gather(chars["row_starts"], rows)
    origin = tf.gather(chars["offset"], rows)

    def chars_through(byte):  # characters that start at or before `byte`
        return tf.gather(chars["cumulative"], base + byte + 1) - origin

    return tf.maximum(chars_through(first_byte) - 1, 0), chars_through(last_byte)
