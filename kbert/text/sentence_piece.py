"""ALBERT's SentencePiece tokenizer in the graph: tensorflow-text's `FastSentencepieceTokenizer`, whose kernel TFLite
also runs, over the model rewritten so that the op's own normalization is Hugging Face's.

The op normalizes as SentencePiece does: the longest rule of the model's character map at each point of the raw
text, then spaces squeezed and "▁" put before each word. Hugging Face's ALBERT normalizes otherwise (NFKD without
accents, lower case, the character map per grapheme, and its non-special added tokens cut out of the raw text
first). The rewritten map holds, for every code point that Hugging Face's normalizer changes, what it makes of it
(`kbert_core.SentencePiece.changed_characters`), the rules "``" and "''" -> '"', and for each added token
" X " where X is a private-use placeholder that only new pieces ("X" and "▁X") match; their ids become the
token's. The model's user-defined pieces are normal ones there, segmented by their scores as Hugging Face does.
Hugging Face's ids result, except for U+0000 before a character that the map changes (a space, a deleted control
character): the op drops it, where Hugging Face reads <unk>.
"""

import base64
import functools
import json
import pathlib
import struct

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.text.double_array import build_double_array
from kbert.text.packing import CoreSpecialIds, encode_batch, encode_texts, pack_python, python_encode
from kbert_core.sentence_piece import NORMAL, SPACE, USER_DEFINED, WHITE_SPACE, SentencePiece

# The tensorflow-text op in `SentencePieceTokenizer.encode`'s graph, which TFLite runs as a custom op.
CUSTOM_OPS = ("TFText>FastSentencepieceTokenize",)
_PLACEHOLDERS = 0xF0000  # Supplementary Private Use Area-A: the added tokens' stand-ins
_UNKNOWN = "\U0010FFFD"  # what a stand-in typed in a text becomes: a character no model holds


