"""`BertPreprocessor`: the base of the layers that turn raw task inputs into BERT's token ids."""

import dataclasses
import math

import keras
import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH

# `call` pads each batch to its longest row rounded up to a multiple of this, so that jit
# compilers (XLA, `jax.jit`) see a few shapes.
PAD_TO_MULTIPLE_OF = 8


@dataclasses.dataclass
class Prepared:
    """Raw examples made into model inputs, with what `predict` needs to map outputs back.

    Args:
        inputs: dict of int32 arrays (rows, length): `token_ids`, `segment_ids`, `padding_mask`.
        y: array, dict of arrays, or None. Targets, one row per input row.
        sample_weight: array or None.
        windows: None, or the `NerWindows` / `SquadWindows` the rows were cut into.
        examples: None, or what decoding needs of each example (e.g. its text and word spans).
        truncated: None, or a bool array: whether each row was cut to the sequence length.
        token_aligned: bool. `y` and `sample_weight` have the inputs' token axis (a token classifier's), so
            batches cut them like the inputs (`kbert.data.PaddedBatches`).
    """

    inputs: dict
    y: object = None
    sample_weight: object = None
    windows: object = None
    examples: list = None
    truncated: object = None
    token_aligned: bool = False


class BertPreprocessor(keras.layers.Layer):
    """Base of kbert's preprocessors: a tokenizer and a sequence length, saved with the task.

    A preprocessor turns a task's raw inputs into the backbone's dict of token ids. Its
    tokenizer (its kind and what rebuilds it: `kbert.text.tokenizer_from_config`) and settings
    are part of its config, so a task's `.keras` file carries them.
    `prepare` works on Python inputs (lists, numpy arrays) and returns numpy arrays; `call`
    does the same on a batch of string tensors in TensorFlow ops, so that it maps over a
    `tf.data.Dataset` under any backend.

    Args:
        tokenizer: a `kbert.text` tokenizer (`BertTokenizer`: WordPiece; `SentencePieceTokenizer`: ALBERT's;
            `ByteLevelBPETokenizer`: RoBERTa's), or its `get_config()`.
        sequence_length: int. Most tokens per model input, special tokens included.
    """

    def __init__(self, tokenizer, sequence_length=DEFAULT_SEQUENCE_LENGTH, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False  # TensorFlow strings, not backend tensors
        self._allow_non_tensor_positional_args = True
        self.built = True
        if isinstance(tokenizer, dict):  # from get_config
            from kbert.text.hf_tokenizers import tokenizer_from_config  # TensorFlow, loaded on first use

            tokenizer = tokenizer_from_config(tokenizer)
        if sequence_length < 3:
            raise ValueError(f"sequence_length={sequence_length} leaves no room for text besides "
                             "[CLS] and [SEP].")
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length

    def prepare(self, x, y=None, sample_weight=None):
        """Model inputs (numpy) for Python inputs; returns a `Prepared`."""
        raise NotImplementedError

    def call(self, x, y=None, sample_weight=None):
        """`(x, y, sample_weight)` of token ids for a batch of string tensors (TensorFlow ops)."""
        raise NotImplementedError

    def pad_to_multiple(self, tensors, multiple=PAD_TO_MULTIPLE_OF):
        """Token-aligned tensors (batch, length, ...) padded at the end to a length that is a
        multiple of `multiple` (at most `sequence_length`); `token_ids` pad with [PAD], the
        rest with 0. TensorFlow ops.
        """
        import tensorflow as tf

        width = tf.shape(tensors["token_ids"])[1]
        wanted = tf.minimum(-(-width // multiple) * multiple, self.sequence_length)
        pad = {"token_ids": self.tokenizer.pad_token_id}
        return {key: tf.pad(value, [[0, 0], [0, wanted - width]] + [[0, 0]] * (len(value.shape) - 2),
                            constant_values=pad.get(key, 0))
                for key, value in tensors.items()}

    def get_config(self):
        return {**super().get_config(), "sequence_length": self.sequence_length,
                "tokenizer": self.tokenizer.get_config()}


def text_list(values, name="texts"):
    """`values` as a list of str: a str is one text; a TypeError names the first item that is not text.

    Args:
        values: str, or a list, tuple or numpy array of str (or UTF-8 bytes).
        name: str. What the values are, for messages.

    Example:
    >>> text_list(np.array(["a", "b"]))
    ['a', 'b']
    >>> text_list(["a", None])
    Traceback (most recent call last):
    ...
    TypeError: texts[1] is None (a missing value: drop or fill it), not a string.
    """
    if isinstance(values, (str, bytes)):
        values = [values]
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list or array of strings; got {type(values).__name__}.")
    texts = []
    for i, value in enumerate(values):
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            missing = value is None or isinstance(value, float) and math.isnan(value)  # a table's empty cell
            shown = f"{value} (a missing value: drop or fill it)" if missing else type(value).__name__
            raise TypeError(f"{name}[{i}] is {shown}, not a string.")
        texts.append(value)
    return texts


def text_pairs(x, names=("texts", "pairs")):
    """`(texts, pairs)` from one list of texts or a tuple of two lists of equal length.

    Example:
    >>> text_pairs((["a", "b"], ["c", "d"]))
    (['a', 'b'], ['c', 'd'])
    >>> text_pairs(["a"])
    (['a'], None)
    """
    if isinstance(x, tuple) and len(x) == 2:
        first, second = text_list(x[0], names[0]), text_list(x[1], names[1])
        if len(first) != len(second):
            raise ValueError(f"Got {len(first)} {names[0]} but {len(second)} {names[1]}: "
                             "they pair up one to one.")
        return first, second
    if isinstance(x, tuple):
        raise ValueError(f"Expected {names[0]}, or a tuple ({names[0]}, {names[1]}); got a tuple of "
                         f"{len(x)}.")
    return text_list(x, names[0]), None
