import keras
import numpy as np

from kbert.data.readers.tagged_sentences import joined_word_spans
from kbert.data.windows.ner import NerWindows
from kbert.data.windows.token_rows import word_spans_of
from kbert.tasks.bert_preprocessor import BertPreprocessor, Prepared, text_list

MAX_WINDOWS = 64  # windows of one sentence in `call` (a CoNLL sentence rarely needs two)


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenClassifierPreprocessor(BertPreprocessor):
    """Tagged words (or raw texts) to BERT windows, each word's label on its first WordPiece.

    Each example is a list of words (CoNLL style), or a raw text, which the tokenizer splits
    into words at spaces and punctuation. Words are joined by single spaces and tokenized;
    texts longer than a window are cut at word boundaries into several windows
    (`kbert.data.windows.ner.NerWindows`), so every word gets a prediction. Labels (one id per word)
    go on each word's first WordPiece, with its sentence's sample weight (1 where none are given); other
    positions weigh 0.
    `call` does the same in TensorFlow ops for a `tf.data` batch of words (a ragged string
    tensor (batch, (words))) and tag ids (ragged int (batch, (words))): the same windows, so a
    batch of sentences may give more rows than sentences (`kbert.data.windows.tensors.word_window_rows`;
    a sentence needing more than `MAX_WINDOWS` windows stops the pipeline with its reason).

    Args:
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Tokens per window, special tokens included.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s"])
    >>> prepared = BertTokenClassifierPreprocessor(tokenizer).prepare([["his", "hi"]], [[1, 2]])
    >>> prepared.inputs["token_ids"].tolist(), prepared.y.tolist()
    ([[2, 5, 6, 5, 3]], [[0, 1, 0, 2, 0]])
    """

    def prepare(self, x, y=None, sample_weight=None):
        texts, spans = self.words(x)
        if y is not None:
            for i, (labels, word_spans) in enumerate(zip(y, spans)):
                if len(labels) != len(word_spans):
                    raise ValueError(f"Example {i} has {len(word_spans)} words but {len(labels)} tags.")
        windows = NerWindows(self.tokenizer, texts, spans, self.sequence_length, y)
        weights = windows.sample_weight
        if sample_weight is not None:  # a sentence's weight on each of its windows' first pieces
            weights = weights * np.asarray(sample_weight, "float32")[windows.window_texts][:, np.newaxis]
        return Prepared(windows.inputs, None if y is None else windows.labels, weights,
                        windows, list(zip(texts, spans)), token_aligned=True)

    def call(self, x, y=None, sample_weight=None):
        import tensorflow as tf

        from kbert.data.windows.tensors import pick, whole_texts, word_window_rows

        words = x if isinstance(x, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(x)
        texts = tf.strings.reduce_join(words, axis=1, separator=" ")
        starts = tf.math.cumsum(tf.strings.length(words, unit="UTF8_CHAR") + 1, axis=1, exclusive=True)
        ids, offsets, _, lengths = whole_texts(self.tokenizer, texts)
        real = tf.range(tf.shape(ids)[1])[tf.newaxis, :] < lengths[:, tf.newaxis]
        word = tf.searchsorted(starts.to_tensor(default_value=2**30), offsets[..., 0], side="right") - 1
        word = tf.where(real, word, -1)  # [SEP] and padding belong to no word
        inputs, layout = word_window_rows(self.tokenizer, ids, word, lengths, self.sequence_length, MAX_WINDOWS)
        check = tf.debugging.assert_equal(
            tf.reduce_any(layout["truncated"]), False,
            message=f"BertTokenClassifierPreprocessor: a sentence needs more than {MAX_WINDOWS} windows of "
                    f"{self.sequence_length} tokens")
        with tf.control_dependencies([check]):
            inputs = self.pad_to_multiple(inputs)
        if y is None:
            return inputs
        # Each row's places: the text token at each (begin + place - 1), its word, and whether it is the first piece.
        place = tf.range(tf.shape(inputs["token_ids"])[1])[tf.newaxis, :]
        source = layout["begin"][:, tf.newaxis] + place - 1
        inside = (place >= 1) & (place <= layout["size"][:, tf.newaxis])
        first = pick(layout["first"], layout["example"], source) & inside
        tags = y if isinstance(y, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(y)
        row_tags = tf.gather(tf.cast(tags.to_tensor(), tf.int32), layout["example"])
        labels = tf.gather(row_tags, tf.maximum(pick(word, layout["example"], source), 0), batch_dims=1)
        weights = tf.cast(first, tf.float32)
        if sample_weight is not None:  # a sentence's weight on each of its windows' first pieces
            weights *= tf.gather(tf.cast(sample_weight, tf.float32), layout["example"])[:, tf.newaxis]
        return inputs, labels * tf.cast(first, tf.int32), weights

    def words(self, x):
        """`(texts, word spans)`: each example as one string and the char span of each word."""
        if isinstance(x, (str, bytes)) or (len(x) and isinstance(x[0], (str, bytes))):
            texts = text_list(x)
            return texts, word_spans_of(self.tokenizer, texts)
        texts, spans = [], []
        for i, words in enumerate(x):
            words = text_list(words, f"x[{i}]")
            texts.append(" ".join(words))
            spans.append(joined_word_spans(words))
        return texts, spans
