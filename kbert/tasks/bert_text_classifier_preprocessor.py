import keras

from kbert.tasks.bert_preprocessor import (PAD_TO_MULTIPLE_OF, BertPreprocessor, Prepared,
                                          text_pairs)

@keras.saving.register_keras_serializable(package="kbert")
class BertTextClassifierPreprocessor(BertPreprocessor):
    """Texts, or text pairs, to BERT inputs `[CLS] A [SEP] (B [SEP])` cut to `sequence_length`.

    Takes a list of texts, or a tuple `(texts, pairs)` for sentence pairs (NLI premise and
    hypothesis); pairs are cut longest-first as Hugging Face does. `prepare` tokenizes
    Python inputs at once, padded to the longest row; `call` does the same in TensorFlow
    ops, for `tf.data`, padding each batch to its longest row rounded up to a multiple of 8.

    Args:
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Most tokens per input, special tokens included.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> preprocessor = BertTextClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> preprocessor.prepare((["hi"], ["hi hi"])).inputs["segment_ids"].tolist()
    [[0, 0, 0, 1, 1, 1]]
    """

    def prepare(self, x, y=None, sample_weight=None):
        texts, pairs = text_pairs(x)
        inputs = self.tokenizer(texts, pairs, max_length=self.sequence_length, padding="longest")
        return Prepared(inputs, y, sample_weight)

    def call(self, x, y=None, sample_weight=None):
        texts, pairs = x if isinstance(x, tuple) else (x, None)
        inputs = self.tokenizer.encode(texts, pairs, max_length=self.sequence_length,
                                       padding="longest", pad_to_multiple_of=PAD_TO_MULTIPLE_OF)
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)