class SentencePieceTokenizer(CoreSpecialIds):
    """Turns text into ALBERT inputs, `[CLS] A [SEP] (B [SEP])`, with Hugging Face's ids, in TensorFlow ops.

    `encode` works inside `tf.data` and exported graphs, TFLite included (the custom op
    `CUSTOM_OPS`); calling the tokenizer runs the same graph and returns numpy arrays. The op gives
    no character offsets: with `return_offsets`, `kbert_core.SentencePiece` (pure Python, the same ids) tokenizes,
    and `encode` runs it in a `tf.numpy_function`, which no saved graph can hold.

    Args:
        sentence_piece: `kbert_core.SentencePiece`, the tokenizer whose ids to give (with
            `lowercase` and without `keep_accents`, as ALBERT's), or the path of an ALBERT folder.

    Example:
    >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3),
    ...           ("▁", -2, 1), ("▁hi", -3, 1), ("s", -4, 1), ("!", 0, 4)]
    >>> tokenizer = SentencePieceTokenizer(SentencePiece(pieces, b""))
    >>> tokenizer("His hi!", max_length=8)["token_ids"].tolist()
    [[2, 6, 7, 6, 8, 3, 0, 0]]
    """

    kind = "sentence_piece"  # `kbert.text.hf_tokenizers.KIND_FILES`, and its config's in a task's .keras file
    FILES = ("spiece.model",)

    def __init__(self, sentence_piece):
        if isinstance(sentence_piece, (str, pathlib.Path)):
            sentence_piece = SentencePiece.from_hf(sentence_piece)
        if sentence_piece.keep_accents or not sentence_piece.lowercase:
            raise ValueError("The in-graph SentencePiece tokenizer follows ALBERT's normalization (lower case, "
                             "accents stripped); kbert_core.SentencePiece tokenizes with accents or case kept.")
        self.sentence_piece = sentence_piece
        model, lookup = op_model(sentence_piece)
        self._tokenizer = tf_text.FastSentencepieceTokenizer(model)
        self._lookup = tf.constant(lookup, tf.int32)
        self._graphs = {}

    @classmethod
    def from_hf(cls, path):
        """Reads an ALBERT tokenizer folder as `kbert_core.SentencePiece.from_hf` does.

        Example:
        >>> SentencePieceTokenizer.from_hf("no/such/folder")
        Traceback (most recent call last):
        FileNotFoundError: no/such/folder holds neither spiece.model nor tokenizer.json: an ALBERT tokenizer folder ...
        """
        return cls(SentencePiece.from_hf(path))

    def __reduce__(self):
        """Pickles as its `kbert_core.SentencePiece` (e.g. for a child process that makes batches)."""
        return type(self), (self.sentence_piece,)

    @classmethod
    def from_config(cls, config):
        """The tokenizer of `get_config`'s dict."""
        return cls(SentencePiece([tuple(piece) for piece in config["pieces"]], base64.b64decode(config["charsmap"]),
                                 lowercase=config["lowercase"], keep_accents=config["keep_accents"],
                                 split_pieces=config["split_pieces"]))

    def get_config(self):
        """What rebuilds it (`from_config`), as a task's .keras file holds it: the pieces, the character map, the
        normalization and the pieces cut out of raw text.

        Example:
        >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3),
        ...           ("▁hi", -3, 1)]
        >>> config = SentencePieceTokenizer(SentencePiece(pieces, b"")).get_config()
        >>> SentencePieceTokenizer.from_config(config)("hi", padding="longest")["token_ids"].tolist()
        [[2, 5, 3]]
        """
        sentence_piece = self.sentence_piece
        return {"kind": self.kind, "pieces": [list(piece) for piece in sentence_piece.pieces],
                "charsmap": base64.b64encode(sentence_piece.charsmap.blob).decode("ascii"),
                "lowercase": sentence_piece.lowercase, "keep_accents": sentence_piece.keep_accents,
                "split_pieces": list(sentence_piece.split_pieces)}

    def save(self, path):
        """Writes spiece.model and tokenizer_config.json into the folder `path`, as Hugging Face's ALBERT tokenizer
        reads them; `from_hf(path)` reads them back. The pieces cut out of raw text are the config's non-special
        `added_tokens_decoder`."""
        path = pathlib.Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sentence_piece = self.sentence_piece
        model = _model_bytes(sentence_piece.pieces, sentence_piece.unk, sentence_piece.charsmap.blob)
        (path / "spiece.model").write_bytes(model)
        added = {str(sentence_piece.ids[piece]): {"content": piece, "lstrip": False, "normalized": False,
                                                  "rstrip": False, "single_word": False, "special": False}
                 for piece in sentence_piece.split_pieces}
        config = {"tokenizer_class": "AlbertTokenizer", "do_lower_case": sentence_piece.lowercase,
                  "keep_accents": sentence_piece.keep_accents, "bos_token": "[CLS]", "cls_token": "[CLS]",
                  "eos_token": "[SEP]", "sep_token": "[SEP]", "pad_token": "<pad>", "unk_token": "<unk>",
                  "mask_token": "[MASK]", **({"added_tokens_decoder": added} if added else {})}
        (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2), "utf-8")

    @property
    def lowercase(self):
        return self.sentence_piece.lowercase

    @property
    def vocabulary_size(self):
        return len(self.sentence_piece.pieces)

    def vocabulary(self):
        """The pieces, in id order."""
        return [piece for piece, _, _ in self.sentence_piece.pieces]

    @staticmethod
    def continues_word(piece):
        """Whether `piece` goes on the word before it (whole-word masking): a word's first piece starts with
        "\u2581"."""
        return not piece.startswith("\u2581")

    @property
    def core(self):
        """The `kbert_core` tokenizer it runs."""
        return self.sentence_piece

    @property
    def layout(self):
        """`[CLS] A [SEP] (B [SEP])`, padded with <pad>: a `kbert_core.Layout`."""
        return self.sentence_piece.layout

    def __call__(self, texts, pairs=None, max_length=DEFAULT_SEQUENCE_LENGTH, padding="max_length",
                 truncation="longest_first", return_offsets=False, return_lengths=False, *, max_first_length=None,
                 pad_to_multiple_of=None):
        """Tokenizes and packs a batch; returns int32 numpy arrays `token_ids`, `segment_ids` and `padding_mask`
        of shape (batch, length), as `kbert.text.BertTokenizer` does (its arguments, and `encode`'s
        `max_first_length` and `pad_to_multiple_of`). With `return_offsets`, `kbert_core.SentencePiece` tokenizes
        (the op gives no offsets) and `offsets` and `word_ids` come too.

        Example:
        >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3),
        ...           ("▁hi", -3, 1)]
        >>> out = SentencePieceTokenizer(SentencePiece(pieces, b""))(["hi", "HI"], ["hi hi", ""], padding="longest")
        >>> out["token_ids"].tolist(), out["segment_ids"].tolist()
        ([[2, 5, 3, 5, 5, 3], [2, 5, 3, 3, 0, 0]], [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 0, 0]])
        """
        if return_offsets:
            return pack_python(self.sentence_piece, texts, pairs, max_length, padding, truncation, True,
                               return_lengths, max_first_length, pad_to_multiple_of)
        return encode_batch(self.encode, self._graphs, texts, pairs, max_length=max_length, padding=padding,
                            truncation=truncation, return_lengths=return_lengths, max_first_length=max_first_length,
                            pad_to_multiple_of=pad_to_multiple_of)

    def encode(self, texts, pairs=None, max_length=DEFAULT_SEQUENCE_LENGTH, padding="max_length",
               truncation="longest_first", return_offsets=False, *, max_first_length=None, return_lengths=False,
               pad_to_multiple_of=None):
        """Like calling the tokenizer, on string tensors of shape (batch,) or (), in ops that TFLite also runs
        (with `return_offsets`, Python code in a `tf.numpy_function`, which no saved graph can hold).

        Example:
        >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3),
        ...           ("▁hi", -3, 1)]
        >>> SentencePieceTokenizer(SentencePiece(pieces, b"")).encode("hi hi hi", max_length=4)["token_ids"]
        <tf.Tensor: shape=(4,), dtype=int32, numpy=array([2, 5, 5, 3], dtype=int32)>
        """
        if return_offsets:
            return python_encode(self, texts, pairs, True, return_lengths, max_length=max_length, padding=padding,
                                 truncation=truncation, max_first_length=max_first_length,
                                 pad_to_multiple_of=pad_to_multiple_of)
        return encode_texts(self._tokenize, texts, pairs, (self.cls_token_id, self.sep_token_id, self.pad_token_id),
                            max_length, padding, truncation, max_first_length=max_first_length,
                            return_lengths=return_lengths, pad_to_multiple_of=pad_to_multiple_of)

    def _tokenize(self, texts):
        """Flat pieces with Hugging Face's ids: int32 (pieces, 1), row_splits."""
        pieces = self._tokenizer.tokenize(texts)
        ids = tf.gather(self._lookup, tf.cast(pieces.flat_values, tf.int32))
        return ids[:, tf.newaxis], tf.cast(pieces.row_splits, tf.int32)


