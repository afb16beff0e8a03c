import keras
from keras import ops

from kbert.distribution.torch_data_parallel import global_share
from kbert.layers.initializers import clone_initializer
from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.layers.span_boundary_head import SPAN_BOUNDARY_KEYS, SpanBoundaryHead
from kbert.models.bert_backbone import INPUT_KEYS
from kbert.tasks.bert_classifier import class_ids
from kbert.tasks.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kbert.tasks.bert_task import BertTask
from kbert.tasks.fill_mask import fill_mask
from kbert.tasks.unread_pooler import pooled_output

# Families whose masked-LM head computes the exact GELU whatever their encoder's activation (Hugging Face's
# RobertaLMHead, ElectraGeneratorPredictions); the others' heads take the encoder's.
EXACT_GELU_HEADS = ("roberta", "electra")

@keras.saving.register_keras_serializable(package="kbert")
class MaskedTokensLoss(keras.losses.SparseCategoricalCrossentropy):
    """Sparse cross-entropy averaged over the masked tokens (weighted by `mask_weights`, the sample
    weight), those of the global batch in a torch job's `fit` too: a process's mean over its share is
    scaled by the share's part of the masked tokens (`kbert.distribution.torch_data_parallel.global_share`), so that the
    gradients averaged over the processes are the global batch's, as on one device."""

    def __call__(self, y_true, y_pred, sample_weight=None):
        loss = super().__call__(y_true, y_pred, sample_weight)
        share = None if sample_weight is None else global_share(ops.sum(sample_weight))
        return loss if share is None else loss * share


