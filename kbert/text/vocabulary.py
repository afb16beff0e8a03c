"""Learning a WordPiece vocabulary from a corpus, for pretraining from scratch."""

import pathlib

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

from kbert.text.bert_normalizer import fast_bert_normalizer_model
from kbert.text.tokenizer import SPECIAL_TOKENS


def train_wordpiece_vocabulary(lines_or_files, vocabulary_size, lowercase=True):
    """Learns BERT WordPiece tokens: the special tokens first ([PAD] is id 0), then the rest.

    Text goes through the tokenizer's own normalization, then tensorflow-text's BERT vocabulary
    learner splits it into words and picks the pieces.

    Args:
        lines_or_files: list of str (lines of text), or of `pathlib.Path` (text files); with
            no text in them, a ValueError says so.
        vocabulary_size: int. The most tokens to return, special tokens included.
        lowercase: bool. Normalize as an uncased tokenizer does.

    Example:
    >>> tokens = train_wordpiece_vocabulary(["The cat sat.", "A cat ran!"] * 50, 40)
    >>> tokens[:6], "cat" in tokens
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '!'], True)
    """
    if isinstance(lines_or_files, pathlib.Path):
        lines_or_files = [lines_or_files]
    items = list(lines_or_files)
    if all(isinstance(item, pathlib.Path) for item in items):
        lines = tf.data.TextLineDataset([str(path) for path in items])
    elif all(isinstance(item, str) for item in items):
        lines = tf.data.Dataset.from_tensor_slices(tf.constant(items, tf.string))
    else:
        raise TypeError("Pass a list of str lines or a list of pathlib.Path files, not a mix.")
    if not any(_has_text(item) for item in items):  # tensorflow-text's learner raises a bare StopIteration
        given = f"{len(items)} blank lines" if items and isinstance(items[0], str) else f"the files {items}"
        raise ValueError(f"No text to learn a vocabulary from: {given}." if items else
                         "No lines to learn a vocabulary from.")
    model = np.frombuffer(fast_bert_normalizer_model(lowercase), np.uint8)
    normalizer = tf_text.FastBertNormalizer(model_buffer=tf.constant(model))
    return bert_vocab_from_dataset.bert_vocab_from_dataset(
        lines.batch(4096).map(normalizer.normalize),
        vocab_size=vocabulary_size,
        reserved_tokens=list(SPECIAL_TOKENS),
        bert_tokenizer_params={"lower_case": False},
    )


def _has_text(line_or_file):
    """Whether a line, or a file (read up to its first line with text), holds more than white space."""
    if isinstance(line_or_file, str):
        return bool(line_or_file.strip())
    with open(line_or_file, encoding="utf-8", errors="replace") as lines:
        return any(line.strip() for line in lines)
