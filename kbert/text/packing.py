"""Truncating and packing token rows into `[CLS] A [SEP] B [SEP]`, in ops TFLite runs, and what kbert's in-graph
tokenizers share: their `encode` (`encode_texts`) and their call on Python strings (`encode_batch`); and the same
calls over `kbert_core`'s pure-Python tokenizers (`pack_python`, `python_encode`), for offsets ALBERT's op does not
give and for RoBERTa's byte-level BPE, which has no TensorFlow op."""

import functools

import numpy as np
import tensorflow as tf

from kbert.text.decoding import decode
from kbert_core.packing import pack

TRUNCATIONS = ("longest_first", "only_second")
PADDINGS = ("max_length", "longest")


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


def encode_texts(tokenize, texts, pairs, special_ids, max_length, padding="max_length", truncation="longest_first",
                 *, max_first_length=None, return_lengths=False, pad_to_multiple_of=None, columns=None):
    """Tokenizes string tensors with `tokenize`, truncates and packs them: the `encode` of kbert's in-graph tokenizers.

    Args:
        tokenize: function from a string tensor (batch,) to `(values, row_splits)` as `pack_segments`
            takes them: each token's id, then its values of `columns`.
        texts: string tensor of shape (batch,) or () (then the outputs lose the batch axis).
        pairs: None or a string tensor shaped like `texts`.
        special_ids: (cls, sep, pad). The ids of [CLS], [SEP] and padding.
        max_length, padding, truncation, max_first_length, return_lengths, pad_to_multiple_of: as
            `kbert.text.BertTokenizer.encode` takes them.
        columns: None or dict {name: value on special tokens and padding}: the tokens' further
            columns, in order. An int is one column (output (batch, width)); a list of n ints, n
            columns (output (batch, width, n)).

    Returns:
        dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask`, the `columns` and, with
        `return_lengths`, `lengths` (batch,) and `segment_lengths` (batch, segments): the tokens
        before truncation, of each row (special tokens included) and of each of its texts.

    Example:
    >>> def characters(texts):  # a token per character, its code point as id, and its index as a column
    ...     chars = tf.strings.unicode_decode(texts, "UTF-8")
    ...     index = tf.cast(tf.ragged.range(chars.row_lengths()).flat_values, tf.int32)
    ...     return tf.stack([chars.flat_values, index], 1), tf.cast(chars.row_splits, tf.int32)
    >>> out = encode_texts(characters, tf.constant(["ab", "c"]), tf.constant(["d", ""]), (1, 2, 0), max_length=6,
    ...                    padding="longest", columns={"index": -1})
    >>> out["token_ids"].numpy().tolist(), out["index"].numpy().tolist()
    ([[1, 97, 98, 2, 100, 2], [1, 99, 2, 2, 0, 0]], [[-1, 0, 1, -1, 0, -1], [-1, 0, -1, -1, -1, -1]])
    """
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}.")
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
    texts = tf.convert_to_tensor(texts, tf.string)
    scalar = texts.shape.rank == 0
    segments = [texts] if pairs is None else [texts, tf.convert_to_tensor(pairs, tf.string)]
    if scalar:
        segments = [segment[tf.newaxis] for segment in segments]
    budget = max_length - len(segments) - 1
    if budget < 0:
        raise ValueError(f"max_length={max_length} leaves no room for the special tokens.")
    rows = [tokenize(segment) for segment in segments]
    lengths = [row_splits[1:] - row_splits[:-1] for _, row_splits in rows]
    cut = lengths if max_first_length is None else [tf.minimum(lengths[0], max_first_length), *lengths[1:]]
    kept = truncation_lengths(cut, budget, truncation)
    width = max_length
    if padding == "longest":
        width = tf.reduce_max(tf.concat([sum(kept) + len(segments) + 1, [0]], 0))
        if pad_to_multiple_of:
            width = tf.minimum(-(-width // pad_to_multiple_of) * pad_to_multiple_of, max_length)
    columns = columns or {}
    specials = [v for value in columns.values() for v in (value if isinstance(value, list) else [value])]
    cls, sep, pad = special_ids
    packed, segment_ids, padding_mask = pack_segments(
        rows, kept, [cls, *specials], [sep, *specials], [pad, *specials], width)
    outputs = {"token_ids": packed[..., 0], "segment_ids": segment_ids,
               "padding_mask": tf.cast(padding_mask, tf.int32)}
    column = 1
    for name, value in columns.items():
        if isinstance(value, list):
            outputs[name] = packed[..., column : column + len(value)]
            column += len(value)
        else:
            outputs[name] = packed[..., column]
            column += 1
    if return_lengths:
        outputs["lengths"] = sum(lengths) + len(segments) + 1
        outputs["segment_lengths"] = tf.stack(lengths, axis=-1)
    return {key: value[0] for key, value in outputs.items()} if scalar else outputs


def encode_batch(encode, graphs, texts, pairs=None, **options):
    """Runs a tokenizer's `encode` on Python strings, in one `tf.function` per `options` (kept in the dict `graphs`),
    and returns numpy arrays: what calling kbert's in-graph tokenizers does.

    A str is a batch of one. Bytes are decoded as UTF-8, with each invalid sequence read as U+FFFD;
    a lone surrogate in a str counts as "?". Anything else raises a TypeError naming the text.

    Example:
    >>> def encode(texts, pairs=None, unit="BYTE"):
    ...     return {"length": tf.strings.length(texts, unit)}
    >>> encode_batch(encode, {}, ["ab", b"c\\xff"]), encode_batch(encode, {}, "né", unit="UTF8_CHAR")
    ({'length': array([2, 4], dtype=int32)}, {'length': array([2], dtype=int32)})
    """
    texts = _utf8_batch(texts, "texts")
    inputs = [texts] if pairs is None else [texts, _utf8_batch(pairs, "pairs")]
    if len(inputs[-1]) != len(texts):
        raise ValueError(f"Got {len(texts)} texts but {len(inputs[-1])} pairs.")
    key = (len(inputs), *sorted(options.items()))
    if key not in graphs:
        graphs[key] = tf.function(lambda *segments: encode(*segments, **options),
                                  input_signature=[tf.TensorSpec([None], tf.string)] * len(inputs))
    outputs = graphs[key](*[tf.constant(batch, tf.string) for batch in inputs])
    return {name: value.numpy() for name, value in outputs.items()}


def _utf8_batch(texts, name):
    """A list of valid UTF-8 bytes from a str, bytes or a sequence of them."""
    if isinstance(texts, (str, bytes)):
        texts = [texts]
    batch = []
    for i, text in enumerate(texts):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] is {type(text).__name__}, not str: pass '' for an empty text.")
        batch.append(text.encode("utf-8", "replace"))
    return batch


def pack_python(tokenizer, texts, pairs=None, max_length=128, padding="max_length", truncation="longest_first",
                return_offsets=False, return_lengths=False, max_first_length=None, pad_to_multiple_of=None):
    """Tokenizes and packs with a pure-Python tokenizer of `kbert_core` (`ByteLevelBPE`, `SentencePiece`): what
    calling kbert's tokenizers over them returns, numpy arrays with the keys and options of
    `kbert.text.BertTokenizer`'s call, laid out by the tokenizer's `layout` (`kbert_core.Layout`).

    Texts as `encode_batch` reads them (a str is a batch of one, bytes decoded with replacement).

    Example:
    >>> from kbert_core import SentencePiece
    >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3),
    ...           ("▁hi", -3, 1)]
    >>> out = pack_python(SentencePiece(pieces, b""), ["hi", "hi hi"], padding="longest", return_offsets=True)
    >>> out["token_ids"].tolist(), out["offsets"][1, 1:3].tolist()
    ([[2, 5, 3, 0], [2, 5, 5, 3]], [[0, 2], [3, 5]])
    """
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}.")
    texts = [text.decode("utf-8") for text in _utf8_batch(texts, "texts")]
    segments = [[tokenizer.tokenize(text) for text in texts]]
    if pairs is not None:
        pairs = [pair.decode("utf-8") for pair in _utf8_batch(pairs, "pairs")]
        if len(pairs) != len(texts):
            raise ValueError(f"Got {len(texts)} texts but {len(pairs)} pairs.")
        segments.append([tokenizer.tokenize(pair) for pair in pairs])
    specials = tokenizer.layout.specials(len(segments))
    segment_lengths = np.array([[len(row[0]) for row in rows] for rows in zip(*segments)], "int32").reshape(
        len(texts), len(segments))
    lengths = segment_lengths.sum(axis=1, dtype="int32") + specials
    width = max_length
    if padding == "longest":  # no row is cut shorter than max_length allows
        width = int(min(max_length, lengths.max(initial=specials)))
    out = pack(segments[0], tokenizer.layout, width, segments[1] if pairs is not None else None, truncation,
               max_first_length)
    if padding == "longest":
        used = int(out["padding_mask"].sum(axis=1).max(initial=specials))
        if pad_to_multiple_of:
            used = min(-(-used // pad_to_multiple_of) * pad_to_multiple_of, max_length)
        out = {key: value[:, :used] for key, value in out.items() if key != "truncated"}
        if used > width:
            out = {key: np.pad(value, [(0, 0), (0, used - width)] + [(0, 0)] * (value.ndim - 2),
                               constant_values=tokenizer.layout.pad if key == "token_ids" else
                               -1 if key == "word_ids" else 0) for key, value in out.items()}
    keys = ["token_ids", "segment_ids", "padding_mask"] + (["offsets", "word_ids"] if return_offsets else [])
    result = {key: out[key] for key in keys}
    if return_lengths:
        result.update(lengths=lengths, segment_lengths=segment_lengths)
    return result


@tf.autograph.experimental.do_not_convert  # Python code, called while a graph is traced, not converted into it
def python_encode(call, texts, pairs=None, return_offsets=False, return_lengths=False, **options):
    """A tokenizer's `encode` on string tensors by its call on Python strings (`call`, which returns numpy arrays)
    in a `tf.numpy_function`: it maps over `tf.data` under any backend, but runs in Python, and a graph holding it
    cannot be saved (SavedModel, TFLite) for string inputs.

    Example:
    >>> def call(texts, pairs=None, **options):
    ...     return {"token_ids": np.array([[len(text)] for text in texts], "int32")}
    >>> python_encode(call, tf.constant(["ab", "c"]))["token_ids"].numpy().tolist()
    [[2], [1]]
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    scalar = texts.shape.rank == 0
    inputs = [texts] if pairs is None else [texts, tf.convert_to_tensor(pairs, tf.string)]
    if scalar:
        inputs = [value[tf.newaxis] for value in inputs]

    def run(*batches):
        decoded = [[text.decode("utf-8", "replace") for text in batch.tolist()] for batch in batches]
        out = call(*decoded, return_offsets=return_offsets, return_lengths=return_lengths, **options)
        return [np.asarray(value, "int32") for value in out.values()]

    example = call([""], [""] if pairs is not None else None, return_offsets=return_offsets,
                   return_lengths=return_lengths, **{**options, "padding": "longest"})
    values = tf.nest.flatten(tf.numpy_function(run, inputs, [tf.int32] * len(example), stateful=False))  # 1: a tensor
    outputs = {}
    for name, value, shape in zip(example, values, (v.shape for v in example.values())):
        value.set_shape([None] * len(shape))
        outputs[name] = value[0] if scalar else value
    return outputs


class CoreSpecialIds:
    """The special token ids of a tokenizer on a kbert_core one (`core`: `ByteLevelBPE`, `SentencePiece`), whose
    `pad`, `cls` and `sep` ids it holds and whose unknown and mask tokens a subclass names (`UNK_TOKEN`,
    `MASK_TOKEN`)."""

    UNK_TOKEN = "<unk>"
    MASK_TOKEN = "[MASK]"

    @property
    def pad_token_id(self):
        return self.core.pad

    @property
    def unk_token_id(self):
        return self.core.ids[self.UNK_TOKEN]

    @property
    def cls_token_id(self):
        return self.core.cls

    @property
    def sep_token_id(self):
        return self.core.sep

    @property
    def mask_token_id(self):
        return self.core.ids[self.MASK_TOKEN]

    @functools.cached_property
    def _tokens(self):
        return self.vocabulary()

    def id_to_token(self, token_id):
        """The token with id `token_id`."""
        return self._tokens[token_id]

    def decode(self, token_ids, skip_special_tokens=False):
        """The text of `token_ids`, as Hugging Face's `decode` gives it (`kbert.text.decoding.decode`)."""
        return decode(self, token_ids, skip_special_tokens)