@keras.saving.register_keras_serializable(package="kbert")
class BertPretrainer(BertTask):
    """BERT pretraining: masked LM at `mask_positions`, plus next-sentence prediction.

    On raw inputs, `fit` takes texts (masked afresh for every batch by
    `BertMaskedLMPreprocessor`), or `(first segments, second segments)` with next-sentence
    (or sentence-order) labels as y when the model has that head. On token ids the inputs
    are the backbone's dict plus `mask_positions` (batch, predictions), the indices of the
    masked tokens. Outputs: a dict with `mlm`, logits (batch, predictions,
    vocabulary_size) from a `MaskedLMHead` tied to the token embedding (its dense layer to the embedding's width
    and its activation as the backbone's family has them), and, unless
    `next_sentence=False`, `nsp`, logits (batch, 2) on the pooled output.
    The default loss is MLM cross-entropy averaged over the masked positions (weighted by
    `mask_weights`, passed as the sample weight of `mlm`; `MaskedTokensLoss`) plus NSP cross-entropy; the
    metrics MLM accuracy, MLM perplexity and NSP accuracy. The perplexity is
    `exp(mlm_loss)`, the mean MLM loss of the epoch so far (as Hugging Face's `run_mlm.py`
    reports it), read from the loss tracker rather than computed again from the logits
    over the whole vocabulary. `kbert.data.pretraining.dataset` yields `(x, y,
    sample_weight)` in this layout.

    Args:
        backbone: `kbert.BertBackbone`.
        preprocessor: `BertMaskedLMPreprocessor` or None (token ids only).
        next_sentence: bool. Add the 2-way head (NSP or SOP); False for MLM only, whose
            training leaves the backbone's pooler out (nothing reads it).
        span_boundary: bool. Add SpanBERT's span-boundary objective: inputs `span_left`, `span_right` and
            `span_offset` too, output `sbo` (logits at the masked positions, from `SpanBoundaryHead`), its loss
            `MaskedTokensLoss` added to the MLM loss. Fit on `kbert.data.pretraining.dataset.pretraining_dataset`
            batches with `mask_unit="span", span_boundaries=True`.

    Example:
    >>> model = BertPretrainer.from_preset("bert_tiny", next_sentence=False)
    >>> history = model.fit(["a first text to mask", "and another one"], epochs=1, verbose=0)
    >>> sorted(history.history)  # one output: Keras names its loss and metrics without "mlm_"
    ['accuracy', 'loss']
    """

    preprocessor_class = BertMaskedLMPreprocessor
    needs_labels = False  # masked LM: the text is its own target
    default_learning_rate = 1e-4

    def __init__(self, backbone, preprocessor=None, next_sentence=True, span_boundary=False, **kwargs):
        inputs = {key: keras.Input(shape=(None,), dtype="int32", name=key)
                  for key in (*INPUT_KEYS, "mask_positions", *(SPAN_BOUNDARY_KEYS if span_boundary else ()))}
        encoded = backbone({key: inputs[key] for key in INPUT_KEYS})
        initializer = keras.initializers.TruncatedNormal(stddev=backbone.initializer_range)
        activation = "gelu" if backbone.family in EXACT_GELU_HEADS else backbone.activation
        outputs = {"mlm": MaskedLMHead(
            backbone.token_embedding, layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=clone_initializer(initializer), activation=activation, dtype=backbone.dtype_policy,
            name="mlm_head",
        )(encoded["sequence_output"], inputs["mask_positions"])}
        if next_sentence:
            outputs["nsp"] = keras.layers.Dense(
                2, kernel_initializer=clone_initializer(initializer), dtype="float32", name="nsp_head",
            )(pooled_output(backbone, encoded, "BertPretrainer(next_sentence=True)"))
        if span_boundary:  # SpanBERT's span-boundary objective
            outputs["sbo"] = SpanBoundaryHead(
                backbone.token_embedding, layer_norm_epsilon=backbone.layer_norm_epsilon,
                kernel_initializer=clone_initializer(initializer), dtype=backbone.dtype_policy,
                name="span_boundary_head",
            )(encoded["sequence_output"], *(inputs[key] for key in SPAN_BOUNDARY_KEYS))
        super().__init__(inputs, outputs, backbone, preprocessor,
                         config={"next_sentence": next_sentence, "span_boundary": span_boundary}, **kwargs)

    @property
    def reads_pooled_output(self):
        """Only the next-sentence head reads the pooled output."""
        return getattr(self, "next_sentence", True)

    def compile(self, optimizer="auto", loss="auto", **kwargs):
        """`BertTask.compile`; `mlm_perplexity` is reported when the MLM loss is cross-entropy."""
        super().compile(optimizer=optimizer, loss=loss, **kwargs)
        mlm_loss = self.loss.get("mlm") if isinstance(self.loss, dict) else None
        # exp(loss) is a perplexity for cross-entropy only
        self._reports_perplexity = isinstance(mlm_loss, keras.losses.SparseCategoricalCrossentropy)

    def default_compile_arguments(self):
        loss = {"mlm": MaskedTokensLoss(from_logits=True, reduction="mean_with_sample_weight")}
        arguments = {"loss": loss,
                     "weighted_metrics": {"mlm": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}}
        if self.next_sentence:
            loss["nsp"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            arguments["metrics"] = {"nsp": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}
        if self.span_boundary:
            loss["sbo"] = MaskedTokensLoss(from_logits=True, reduction="mean_with_sample_weight")
            arguments["weighted_metrics"]["sbo"] = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        return arguments

    def fill_mask(self, texts, top_k=5, targets=None, batch_size=32):
        """Hugging Face's fill-mask pipeline: the likeliest tokens where each text writes the mask token, with
        their probabilities and the texts they make (`kbert.tasks.fill_mask`).

        Args:
            texts: a text, or a list of texts, each with the tokenizer's mask token ("[MASK]"; RoBERTa's "<mask>")
                once or more, read whole (up to the backbone's `max_sequence_length` tokens).
            top_k: int. Candidates per mask.
            targets: None, or a token (or a list of them) to score instead of the whole vocabulary.
            batch_size: int. Texts per model call.

        Returns:
            For each text (for a text given alone, its answer alone): a list of `top_k` dicts, best first:
            `score` (the probability), `token` (its id), `token_str` and `sequence` (the text with it in the
            mask's place); for a text with several masks, one such list per mask.

        Example:
        >>> model = BertPretrainer.from_preset("bert_tiny", next_sentence=False)
        >>> [sorted(candidate) for candidate in model.fill_mask("a [MASK] film", top_k=2)]
        [['score', 'sequence', 'token', 'token_str'], ['score', 'sequence', 'token', 'token_str']]
        """
        if self.preprocessor is None:
            raise ValueError("fill_mask reads raw texts: this pretrainer has no preprocessor (token ids only).")
        return fill_mask(self, texts, top_k, targets, batch_size)

    def check_labels(self, y):
        if self.span_boundary:
            raise ValueError("A pretrainer with the span-boundary objective (span_boundary=True) reads span boundaries "
                             "that raw texts do not give: fit it on kbert.data.pretraining.dataset.pretraining_dataset "
                             "batches with mask_unit='span' and span_boundaries=True.")
        if self.next_sentence and y is None:
            raise ValueError("This pretrainer predicts the next sentence: fit it on "
                             "(first segments, second segments) with 0/1 labels as y, or build it "
                             "with next_sentence=False for masked LM on texts alone.")
        if not self.next_sentence and y is not None:
            raise ValueError("A masked-LM pretrainer (next_sentence=False) takes texts alone, no y.")
        return None if y is None else class_ids(y, 2)

    def get_metrics_result(self):
        """The compiled metrics, plus `mlm_perplexity` = exp(`mlm_loss`) with the default loss."""
        logs = super().get_metrics_result()
        if getattr(self, "_reports_perplexity", False) and "mlm_loss" in logs:
            logs["mlm_perplexity"] = ops.exp(logs["mlm_loss"])
        return logs
