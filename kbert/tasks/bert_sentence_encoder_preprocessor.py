import keras
import numpy as np

from kbert.tasks.bert_preprocessor import PAD_TO_MULTIPLE_OF, BertPreprocessor, Prepared, text_list


@keras.saving.register_keras_serializable(package="kbert")
class BertSentenceEncoderPreprocessor(BertPreprocessor):
    """Texts to BERT inputs `[CLS] text [SEP]`, each text encoded on its own (a bi-encoder's input).

    Takes a list of texts, one model row each; or, for training, a tuple of 2 or 3 equally long
    lists, the columns of (text, text) pairs or (anchor, positive, negative) triplets. Each
    example's texts become consecutive rows of the batch (a batch of B pairs is 2B rows), so
    the model encodes every text alike and its loss regroups them. `prepare` gives such
    examples as arrays (examples, texts, length), which `kbert.data.batches.padded.PaddedBatches` serves as
    those consecutive rows; `call` gives them directly, in TensorFlow ops, for `tf.data`.

    Args:
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Most tokens per text, special tokens included.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> preprocessor = BertSentenceEncoderPreprocessor(tokenizer, sequence_length=8)
    >>> preprocessor.prepare((["hi"], ["hi hi"])).inputs["token_ids"].tolist()
    [[[2, 5, 3, 0], [2, 5, 5, 3]]]
    """

    def prepare(self, x, y=None, sample_weight=None):
        columns = text_columns(x)
        if columns is None:
            return Prepared(self.tokenizer(text_list(x), max_length=self.sequence_length, padding="longest"),
                            y, sample_weight)
        encoded = [self.tokenizer(column, max_length=self.sequence_length, padding="longest") for column in columns]
        width = max(inputs["token_ids"].shape[1] for inputs in encoded)
        pad = {"token_ids": self.tokenizer.pad_token_id}

        def stacked(key):
            return np.stack([np.pad(inputs[key], ((0, 0), (0, width - inputs[key].shape[1])),
                                    constant_values=pad.get(key, 0)) for inputs in encoded], axis=1)

        return Prepared({key: stacked(key) for key in encoded[0]}, y, sample_weight)

    def call(self, x, y=None, sample_weight=None):
        import tensorflow as tf

        columns = x if isinstance(x, tuple) else (x,)
        encoded = [self.tokenizer.encode(column, max_length=self.sequence_length, padding="longest")
                   for column in columns]
        width = tf.reduce_max([tf.shape(inputs["token_ids"])[1] for inputs in encoded])
        width = tf.minimum(-(-width // PAD_TO_MULTIPLE_OF) * PAD_TO_MULTIPLE_OF, self.sequence_length)
        pad = {"token_ids": self.tokenizer.pad_token_id}
        inputs = {}
        for key in encoded[0]:
            padded = [tf.pad(part[key], [[0, 0], [0, width - tf.shape(part[key])[1]]], constant_values=pad.get(key, 0))
                      for part in encoded]
            inputs[key] = tf.reshape(tf.stack(padded, axis=1), [-1, width])  # each example's texts in a row
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)


def text_columns(x):
    """The columns of a tuple of 2 or 3 equally long lists of texts, as lists; None for one list of texts.

    Example:
    >>> text_columns((["a", "b"], ["c", "d"]))
    [['a', 'b'], ['c', 'd']]
    >>> text_columns(["a", "b"]) is None
    True
    """
    if not isinstance(x, tuple):
        return None
    names = ("texts", "pairs", "negatives")[: len(x)]
    if len(x) not in (2, 3):
        raise ValueError(f"A sentence encoder takes texts, or a tuple of 2 columns (pairs) or 3 (anchors, positives, "
                         f"negatives); got a tuple of {len(x)}.")
    columns = [text_list(column, f"column {i}") for i, column in enumerate(x)]
    if len({len(column) for column in columns}) > 1:
        lengths = ", ".join(f"{len(column)} {name}" for column, name in zip(columns, names))
        raise ValueError(f"The columns pair up row by row but have different lengths: {lengths}.")
    return columns
