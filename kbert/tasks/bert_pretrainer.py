import keras
from keras import ops

from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.models.bert_backbone import INPUT_KEYS

TASKS = ("nsp", "sop", "mlm")


@keras.saving.register_keras_serializable(package="kbert")
class BertPretrainer(keras.Model):
    """BERT pretraining: masked LM at `mask_positions`, plus next-sentence prediction.

    Inputs: the backbone's dict plus `mask_positions` (batch, predictions), the indices of the
    masked tokens. Outputs: a dict with `mlm`, logits (batch, predictions, vocabulary_size)
    from a `MaskedLMHead` tied to the token embedding, and, unless `next_sentence=False`,
    `nsp`, logits (batch, 2) on the pooled output (next-sentence or sentence-order labels).
    `compile()` fills in the loss: MLM cross-entropy averaged over the masked positions
    (weighted by `mask_weights`, passed as the sample weight of `mlm`) plus NSP
    cross-entropy, and the metrics MLM accuracy, MLM perplexity and NSP accuracy. The
    perplexity is `exp(mlm_loss)`, the mean MLM loss of the epoch so far (as Hugging Face's
    `run_mlm.py` reports it), read from the loss tracker rather than computed again from
    the logits over the whole vocabulary.
    `kbert.data.pretraining_dataset` yields `(x, y, sample_weight)` in this layout.

    Args:
        backbone: `kbert.BertBackbone`.
        next_sentence: bool. Add the 2-way head (NSP or SOP); False for MLM only, which
            freezes the backbone's pooler (nothing reads it).

    Example:
    >>> import numpy as np
    >>> from kbert import BertBackbone
    >>> model = BertPretrainer(BertBackbone.from_preset("bert_tiny"))
    >>> batch = {k: np.ones((2, 8), "int32") for k in ("token_ids", "padding_mask")}
    >>> batch.update(segment_ids=np.zeros((2, 8), "int32"), mask_positions=np.ones((2, 3), "int32"))
    >>> {k: tuple(v.shape) for k, v in model(batch).items()}
    {'mlm': (2, 3, 30522), 'nsp': (2, 2)}
    """

    def __init__(self, backbone, next_sentence=True, **kwargs):
        inputs = {key: keras.Input(shape=(None,), dtype="int32", name=key)
                  for key in (*INPUT_KEYS, "mask_positions")}
        encoded = backbone({key: inputs[key] for key in INPUT_KEYS})
        initializer = keras.initializers.TruncatedNormal(stddev=backbone.initializer_range)
        outputs = {"mlm": MaskedLMHead(
            backbone.token_embedding, layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=initializer, dtype=backbone.dtype_policy, name="mlm_head",
        )(encoded["sequence_output"], inputs["mask_positions"])}
        if next_sentence:
            outputs["nsp"] = keras.layers.Dense(
                2, kernel_initializer=initializer, dtype="float32", name="nsp_head",
            )(encoded["pooled_output"])
        backbone.train_pooler(next_sentence)  # only the 2-way head reads the pooled output
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.next_sentence = next_sentence
        self._reports_perplexity = False

    def compile(self, optimizer="adam", loss=None, metrics=None, weighted_metrics=None, **kwargs):
        """`keras.Model.compile` with BERT's pretraining loss and metrics as defaults."""
        self._reports_perplexity = loss is None  # exp(loss) is a perplexity for cross-entropy only
        if loss is None:
            loss = {"mlm": keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight")}
            if self.next_sentence:
                loss["nsp"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if weighted_metrics is None:
            weighted_metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}
        if metrics is None and self.next_sentence:
            metrics = {"nsp": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def get_metrics_result(self):
        """The compiled metrics, plus `mlm_perplexity` = exp(`mlm_loss`) with the default loss."""
        logs = super().get_metrics_result()
        if self._reports_perplexity and "mlm_loss" in logs:
            logs["mlm_perplexity"] = ops.exp(logs["mlm_loss"])
        return logs

    def get_config(self):
        return {"name": self.name, "next_sentence": self.next_sentence,
                "backbone": keras.saving.serialize_keras_object(self.backbone)}

    @classmethod
    def from_config(cls, config):
        backbone = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**{**config, "backbone": backbone})
