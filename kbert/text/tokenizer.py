"""BERT's WordPiece tokenizer on tensorflow-text's fast kernels (which also exist for TFLite)."""

import json
import pathlib

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.saving import model_source
from kbert.text.bert_normalizer import fast_bert_normalizer_model
from kbert.text.decoding import decode
from kbert.text.packing import encode_batch, encode_texts
from kbert.text.wordpieces import merge_long_words, to_char_offsets
from kbert_core.packing import Layout

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_WORD_CHARS = 100  # longer words become one [UNK], as in BERT
# The tensorflow-text ops in `BertTokenizer.encode`'s graph, which TFLite runs as custom ops.
CUSTOM_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets",
              "TFText>ByteSplitWithOffsets")


class BertTokenizer:
    """Turns text into BERT inputs: `[CLS] A [SEP] (B [SEP])`, the same ids as Hugging Face.

    Normalization (cleanup, lower-casing and accent stripping when `lowercase`), the split
    into words at spaces, punctuation and CJK characters, and WordPiece all run as
    tensorflow-text ops, so `encode` works inside `tf.data` and exported graphs, TFLite
    included. Calling the tokenizer runs the same graph and returns numpy arrays, under any
    Keras backend.

    Args:
        vocabulary: str, path or list of str. A vocab.txt file (one token a line) or tokens.
            It must hold [PAD], [UNK], [CLS], [SEP] and [MASK].
        lowercase: bool. Lower-case and strip accents (uncased models).

    Example:
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s"])
    >>> tokenizer("His hi!", max_length=6)["token_ids"].tolist()
    [[2, 5, 6, 5, 1, 3]]
    """

    kind = "wordpiece"  # `kbert.text.hf_tokenizers.KIND_FILES` (its config has no `kind`, as before the others)
    FILES = ("vocab.txt",)

    def __init__(self, vocabulary, lowercase=True):
        tokens = _read_vocabulary(vocabulary)
        missing = [token for token in SPECIAL_TOKENS if token not in tokens]
        if missing:
            raise ValueError(f"The vocabulary lacks the special tokens {missing}.")
        self.lowercase = lowercase
        self._tokens = tuple(tokens)
        self._ids = {token: i for i, token in enumerate(tokens)}
        model = np.frombuffer(fast_bert_normalizer_model(lowercase), np.uint8)
        self._normalizer = tf_text.FastBertNormalizer(model_buffer=tf.constant(model))
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            list(tokens), max_bytes_per_word=4 * MAX_WORD_CHARS, token_out_type=tf.int32)
        self._is_suffix = tf.constant([token.startswith("##") for token in tokens])
        self._graphs = {}

    def __reduce__(self):
        """Pickles as its vocabulary and options (e.g. for a child process that makes batches).

        >>> import pickle
        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
        >>> pickle.loads(pickle.dumps(tokenizer))("hi", padding="longest")["token_ids"].tolist()
        [[2, 5, 3]]
        """
        return type(self), (list(self._tokens), self.lowercase)

    @classmethod
    def from_config(cls, config):
        """The tokenizer of `get_config`'s dict (`{"vocabulary": [...], "lowercase": bool}`)."""
        return cls(**config)

    def get_config(self):
        """What rebuilds it (`from_config`), as a task's .keras file holds it: the tokens and `lowercase`."""
        return {"vocabulary": self.vocabulary(), "lowercase": self.lowercase}

    @classmethod
    def from_preset(cls, preset):
        """The tokenizer of any model source `BertBackbone.from_preset` takes (`kbert.saving.model_source`): a
        preset's (MiniLM's uncased vocabulary), a Hugging Face folder's, or a kbert folder's or `.keras` file's
        (the vocab.txt beside it), read by `from_hf`.

        Example:
        >>> BertTokenizer.from_preset("bert_tiny").vocabulary_size
        30522
        """
        return model_source(preset).load_tokenizer(lambda folder, family: cls.from_hf(folder))

    @classmethod
    def from_hf(cls, path):
        """Reads a tokenizer folder: vocab.txt and, if present, tokenizer_config.json (Hugging Face's layout).

        Args:
            path: str or path. The folder.

        Example:
        >>> from kbert.paths import minilm_dir
        >>> BertTokenizer.from_hf(minilm_dir()).vocabulary_size
        30522
        """
        path = pathlib.Path(path)
        if not (path / "vocab.txt").is_file():
            raise FileNotFoundError(f"{path / 'vocab.txt'} does not exist: a BERT tokenizer "
                                    "folder needs its WordPiece vocabulary there.")
        config_file = path / "tokenizer_config.json"
        config = json.loads(config_file.read_text("utf-8")) if config_file.is_file() else {}
        lowercase = config.get("do_lower_case", True)
        if config.get("strip_accents") not in (None, lowercase):
            raise ValueError(f"{config_file}: strip_accents differing from do_lower_case is "
                             "not supported.")
        if not config.get("tokenize_chinese_chars", True):
            raise ValueError(f"{config_file}: tokenize_chinese_chars=false is not supported.")
        return cls(path / "vocab.txt", lowercase=lowercase)

    @classmethod
    def from_vocab(cls, path):
        """A vocab.txt (lowercasing, as BERT's uncased vocabularies), or a folder holding one,
        read with `from_hf` (its tokenizer_config.json too).

        Example:
        >>> from kbert.paths import minilm_dir
        >>> BertTokenizer.from_vocab(minilm_dir() / "vocab.txt").vocabulary_size
        30522
        """
        path = pathlib.Path(path)
        return cls.from_hf(path) if path.is_dir() else cls(path)

    def save(self, path):
        """Writes vocab.txt and tokenizer_config.json into the folder `path`, as Hugging Face does.

        `BertTokenizer.from_hf(path)` reads them back.

        Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"], lowercase=False).save(folder)
        >>> BertTokenizer.from_hf(folder).lowercase
        False
        """
        path = pathlib.Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "vocab.txt").write_text("".join(f"{token}\n" for token in self._tokens), "utf-8")
        config = {"tokenizer_class": "BertTokenizer", "do_lower_case": self.lowercase,
                  "strip_accents": None, "tokenize_chinese_chars": True}
        (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2), "utf-8")

    @property
    def vocabulary_size(self):
        return len(self._tokens)

    @property
    def layout(self):
        """`[CLS] A [SEP] (B [SEP])`, padded with [PAD]: a `kbert_core.Layout`."""
        return Layout.bert(self.cls_token_id, self.sep_token_id, self.pad_token_id)

    @property
    def pad_token_id(self):
        return self._ids["[PAD]"]

    @property
    def unk_token_id(self):
        return self._ids["[UNK]"]

    @property
    def cls_token_id(self):
        return self._ids["[CLS]"]

    @property
    def sep_token_id(self):
        return self._ids["[SEP]"]

    @property
    def mask_token_id(self):
        return self._ids["[MASK]"]

    def vocabulary(self):
        """The tokens, in id order."""
        return list(self._tokens)

    @staticmethod
    def continues_word(token):
        """Whether `token` goes on the word before it (whole-word masking): WordPiece's "##" pieces."""
        return token.startswith("##")

    def token_to_id(self, token):
        """The id of `token`; a KeyError names tokens outside the vocabulary."""
        if token not in self._ids:
            raise KeyError(f"{token!r} is not in the vocabulary.")
        return self._ids[token]

    def id_to_token(self, token_id):
        """The token with id `token_id`."""
        return self._tokens[token_id]

    def decode(self, token_ids, skip_special_tokens=False):
        """The text of `token_ids`, as Hugging Face's `decode` gives it (`kbert.text.decoding.decode`).

        Example:
        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s"])
        >>> tokenizer.decode(tokenizer("His hi", padding="longest")["token_ids"][0], skip_special_tokens=True)
        'his hi'
        """
        return decode(self, token_ids, skip_special_tokens)

    def __call__(self, texts, pairs=None, max_length=DEFAULT_SEQUENCE_LENGTH, padding="max_length",
                 truncation="longest_first", return_offsets=False, return_lengths=False):
        """Tokenizes and packs a batch; returns int32 numpy arrays of shape (batch, length).

        The keys are `token_ids`, `segment_ids` and `padding_mask` (1 = token, 0 = padding),
        and with `return_offsets`, `offsets` (batch, length, 2): the [start, end) character
        span of each token in its original str ((0, 0) for special and padding tokens), and
        `word_ids`: the index of the word (text split at spaces, punctuation and CJK
        characters) that the token comes from in its own text (-1 for special and padding).

        Inputs: a str is a batch of one. Bytes are decoded as UTF-8, with each invalid
        sequence read as U+FFFD (which BERT deletes); offsets then index the decoded str. A
        lone surrogate in a str counts as "?". `None` raises a TypeError. An empty or blank
        text gives `[CLS] [SEP]`; text with no known piece gives [UNK] tokens. Long texts
        are tokenized in full (time and memory grow linearly) and then truncated.

        Args:
            texts: str or list of str (or bytes). The first segments.
            pairs: None, str or list of str. The second segments, one per text.
            max_length: int. Most tokens per row, special tokens included.
            padding: str. "max_length" pads to `max_length`; "longest" to the longest row.
            truncation: str. "longest_first" cuts pairs as Hugging Face does (the longer
                segment first); "only_second" cuts the second segment only, for QA.
            return_offsets: bool. Also return `offsets` and `word_ids`.
            return_lengths: bool. Also return `lengths` and `segment_lengths`, as `encode` does: the tokens
                of each row and of each of its texts before truncation.

        Example:
        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
        >>> out = tokenizer(["Hi", "hi hi"], padding="longest", return_offsets=True)
        >>> out["padding_mask"].tolist(), out["offsets"][1].tolist()
        ([[1, 1, 1, 0], [1, 1, 1, 1]], [[0, 0], [0, 2], [3, 5], [0, 0]])
        >>> tokenizer(["hi hi hi"], max_length=4, return_lengths=True)["lengths"].tolist()
        [5]
        """
        return encode_batch(self.encode, self._graphs, texts, pairs, max_length=max_length, padding=padding,
                            truncation=truncation, return_offsets=return_offsets, return_lengths=return_lengths)

    def encode(self, texts, pairs=None, max_length=DEFAULT_SEQUENCE_LENGTH, padding="max_length",
               truncation="longest_first", return_offsets=False, *, max_first_length=None,
               return_lengths=False, pad_to_multiple_of=None):
        """Like calling the tokenizer, but on string tensors, in ops that TFLite also runs.

        For `tf.data` (`dataset.map(tokenizer.encode)`, on any backend) and exported graphs:
        besides TFLite builtins the graph holds only the tensorflow-text ops `CUSTOM_OPS`, and
        packing is index arithmetic on flat tensors (no Flex op is needed).

        Texts are UTF-8 bytes. Invalid UTF-8 bytes are kept as bytes: each acts as an unknown
        character (an [UNK] token or part of one), and offsets count every byte that is not a
        continuation byte (0x80-0xBF) as one character. Calling the tokenizer decodes with
        replacement first, so there U+FFFD appears instead, which BERT deletes.

        Args:
            texts: string tensor of shape (batch,) or () (then outputs lose the batch axis).
            pairs: None or a string tensor shaped like `texts`.
            max_length, padding, truncation, return_offsets: as for calling the tokenizer.
            max_first_length: int or None. First segments (QA questions) are cut to this many
                tokens before `truncation` applies, as `kbert.data.windows.squad.SquadWindows` does.
            return_lengths: bool. Also return `lengths` (batch,): the tokens of each row
                before truncation, special tokens included; and `segment_lengths` (batch,
                segments): each text's tokens before truncation (0: a text with none, blank).
            pad_to_multiple_of: None or int. With `padding="longest"`, round the width up to
                a multiple of this (at most `max_length`), so that jit compilers see few shapes.

        Example:
        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
        >>> data = tf.data.Dataset.from_tensor_slices(["hi", "hi hi"]).batch(2)
        >>> next(iter(data.map(lambda t: tokenizer.encode(t, max_length=4))))["token_ids"]
        <tf.Tensor: shape=(2, 4), dtype=int32, numpy=
        array([[2, 5, 3, 0],
               [2, 5, 5, 3]], dtype=int32)>
        >>> int(tokenizer.encode("hi hi hi", max_length=4, return_lengths=True)["lengths"])
        5
        """
        return encode_texts(
            lambda segment: self._tokenize(segment, return_offsets), texts, pairs,
            (self.cls_token_id, self.sep_token_id, self.pad_token_id), max_length, padding, truncation,
            max_first_length=max_first_length, return_lengths=return_lengths, pad_to_multiple_of=pad_to_multiple_of,
            columns={"offsets": [0, 0], "word_ids": -1} if return_offsets else None)  # offsets (0, 0), word id -1

    def _tokenize(self, texts, return_offsets):
        """Flat wordpieces: int32 (pieces, columns) [id(, start, end, word id)], row_splits."""
        if return_offsets:
            normalized, byte_map = self._normalizer.normalize_with_offsets(texts)
        else:
            normalized = self._normalizer.normalize(texts)
        ids, starts, ends = self._wordpiece.tokenize_with_offsets(normalized)
        pieces = merge_long_words(
            normalized, ids, starts, ends, self._is_suffix, self.unk_token_id, MAX_WORD_CHARS)
        columns = [pieces.token_ids]
        if return_offsets:
            columns += [*to_char_offsets(texts, byte_map, pieces.starts, pieces.ends,
                                         pieces.row_splits), pieces.word_ids]
        return tf.stack(columns, axis=1), pieces.row_splits


def _read_vocabulary(vocabulary):
    if isinstance(vocabulary, (str, pathlib.Path)):
        text = pathlib.Path(vocabulary).read_text("utf-8")
        tokens = text.split("\n")
        return tokens[:-1] if tokens[-1] == "" else tokens
    return [str(token) for token in vocabulary]
