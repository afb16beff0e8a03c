import keras
import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data.windows.token_rows import token_rows
from kbert.tasks.bert_preprocessor import (PAD_TO_MULTIPLE_OF, BertPreprocessor, Prepared,
                                          text_pairs)
from kbert_core.windows import pack_text_windows, text_windows

TRAIN_WINDOWS = ("first", "all")


@keras.saving.register_keras_serializable(package="kbert")
class BertTextClassifierPreprocessor(BertPreprocessor):
    """Texts, or text pairs, to BERT inputs `[CLS] A [SEP] (B [SEP])` cut to `sequence_length`.

    Takes a list of texts, or a tuple `(texts, pairs)` for sentence pairs (NLI premise and
    hypothesis); pairs are cut longest-first as Hugging Face does. `prepare` tokenizes
    Python inputs at once, padded to the longest row; `call` does the same in TensorFlow
    ops, for `tf.data`, padding each batch to its longest row rounded up to a multiple of 8.

    With `doc_stride`, `prepare` reads a text longer than `sequence_length` through all its windows
    instead (`[CLS] tokens [SEP]`, each starting `doc_stride` tokens after the previous one, as
    BERT reads SQuAD contexts): `Prepared.windows` gives each row's text, and `BertClassifier`
    combines a text's windows into one prediction. With labels (training, evaluation) a text gives
    its first window only (`train_windows="first"`, the cost of the text of `sequence_length`
    tokens), or every window, each with the text's label (`"all"`: a step per `batch_size`
    windows, so an epoch of long texts costs their windows' count in rows). Windows read single
    texts (pairs are refused) and lists or arrays, not `tf.data` (`call` refuses them).

    Args:
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Most tokens per input, special tokens included.
        doc_stride: int or None. Tokens between the starts of a long text's windows; None reads
            the first `sequence_length` tokens only.
        train_windows: "first" or "all". The windows of a labelled text that are rows (see above).

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> preprocessor = BertTextClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> preprocessor.prepare((["hi"], ["hi hi"])).inputs["segment_ids"].tolist()
    [[0, 0, 0, 1, 1, 1]]
    >>> windows = BertTextClassifierPreprocessor(tokenizer, sequence_length=4, doc_stride=1).prepare(["hi hi hi"])
    >>> windows.inputs["token_ids"].tolist(), windows.windows.tolist()
    ([[2, 5, 5, 3], [2, 5, 5, 3]], [0, 0])
    """

    def __init__(self, tokenizer, sequence_length=DEFAULT_SEQUENCE_LENGTH, doc_stride=None, train_windows="first",
                 **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        if doc_stride is not None and not 0 < doc_stride:
            raise ValueError(f"doc_stride must be a positive number of tokens (or None), not {doc_stride}.")
        if train_windows not in TRAIN_WINDOWS:
            raise ValueError(f"train_windows must be one of {TRAIN_WINDOWS}, not {train_windows!r}.")
        self.doc_stride, self.train_windows = doc_stride, train_windows

    def prepare(self, x, y=None, sample_weight=None):
        texts, pairs = text_pairs(x)
        if self.doc_stride is None:
            inputs = self.tokenizer(texts, pairs, max_length=self.sequence_length, padding="longest",
                                    return_lengths=True)
            lengths, _ = inputs.pop("lengths"), inputs.pop("segment_lengths")
            return Prepared(inputs, y, sample_weight, truncated=lengths > self.sequence_length)
        if pairs is not None:
            raise ValueError("Windows (doc_stride) read single texts; sentence pairs are cut to sequence_length: "
                             "build the preprocessor without doc_stride for pairs.")
        labelled, first_only = y is not None, self.train_windows == "first"
        windows = [(ids, text_windows(len(ids), self.sequence_length, self.doc_stride)[: 1 if labelled and first_only
                                                                                       else None])
                   for ids, _ in token_rows(self.tokenizer, texts)]
        inputs, examples = pack_text_windows(windows, self.tokenizer.cls_token_id, self.tokenizer.sep_token_id,
                                             self.tokenizer.pad_token_id)
        rows = lambda values: None if values is None else np.asarray(values)[examples]  # noqa: E731 (text -> rows)
        return Prepared(inputs, rows(y), rows(sample_weight), windows=examples)

    def call(self, x, y=None, sample_weight=None):
        if self.doc_stride is not None:
            raise ValueError("A preprocessor reading long texts through windows (doc_stride) takes lists or arrays "
                             "of texts, not a tf.data.Dataset (not built yet): give the texts as a list, or use a "
                             "preprocessor without doc_stride (first windows only).")
        texts, pairs = x if isinstance(x, tuple) else (x, None)
        inputs = self.tokenizer.encode(texts, pairs, max_length=self.sequence_length,
                                       padding="longest", pad_to_multiple_of=PAD_TO_MULTIPLE_OF)
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    def get_config(self):
        return {**super().get_config(), "doc_stride": self.doc_stride, "train_windows": self.train_windows}
