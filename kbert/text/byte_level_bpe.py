"""RoBERTa's byte-level BPE tokenizer with `kbert.text.BertTokenizer`'s interface, over `kbert_core.ByteLevelBPE`.

TensorFlow has no byte-level BPE op (tensorflow-text has none, nor has TFLite): calling the tokenizer runs the
pure-Python `kbert_core.ByteLevelBPE` (Hugging Face's ids and offsets), and `encode`, for `tf.data`, runs the same
code in a `tf.numpy_function`. So a RoBERTa model takes raw text in Keras (fit, predict, `tf.data` on any backend),
but its graph cannot hold the tokenizer: a RoBERTa export is the token-ids model, tokenized in Python beside it.
"""

import json
import pathlib

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.text.packing import CoreSpecialIds, pack_python, python_encode
from kbert_core.byte_level_bpe import ByteLevelBPE


class ByteLevelBPETokenizer(CoreSpecialIds):
    """Turns text into RoBERTa inputs, `<s> A </s>` or `<s> A </s></s> B </s>` (all segment ids 0, padded with
    `<pad>`), with the ids and offsets of Hugging Face's `RobertaTokenizerFast`.

    Args:
        byte_level_bpe: `kbert_core.ByteLevelBPE`, or the path of a RoBERTa tokenizer folder (vocab.json and
            merges.txt).

    Example:
    >>> from kbert_core.byte_level_bpe import SPECIAL_TOKENS, bytes_to_unicode
    >>> vocabulary = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *bytes_to_unicode().values(), "Ġh", "Ġhi"])}
    >>> tokenizer = ByteLevelBPETokenizer(ByteLevelBPE(vocabulary, [("Ġ", "h"), ("Ġh", "i")]))
    >>> tokenizer(["a hi"], ["hi"], padding="longest")["token_ids"].tolist()
    [[0, 102, 262, 2, 2, 109, 110, 2]]
    """

    kind = "byte_level_bpe"  # `kbert.text.hf_tokenizers.KIND_FILES`, and its config's in a task's .keras file
    FILES = ("vocab.json", "merges.txt")
    MASK_TOKEN = "<mask>"
    lowercase = False  # for `kbert_core.is_blank`: RoBERTa keeps case

    def __init__(self, byte_level_bpe):
        if isinstance(byte_level_bpe, (str, pathlib.Path)):
            byte_level_bpe = ByteLevelBPE.from_hf(byte_level_bpe)
        self.byte_level_bpe = byte_level_bpe
        self._merges = [pair for pair, _ in sorted(byte_level_bpe.ranks.items(), key=lambda item: item[1])]

    @classmethod
    def from_hf(cls, path):
        """Reads a RoBERTa tokenizer folder as `kbert_core.ByteLevelBPE.from_hf` does."""
        return cls(ByteLevelBPE.from_hf(path))

    @classmethod
    def from_config(cls, config):
        """The tokenizer of `get_config`'s dict."""
        return cls(ByteLevelBPE(config["vocabulary"], [tuple(merge.split(" ")) for merge in config["merges"]]))

    def get_config(self):
        """What rebuilds it (`from_config`), as a task's .keras file holds it: its vocabulary and merges."""
        return {"kind": self.kind, "vocabulary": dict(self.byte_level_bpe.ids),
                "merges": [f"{first} {second}" for first, second in self._merges]}

    def __reduce__(self):
        """Pickles as its `kbert_core.ByteLevelBPE` (e.g. for a child process that makes batches)."""
        return type(self), (self.byte_level_bpe,)

    def save(self, path):
        """Writes vocab.json, merges.txt and tokenizer_config.json into the folder `path`, as Hugging Face's
        RoBERTa tokenizer reads them; `from_hf(path)` reads them back."""
        path = pathlib.Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "vocab.json").write_text(json.dumps(self.byte_level_bpe.ids, ensure_ascii=False), "utf-8")
        (path / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in self._merges), "utf-8")
        config = {"tokenizer_class": "RobertaTokenizer", "add_prefix_space": False, "trim_offsets": True,
                  "bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>"}
        (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2), "utf-8")

    @property
    def vocabulary_size(self):
        return len(self.byte_level_bpe.ids)

    def vocabulary(self):
        """The tokens, in id order."""
        tokens = dict((i, token) for token, i in self.byte_level_bpe.ids.items())
        return [tokens[i] for i in range(len(tokens))]

    @staticmethod
    def continues_word(token):
        """Whether `token` goes on the word before it (whole-word masking): byte-level BPE marks a word's first
        token with the space before it ("\u0120"), so a text's first word counts as going on the <s> before it."""
        return not token.startswith("\u0120")

    @property
    def core(self):
        """The `kbert_core` tokenizer it runs."""
        return self.byte_level_bpe

    @property
    def layout(self):
        """`<s> A </s>(</s> B </s>)`, padded with <pad>, no token types: a `kbert_core.Layout`."""
        return self.byte_level_bpe.layout

    def __call__(self, texts, pairs=None, max_length=DEFAULT_SEQUENCE_LENGTH, padding="max_length",
                 truncation="longest_first", return_offsets=False, return_lengths=False, *, max_first_length=None,
                 pad_to_multiple_of=None):
        """Tokenizes and packs a batch into int32 numpy arrays: the keys and arguments of `kbert.text.BertTokenizer`'s
        call (`offsets` and `word_ids` with `return_offsets`, `lengths` and `segment_lengths` with
        `return_lengths`), and `encode`'s `max_first_length` and `pad_to_multiple_of`.
        """
        return pack_python(self.byte_level_bpe, texts, pairs, max_length, padding, truncation, return_offsets,
                           return_lengths, max_first_length, pad_to_multiple_of)

    def encode(self, texts, pairs=None, max_length=DEFAULT_SEQUENCE_LENGTH, padding="max_length",
               truncation="longest_first", return_offsets=False, *, max_first_length=None, return_lengths=False,
               pad_to_multiple_of=None):
        """Like calling the tokenizer, on string tensors of shape (batch,) or (), for `tf.data`: Python code in a
        `tf.numpy_function` (`kbert.text.packing.python_encode`), which no saved graph can hold.

        Example:
        >>> import tensorflow as tf
        >>> from kbert_core.byte_level_bpe import SPECIAL_TOKENS, bytes_to_unicode
        >>> vocabulary = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *bytes_to_unicode().values()])}
        >>> tokenizer = ByteLevelBPETokenizer(ByteLevelBPE(vocabulary, []))
        >>> data = tf.data.Dataset.from_tensor_slices(["hi", "h"]).batch(2)
        >>> next(iter(data.map(lambda t: tokenizer.encode(t, max_length=5))))["token_ids"].numpy().tolist()
        [[0, 109, 110, 2, 1], [0, 109, 2, 1, 1]]
        """
        return python_encode(self, texts, pairs, return_offsets, return_lengths, max_length=max_length,
                             padding=padding, truncation=truncation, max_first_length=max_first_length,
                             pad_to_multiple_of=pad_to_multiple_of)
