import keras

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.tasks.bert_preprocessor import BertPreprocessor, Prepared, text_pairs


@keras.saving.register_keras_serializable(package="kbert")
class BertMaskedLMPreprocessor(BertPreprocessor):
    """Raw text to masked-LM batches, masked afresh each time a batch is drawn (dynamic masking).

    Each text (or text pair, for next-sentence prediction) is tokenized and cut to
    `sequence_length`; `mask_rate` of its tokens are chosen (at least one, at most
    `max_predictions`), 80% of them replaced by [MASK], 10% by a random token, 10% kept
    (`kbert.data.pretraining.masking.mask_batch`). The outputs are `(x, y, sample_weight)`
    in `BertPretrainer`'s layout: x adds `mask_positions`; y holds `mlm`, the original ids
    there (and `nsp`, the labels given as y); the sample weight of `mlm` marks real
    predictions. It runs in TensorFlow ops, so `BertPretrainer.fit` maps it over `tf.data`
    batches and every epoch sees new masks.

    Args:
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Tokens per row, special tokens included.
        mask_rate: float. Share of the tokens to predict.
        max_predictions: int or None. Predictions per row at most; None: as many as a row of
            `sequence_length` tokens can get (`prediction_slots`: 19 at 128 tokens).
        whole_word: bool. Mask all the WordPieces of a word together.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> x, y, weights = BertMaskedLMPreprocessor(tokenizer, max_predictions=2)(["a b a b"])
    >>> tuple(x["mask_positions"].shape), sorted(y), weights["mlm"].numpy().tolist()
    ((1, 2), ['mlm'], [[1.0, 0.0]])
    """

    def __init__(self, tokenizer, sequence_length=DEFAULT_SEQUENCE_LENGTH, mask_rate=0.15, max_predictions=None,
                 whole_word=False, **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        from kbert.data.pretraining.dataset import masking_vocabulary
        from kbert.data.pretraining.masking import prediction_slots

        self.mask_rate = mask_rate
        self.max_predictions = max_predictions or prediction_slots(sequence_length, mask_rate)
        self.whole_word = whole_word
        self._vocabulary = masking_vocabulary(self.tokenizer)

    def prepare(self, x, y=None, sample_weight=None):
        refuse_sample_weight(sample_weight)
        texts, pairs = text_pairs(x)
        return Prepared(texts if pairs is None else (texts, pairs), y, sample_weight)

    def call(self, x, y=None, sample_weight=None):
        import tensorflow as tf

        from kbert.data.pretraining.masking import mask_batch

        refuse_sample_weight(sample_weight)
        texts, pairs = x if isinstance(x, tuple) else (x, None)
        inputs = self.tokenizer.encode(texts, pairs, max_length=self.sequence_length, padding="longest")
        special_ids, is_suffix, replacement_ids = self._vocabulary
        seed = tf.random.uniform([2], maxval=2**31 - 1, dtype=tf.int64)
        masked = mask_batch(inputs["token_ids"], inputs["padding_mask"], seed, special_ids, is_suffix,
                            self.tokenizer.mask_token_id, replacement_ids, self.mask_rate,
                            self.max_predictions, "whole_word" if self.whole_word else "token")
        x = {**inputs, "token_ids": masked["token_ids"], "mask_positions": masked["mask_positions"]}
        targets, weights = {"mlm": masked["mask_ids"]}, {"mlm": masked["mask_weights"]}
        if y is not None:
            targets["nsp"] = y
            weights["nsp"] = tf.ones_like(masked["mask_weights"][:, 0])
        return x, targets, weights

    def get_config(self):
        return {**super().get_config(), "mask_rate": self.mask_rate,
                "max_predictions": self.max_predictions, "whole_word": self.whole_word}


def refuse_sample_weight(sample_weight):
    """A ValueError for sample weights, which masked LM would drop: it weighs the masked tokens itself."""
    if sample_weight is not None:
        raise ValueError("Masked LM takes no sample_weight: it weighs the tokens it masks itself (give more or "
                         "fewer copies of a text to weigh it).")