def op_model(sentence_piece):
    """(SentencePiece model bytes for `FastSentencepieceTokenizer`, int32 array: op id -> Hugging Face's id).

    The model holds `sentence_piece`'s pieces and scores (user-defined ones as normal pieces), two pieces per
    added token that Hugging Face cuts out of raw text, and a character map of Hugging Face's normalization.

    Example:
    >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3), ("!", 0, 4)]
    >>> model, lookup = op_model(SentencePiece(pieces, b"", split_pieces=["!"]))
    >>> lookup.tolist()
    [0, 1, 2, 3, 4, 5, 5, 5]
    """
    pieces = [(piece, score, NORMAL if kind == USER_DEFINED else kind) for piece, score, kind in sentence_piece.pieces]
    rules = {char: "".join(" " if ord(c) in WHITE_SPACE else c for c in normalized)  # where Hugging Face splits
             for char, normalized in _changed_characters(sentence_piece).items()}
    for code in WHITE_SPACE:  # where Hugging Face splits words, whatever its normalizer left
        rules.setdefault(chr(code), " ")
    rules.update({"``": '"', "''": '"'})
    lookup = list(range(len(pieces)))
    for k, symbol in enumerate(sentence_piece.split_pieces):
        if len(symbol) != 1:
            raise ValueError(f"The added token {symbol!r} has several characters: the in-graph tokenizer "
                             "cuts out single characters only (kbert_core.SentencePiece cuts any).")
        placeholder = chr(_PLACEHOLDERS + k)
        if placeholder in sentence_piece.ids or _UNKNOWN in sentence_piece.ids:
            raise ValueError(f"The model holds the private-use character {placeholder!r} or {_UNKNOWN!r}, "
                             "which the in-graph tokenizer uses.")
        rules[symbol] = f" {placeholder} "
        rules[placeholder] = _UNKNOWN
        pieces += [(placeholder, 0.0, USER_DEFINED), (SPACE + placeholder, 0.0, USER_DEFINED)]
        lookup += [sentence_piece.ids[symbol]] * 2
    return _model_bytes(pieces, sentence_piece.unk, _charsmap(rules)), np.array(lookup, np.int32)


@functools.lru_cache(maxsize=4)
def _changed_characters(sentence_piece):
    return sentence_piece.changed_characters()


def _charsmap(rules):
    """SentencePiece's precompiled character map: uint32 trie size, darts-clone trie, NUL-ended replacements."""
    pool, offsets, keys, values = bytearray(), {}, [], []
    for key, replacement in sorted(rules.items()):
        encoded = replacement.encode("utf-8") + b"\0"
        if encoded not in offsets:
            offsets[encoded] = len(pool)
            pool += encoded
        keys.append(key.encode("utf-8"))
        values.append(offsets[encoded])
    trie = build_double_array(keys, values).tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(pool)


def _model_bytes(pieces, unk_id, charsmap):
    """A SentencePiece ModelProto: the pieces, a unigram trainer spec, a normalizer spec with `charsmap`."""
    model = b"".join(_field(1, _field(1, piece.encode("utf-8")) + struct.pack("<Bf", 0x15, score)
                            + _varint_field(3, kind)) for piece, score, kind in pieces)
    trainer = _varint_field(3, 1) + _varint_field(40, unk_id) + _varint_field(41, -1) + _varint_field(42, -1)
    normalizer = (_field(1, b"kbert_hf") + _field(2, charsmap) + _varint_field(3, 1) + _varint_field(4, 1)
                  + _varint_field(5, 1))
    return model + _field(2, trainer) + _field(3, normalizer)


def _field(number, data):
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _varint_field(number, value):
    return _varint(number << 3) + _varint(value)


def _varint(value):
    value &= (1 << 64) - 1  # negative int32s as ten bytes, as protobuf writes them
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
