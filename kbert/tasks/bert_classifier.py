import keras
import numpy as np
from keras import ops

from kbert.config import DEFAULT_BATCH_SIZE
from kbert.data.batches.padded import PaddedBatches
from kbert.models.compute_dtype import with_compute_dtype
from kbert.tasks import task_data
from kbert.tasks.bert_preprocessor import text_list, text_pairs
from kbert.tasks.bert_task import BertTask
from kbert.tasks.bert_text_classifier_preprocessor import BertTextClassifierPreprocessor
from kbert.tasks.distillation_loss import DistillationLoss, TeacherRows
from kbert.tasks.packed_calls import packed_sequences, worth_packing
from kbert.tasks.raw_datasets import is_dataset
from kbert.tasks.table_inputs import raw_inputs
from kbert.tasks.unread_pooler import pooled_output
from kbert.tasks.zero_shot import zero_shot
from kbert_core.classification import EMPTY_TEXT, best_first, class_probabilities, is_blank
from kbert_core.windows import combine_windows
from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE

WINDOW_POOLINGS = ("mean", "max")
# The families whose classifiers read the first token, not the pooler, through a dense layer of the hidden width:
# {family: (its activation, whether dropout also comes before that layer)}, as Hugging Face's heads compute
# (RobertaClassificationHead's tanh, ElectraClassificationHead's exact GELU, DistilBERT's pre_classifier and ReLU).
FIRST_TOKEN_HEADS = {"roberta": ("tanh", True), "electra": ("gelu", True), "distilbert": ("relu", False)}


@keras.saving.register_keras_serializable(package="kbert")
class BertClassifier(BertTask):
    """Sentence (or sentence-pair) classifier: backbone, dropout, a Dense head on `pooled_output` (BERT's and
    ALBERT's); RoBERTa's, ELECTRA's and DistilBERT's read the first token through a dense layer of their own
    (`FIRST_TOKEN_HEADS`), as their Hugging Face classifiers do.

    On raw inputs, `fit` takes a list of texts, or `(premises, hypotheses)` for pairs (NLI)
    (or a DataFrame of one or two text columns: see `BertTask`), with labels as class ids or as
    `label_names`; a model built without `label_names` and fit on names takes their sorted distinct
    values as its classes (kept in the saved model) where they are `num_classes`, and `predict`
    returns class probabilities (batch, num_classes). On token ids (`[CLS] A [SEP] B [SEP]`, segment ids 0/1) the model
    returns logits. With `num_classes=1` it is a regressor (STS-B scores), trained with mean
    squared error, and `predict` returns the scores (batch,). With `multi_label=True` a text may
    have any number of the classes (a sigmoid per class, binary cross-entropy): labels are a list
    of names (or ids) per text, or a 0/1 matrix (texts, classes); `predict` returns each class's
    probability and `labels_of` the classes at or above `threshold`. The head computes in float32
    even under a mixed precision policy, so the loss sees full-precision logits.

    Args:
        backbone: `kbert.BertBackbone`.
        num_classes: int. Classes; 1 for regression.
        preprocessor: `BertTextClassifierPreprocessor` or None (token ids only).
        dropout: float. Dropout on the pooled output before the head.
        label_names: list of str or None. Class names, kept in the saved model.
        multi_label: bool. Any number of classes per text, rather than exactly one.
        threshold: float in (0, 1). Under `multi_label`, the probability from which `labels_of`
            gives a class (and the "accuracy" metric counts it predicted).
        window_pooling: "mean" or "max". How `predict` combines the logits of a long text's windows
            (a preprocessor with `doc_stride`): their mean (the default), or each class's largest.
            `evaluate` scores each text once, on its windows combined so (as `predict`), whichever
            windows `fit` trains on (`train_windows`).

    Example:
    >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    >>> history = model.fit(["a gripping film", "dull and long"], ["pos", "neg"], verbose=0)
    >>> model.predict(["not bad at all"], verbose=0).shape
    (1, 2)
    >>> tagger = BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=["sports", "politics", "arts"],
    ...                                     multi_label=True)
    >>> history = tagger.fit(["the minister's match", "a new opera"], [["sports", "politics"], ["arts"]], verbose=0)
    >>> tagger.labels_of([[0.9, 0.7, 0.1]])
    [['sports', 'politics']]
    """

    preprocessor_class = BertTextClassifierPreprocessor
    default_learning_rate = 3e-5
    decoding_settings = ("threshold", "window_pooling")

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1, label_names=None, multi_label=False,
                 threshold=0.5, window_pooling="mean", **kwargs):
        _check_decoding(threshold, window_pooling)
        if multi_label and num_classes < 2:
            raise ValueError(f"multi_label=True takes num_classes of 2 or more (a sigmoid per class), not "
                             f"{num_classes}; for one yes/no class use num_classes=2.")
        if label_names is not None and len(label_names) != num_classes:
            raise ValueError(f"Got {len(label_names)} label_names for num_classes={num_classes}.")
        if label_names is not None and len({str(name) for name in label_names}) < len(label_names):
            twice = sorted({str(n) for n in label_names if [str(m) for m in label_names].count(str(n)) > 1})
            raise ValueError(f"label_names must be distinct: {twice} appear more than once in {list(label_names)} "
                             "(a class whose name is taken could never be a target).")
        inputs = backbone.input
        x = sentence_vector(backbone, backbone(inputs), dropout)
        logits = keras.layers.Dense(
            num_classes, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32", name="logits",
        )(x)
        label_names = None if label_names is None else [str(name) for name in label_names]
        super().__init__(inputs, logits, backbone, preprocessor, config={
            "num_classes": num_classes, "dropout": dropout, "label_names": label_names, "multi_label": multi_label,
            "threshold": threshold, "window_pooling": window_pooling}, **kwargs)

    @property
    def reads_pooled_output(self):
        """BERT's and ALBERT's heads read the pooler; the first-token heads (`FIRST_TOKEN_HEADS`) leave it out."""
        return self.backbone.family not in FIRST_TOKEN_HEADS

    @property
    def regression(self):
        """True when the model predicts one score (num_classes=1) rather than classes."""
        return self.num_classes == 1

    def _check_examples(self, x, y):
        """As `BertTask`'s, and a text (or pair) with no tokens, an empty document, is refused by its index."""
        super()._check_examples(x, y)
        texts, pairs = text_pairs(x)
        lowercase = self.preprocessor.tokenizer.lowercase
        for i, text in enumerate(texts):
            if is_blank(text, None if pairs is None else pairs[i], lowercase):
                raise ValueError(f"BertClassifier.fit: text {i} is empty (no tokens: blank, or only characters BERT "
                                 "drops); there is nothing to learn its label from: drop it.")

    def take_label_names(self, y):
        """A model without `label_names` fit on class names takes their sorted distinct values as its classes
        (kept in `get_config`), where they are `num_classes`; a ValueError says to pass `label_names` if not."""
        if y is None or self.regression or self.label_names is not None:
            return
        names = names_of(labelled_values(y, self.multi_label))
        if names is None:  # class ids
            return
        if len(names) != self.num_classes:
            raise ValueError(f"BertClassifier.fit got labels as class names, {len(names)} of them ({names[:10]}), "
                             f"for num_classes={self.num_classes} and no label_names: pass "
                             f"label_names=[...] to from_preset, in class id order.")
        self.label_names = self._arguments["label_names"] = names

    def set_decoding(self, **settings):
        """`BertTask.set_decoding`, the values checked as the constructor checks them (a compiled multi-label model's
        accuracy keeps its threshold until the next `compile()`, which `from_preset` does)."""
        current = {"threshold": self.threshold, "window_pooling": self.window_pooling}
        _check_decoding(**{**current, **{key: value for key, value in settings.items() if key in current}})
        super().set_decoding(**settings)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`BertTask.evaluate`; a preprocessor reading long texts through windows (`doc_stride`) scores each text
        once, on its windows' logits combined by `window_pooling` as `predict` combines them, not each window.

        Example:
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=8, doc_stride=4)
        >>> len(model.evaluate(["a film " * 20, "dull"], [1, 0], verbose=0))  # loss and accuracy of 2 texts
        2
        """
        if getattr(self.preprocessor, "doc_stride", None) is None or task_data.takes_as_is(self, x) or is_dataset(x):
            return super().evaluate(x, y, batch_size, sample_weight, **kwargs)
        unknown = sorted(set(kwargs) - {"verbose", "return_dict"})
        if unknown:
            raise TypeError(f"evaluate on texts read through windows takes batch_size, sample_weight, verbose and "
                            f"return_dict, not {unknown}.")
        if not self.compiled:
            self.compile()
        x, y, sample_weight = raw_inputs(self, x, y, sample_weight, "evaluate")
        task_data.check_examples(self, x, y, "evaluate")
        prepared = self.preprocessor.prepare(x)  # every window of every text
        batches = PaddedBatches(prepared.inputs, batch_size=batch_size or DEFAULT_BATCH_SIZE)
        outputs = batches.predict(self, kwargs.get("verbose", "auto"), token_outputs=False)
        logits = self.combined_logits(outputs, prepared)
        weights = None if sample_weight is None else np.asarray(sample_weight, "float32")
        return task_data.evaluate_outputs(self, logits, self.check_labels(y), weights,
                                          kwargs.get("return_dict", False))

    def default_compile_arguments(self):
        if self.multi_label:  # the metric reads logits: a probability of `threshold` is a logit of log(t / (1 - t))
            logit = float(np.log(self.threshold / (1 - self.threshold)))
            return {"loss": keras.losses.BinaryCrossentropy(from_logits=True),
                    "metrics": [keras.metrics.BinaryAccuracy("accuracy", threshold=logit)]}
        if self.regression:
            return {"loss": keras.losses.MeanSquaredError(), "metrics": [keras.metrics.MeanAbsoluteError("mae")]}
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "metrics": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}

    def check_labels(self, y):
        if y is None:
            return None
        if isinstance(y, TeacherRows):  # a student's rows into the outputs of its teacher, which its loss holds
            if not isinstance(self.loss, DistillationLoss):
                raise ValueError("BertClassifier.fit got TeacherRows as labels: compile the model with the "
                                 "DistillationLoss that made them (loss=...), which reads the teacher's outputs.")
            return np.asarray(y, "int32")
        if self.regression:
            scores = np.asarray(y, "float32").reshape(-1, 1)
            if not np.isfinite(scores).all():
                raise ValueError(f"Score {int(np.flatnonzero(~np.isfinite(scores))[0])} is not finite.")
            return scores
        if self.multi_label:
            return label_matrix(y, self.num_classes, self.label_names)
        return class_ids(y, self.num_classes, self.label_names)

    def weighed_classes(self, y=None):
        """`label_names` (the ids as names where it has none): the classes `class_weight` weighs, one a text; a
        ValueError for a regressor, a multi-label classifier, and a distillation's labels (`TeacherRows`)."""
        if self.regression:
            raise ValueError("BertClassifier.fit takes no class_weight for a regressor (num_classes=1): scores have "
                             "no classes; weigh examples with sample_weight.")
        if self.multi_label:
            raise ValueError("BertClassifier.fit takes no class_weight with multi_label=True: a text has any "
                             "number of classes, so no one class weighs it; weigh texts with sample_weight.")
        if isinstance(y, TeacherRows):
            raise ValueError("BertClassifier.fit takes no class_weight when it distils: its labels are rows of the "
                             "teacher's outputs, not classes.")
        return list(self.label_names or map(str, range(self.num_classes)))

    def check_label_spec(self, spec):
        import tensorflow as tf

        if self.multi_label:
            if not (spec.dtype.is_integer or spec.dtype.is_floating) or spec.shape.rank != 2 or (
                    spec.shape[-1] is not None and spec.shape[-1] != self.num_classes):
                raise ValueError(f"A multi-label BertClassifier on a tf.data.Dataset takes labels as a 0/1 matrix, "
                                 f"batches of shape (batch, {self.num_classes}); this one's are {spec.dtype.name} "
                                 f"of shape {spec.shape}.")
            return
        if not (spec.dtype.is_integer or spec.dtype.is_floating):
            names = ": map label names to ids first" if spec.dtype == tf.string and not self.regression else ""
            kind = "scores" if self.regression else "class ids"
            raise ValueError(f"BertClassifier on a tf.data.Dataset takes labels as {kind}; this one's are "
                             f"{spec.dtype.name}{names}.")
        if spec.shape.rank not in (1, 2) or spec.shape.rank == 2 and spec.shape[-1] != 1:
            hint = " (one-hot? give class ids: tf.argmax(labels, -1))" if spec.shape.rank == 2 else ""
            raise ValueError(f"BertClassifier on a tf.data.Dataset takes one label per example, batches of shape "
                             f"(batch,) or (batch, 1); this one's labels have shape {spec.shape}{hint}.")

    def checked_labels(self, y):
        import tensorflow as tf

        if self.regression:
            return tf.debugging.assert_all_finite(tf.cast(y, "float32"), "BertClassifier: a score is not finite")
        if self.multi_label:
            y = tf.cast(y, "float32")
            check = tf.debugging.assert_equal(y * (1 - y), tf.zeros_like(y),
                                              message="BertClassifier: multi-label targets must be 0 or 1")
            with tf.control_dependencies([check]):
                return tf.identity(y)
        message = f"BertClassifier: class ids must be whole numbers in [0, {self.num_classes})"
        checks = [tf.debugging.assert_non_negative(y, message=message),
                  tf.debugging.assert_less(y, tf.cast(self.num_classes, y.dtype), message=message)]
        if y.dtype.is_floating:
            checks.append(tf.debugging.assert_equal(y, tf.round(y), message=message))
        with tf.control_dependencies(checks):
            return tf.identity(y)

    def logits(self, x, batch_size=None, verbose=0):
        """The model's outputs on the raw inputs `x` (texts, or `(texts, pairs)`), one row per text, before the
        softmax or sigmoid of `predict`: logits (texts, classes), or a regressor's scores (texts, 1); a long text's
        windows combined by `window_pooling`, as `predict` combines them (what a teacher gives a student:
        `kbert.tasks.distillation_loss`).

        Example:
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
        >>> logits = model.logits(["a gripping film"])
        >>> softmax = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        >>> bool(np.allclose(softmax, model.predict(["a gripping film"], verbose=0), atol=1e-6))
        True
        """
        return self.prepared_logits(self.preprocessor.prepare(raw_inputs(self, x, call="predict")[0]), batch_size,
                                    verbose)

    def prepared_logits(self, prepared, batch_size=None, verbose=0):
        """`logits` on the inputs `prepared` (a `Prepared` of this model's preprocessor): what a caller that reads
        their token ids first (`kbert.training.distillation`) runs the model on, without tokenizing them again."""
        batches = PaddedBatches(prepared.inputs, batch_size=batch_size or DEFAULT_BATCH_SIZE)
        return self.combined_logits(batches.predict(self, verbose, token_outputs=False), prepared)

    def combined_logits(self, outputs, prepared):
        """The model's `outputs` (numpy) on the rows of `prepared`, one row per text: a long text's windows
        combined by `window_pooling`."""
        outputs = np.asarray(outputs, "float32")
        if prepared is not None and prepared.windows is not None:
            outputs = combine_windows(outputs, prepared.windows, self.window_pooling)
        return outputs

    def decode(self, outputs, prepared):
        outputs = self.combined_logits(outputs, prepared)
        if self.regression:
            return outputs[:, 0]
        return class_probabilities(outputs, self.multi_label)

    def labels_of(self, probabilities):
        """The classes `predict`'s probabilities choose, by name (ids without `label_names`): under
        `multi_label` a list per text of every class at or above `threshold`, else the most probable.

        Example:
        >>> BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"]).labels_of([[0.2, 0.8]])
        ['pos']
        """
        probabilities = np.asarray(probabilities, "float32")
        if self.regression:
            raise ValueError("A regressor (num_classes=1) predicts scores, not classes.")
        names = self.label_names or list(range(self.num_classes))
        if self.multi_label:
            return [[names[i] for i in np.flatnonzero(row >= self.threshold)] for row in probabilities]
        return [names[i] for i in probabilities.argmax(-1)]

    def packed_logits(self, inputs, batch_size=None, row_length=None):
        """The logits (texts, classes) on model `inputs` (a `Prepared`'s, texts or pairs), computed on packed rows
        (`kbert.tasks.packed_calls`): the head on each text's first token, as the graph computes it at inference.

        Example:
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
        >>> prepared = model.preprocessor.prepare(["a gripping film", "dull"])
        >>> bool(np.allclose(model.packed_logits(prepared.inputs), model.predict_on_batch(prepared.inputs),
        ...                  atol=1e-5))
        True
        """
        first = np.stack([vectors[0] for vectors in packed_sequences(self.backbone, inputs, batch_size, row_length)])
        x = ops.convert_to_tensor(first)
        if self.reads_pooled_output:
            x = self.backbone.pooler(ops.cast(x, self.backbone.compute_dtype))
        else:
            x = self.get_layer("head_dense")(x)
        return ops.convert_to_numpy(self.get_layer("logits")(x))

    def answers(self, x, batch_size=None, verbose=0, dtype="float32", pack=False):
        """What the model says of each raw text (or pair), as the apps' `predict` gives it: `text` (and `pair`),
        then `label`, `probability` and `probabilities` (each class's, by name); under `multi_label`, `labels` (those
        at or above `threshold`) and `probabilities`; a regressor's `score`. An empty or blank text (or pair) gets
        no label but a `note` (`EMPTY_TEXT`), and a text cut to the sequence length (no `doc_stride`) a `note`
        saying so. Each text is tokenized once. `x`, `batch_size`, `verbose` and `dtype` as for `predict`; `pack`:
        compute on packed rows (`packed_logits`; `batch_size` rows a call), not in padded batches (a lone text: padded,
        `kbert.tasks.packed_calls.worth_packing`).

        Example:
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
        >>> [sorted(answer) for answer in model.answers(["a film", " "])]
        [['label', 'probabilities', 'probability', 'text'], ['label', 'note', 'text']]
        """
        texts, pairs = text_pairs(raw_inputs(self, x, call="predict")[0])
        results = [{"text": text} if pairs is None else {"text": text, "pair": pairs[i]} for i, text in enumerate(texts)]
        lowercase = self.preprocessor.tokenizer.lowercase
        for result in results:
            if is_blank(result["text"], result.get("pair"), lowercase):
                result.update(label=None, note=EMPTY_TEXT)
        kept = [result for result in results if "note" not in result]
        if not kept:
            return results
        kept_texts = [result["text"] for result in kept]
        prepared = self.preprocessor.prepare(
            kept_texts if pairs is None else (kept_texts, [result["pair"] for result in kept]))
        model = with_compute_dtype(self, dtype)
        if pack and worth_packing(prepared.inputs):
            outputs = model.decode(model.packed_logits(prepared.inputs, batch_size), prepared)
        else:
            outputs = task_data.predict_prepared(model, model, prepared, batch_size, verbose)
        names = self.label_names or list(range(self.num_classes))
        truncated = np.zeros(len(kept), bool) if prepared.truncated is None else prepared.truncated
        for result, output, cut in zip(kept, outputs, truncated):
            if self.regression:
                result["score"] = float(output)
            elif self.multi_label:
                result.update(labels=self.labels_of([output])[0],
                              probabilities=dict(zip(names, output.round(6).tolist())))
            else:
                best = int(output.argmax())
                result.update(label=names[best], probability=float(output[best]),
                              probabilities=dict(zip(names, output.round(6).tolist())))
            if cut:
                result["note"] = f"long input: read its first {self.preprocessor.sequence_length} tokens"
        return results

    def zero_shot(self, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False,
                  batch_size=None, verbose=0):
        """Hugging Face's zero-shot-classification pipeline, for a classifier trained on NLI (a class named
        "entailment"): which of `candidate_labels`, labels it was never trained on, each text is
        (`kbert.tasks.zero_shot`).

        Args:
            texts: a text, or a list of texts (the premises).
            candidate_labels: list of str, or one str of comma-separated labels.
            hypothesis_template: str with `{}` where a label goes: the hypothesis about each text.
            multi_label: bool. Each label's own probability (entailment against contradiction), not one
                distribution over the labels (a softmax of their entailment logits).
            batch_size, verbose: as for `predict`; the model reads texts x labels pairs.

        Returns:
            For each text (for a text given alone, its answer alone): `{"sequence", "labels", "scores"}`, the
            labels best first with their scores.

        Example:
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=3,
        ...                                    label_names=["entailment", "neutral", "contradiction"])
        >>> answer = model.zero_shot("The striker scored twice.", ["sports", "politics"])
        >>> sorted(answer["labels"]), round(sum(answer["scores"]), 6)
        (['politics', 'sports'], 1.0)
        """
        return zero_shot(self, texts, candidate_labels, hypothesis_template, multi_label, batch_size, verbose)

    def rank(self, query, documents, top_k=None, return_documents=False, batch_size=None, verbose=0):
        """Sentence Transformers' `CrossEncoder.rank`, for a regressor on pairs (a cross-encoder: a Hugging Face
        `ForSequenceClassification` folder with one label, or a similarity run): the documents best first by the
        score the model gives each `(query, document)` pair.

        Args:
            query: str.
            documents: list of str.
            top_k: int or None. Keep the best `top_k`.
            return_documents: bool. Give each document's text too.
            batch_size, verbose: as for `predict`.

        Returns:
            A list of `{"corpus_id", "score"}` (and `"text"`), the documents' indices best first; the score is
            `predict`'s (Sentence Transformers' `rank` gives its sigmoid for a model of one label).

        Example:
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=1)
        >>> [sorted(hit) for hit in model.rank("a film", ["a good film", "stocks fell"], top_k=1)]
        [['corpus_id', 'score']]
        """
        if not self.regression:
            raise ValueError(f"rank orders documents by one score a pair, a regressor's (num_classes=1, a "
                             f"cross-encoder): this classifier gives {self.num_classes} classes; use predict.")
        if not isinstance(query, str):
            raise TypeError(f"rank takes one query, a string; got {type(query).__name__}.")
        documents = text_list(documents, "documents")
        if not documents:
            return []
        scores = self.predict(([query] * len(documents), documents), batch_size=batch_size, verbose=verbose)
        return [{"corpus_id": int(i), "score": float(scores[i]), **({"text": documents[i]} if return_documents else {})}
                for i in best_first(scores, top_k)]


def sentence_vector(backbone, encoded, dropout):
    """What the classifier's last Dense layer (`logits`) reads of the backbone's outputs `encoded`: the pooled
    output after dropout, or the first token through the family's dense layer (`FIRST_TOKEN_HEADS`, the layer
    `head_dense`), computed in float32 as the logits.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("distilbert_base", num_layers=1)
    >>> sentence_vector(backbone, backbone(backbone.input), 0.1).shape
    (None, 768)
    """
    if backbone.family not in FIRST_TOKEN_HEADS:
        return keras.layers.Dropout(dropout, name="head_dropout")(pooled_output(backbone, encoded, "BertClassifier"))
    activation, dropout_first = FIRST_TOKEN_HEADS[backbone.family]
    x = encoded["sequence_output"][:, 0, :]
    if dropout_first:
        x = keras.layers.Dropout(dropout, name="first_token_dropout")(x)
    x = keras.layers.Dense(backbone.hidden_dim, activation=activation, dtype="float32", name="head_dense",
                           kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02))(x)
    return keras.layers.Dropout(dropout, name="head_dropout")(x)


def labelled_values(labels, multi_label=False):
    """`(place, label)` for each label of `labels` (multi-label: each of a row's), its place "label i" (or
    "label row i"), for `names_of`; numbers in a numeric array give none (they are ids).

    Example:
    >>> labelled_values([["a"], ["b", "c"]], multi_label=True)
    [('label row 0', 'a'), ('label row 1', 'b'), ('label row 1', 'c')]
    """
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biuf":
        return []
    values = []
    for i, row in enumerate(labels):
        row = row.tolist() if isinstance(row, np.ndarray) else row
        if multi_label and isinstance(row, (list, tuple, set, frozenset)):
            values += [(f"label row {i}", value) for value in row]
        else:
            values.append((f"label {i}", row))
    return values


def names_of(values):
    """The sorted distinct class names of `values` (`labelled_values`) when all are names (str or UTF-8
    bytes), None when none is; a ValueError when names and ids mix.

    Example:
    >>> names_of([("label 0", "pos"), ("label 1", "neg"), ("label 2", "pos")])
    ['neg', 'pos']
    >>> names_of([("label 0", "pos"), ("label 1", 0)])
    Traceback (most recent call last):
    ...
    ValueError: Labels mix class names and ids: label 0 is 'pos' but label 1 is 0; give all as names or all as ids.
    """
    is_name = [isinstance(value, (str, bytes)) for _, value in values]
    if not any(is_name):
        return None
    if not all(is_name):
        (first, a), (then, b) = (values[i] for i in sorted((is_name.index(True), is_name.index(False))))
        raise ValueError(f"Labels mix class names and ids: {first} is {a!r} but {then} is {b!r}; give all as names "
                         "or all as ids.")
    return sorted({name.decode("utf-8") if isinstance(name, bytes) else name for _, name in values})


def label_matrix(labels, num_classes, label_names=None):
    """Multi-label targets as a float32 0/1 matrix (texts, classes), from a 0/1 matrix or a list per
    text of class names (from `label_names`) or ids; a str alone is one name. A ValueError names a
    bad row.

    Example:
    >>> label_matrix([["b"], [], ["a", "b"]], 2, ["a", "b"]).tolist()
    [[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    >>> label_matrix([["a", "c"]], 2, ["a", "b"])
    Traceback (most recent call last):
    ...
    ValueError: Label row 0 names 'c', not one of the label names ['a', 'b'].
    """
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biuf":
        matrix = labels.astype("float32")
        if matrix.ndim != 2 or matrix.shape[1] != num_classes:
            raise ValueError(f"Multi-label targets as a matrix must have shape (texts, {num_classes}), not "
                             f"{matrix.shape}.")
        bad = np.flatnonzero(((matrix != 0) & (matrix != 1)).any(axis=1))
        if len(bad):
            raise ValueError(f"Label row {int(bad[0])} is {matrix[bad[0]].tolist()}: a 0/1 matrix holds 0 or 1 only.")
        return matrix
    matrix = np.zeros((len(labels), num_classes), "float32")
    for i, row in enumerate(labels):
        if isinstance(row, (str, bytes)):
            row = [row]
        if isinstance(row, np.ndarray):
            row = row.tolist()
        if not isinstance(row, (list, tuple, set, frozenset)):
            raise ValueError(f"Label row {i} is {row!r}: a multi-label row is a list of class names or ids.")
        for label in row:
            label = label.decode("utf-8") if isinstance(label, bytes) else label
            if isinstance(label, str):
                if not label_names or label not in label_names:
                    raise ValueError(f"Label row {i} names {label!r}, not one of the label names {label_names}.")
                label = label_names.index(label)
            if isinstance(label, bool) or not float(label).is_integer() or not 0 <= label < num_classes:
                raise ValueError(f"Label row {i} holds {label!r}, outside the {num_classes} classes "
                                 f"(ids 0 to {num_classes - 1}).")
            matrix[i, int(label)] = 1
    names_of(labelled_values(labels, multi_label=True))  # names and ids do not mix
    return matrix


def class_ids(labels, num_classes, label_names=None):
    """Labels (ids, or names from `label_names`) as an int32 array; a ValueError names a bad one.

    Example:
    >>> class_ids(["pos", "neg"], 2, ["neg", "pos"]).tolist()
    [1, 0]
    >>> class_ids([0, 3], 2)
    Traceback (most recent call last):
    ...
    ValueError: Label 1 is 3, outside the 2 classes (ids 0 to 1).
    """
    labels = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
    ids = []
    for i, label in enumerate(labels):
        if isinstance(label, bytes):
            label = label.decode("utf-8")
        if isinstance(label, str):
            if not label_names or label not in label_names:
                raise ValueError(f"Label {i} is {label!r}, not one of the label names {label_names}.")
            label = label_names.index(label)
        if label is None or isinstance(label, float) and np.isnan(label):  # a table's empty cell
            raise ValueError(f"Label {i} is missing ({label}): drop that example or give its label.")
        if not float(label).is_integer() or not 0 <= label < num_classes:
            raise ValueError(f"Label {i} is {label}, outside the {num_classes} classes "
                             f"(ids 0 to {num_classes - 1}).")
        ids.append(int(label))
    names_of(labelled_values(labels))  # names and ids do not mix
    return np.array(ids, "int32")


def _check_decoding(threshold, window_pooling):
    """A ValueError unless `threshold` is a probability strictly between 0 and 1 and `window_pooling` one of
    `WINDOW_POOLINGS`."""
    if window_pooling not in WINDOW_POOLINGS:
        raise ValueError(f"window_pooling must be one of {WINDOW_POOLINGS}, not {window_pooling!r}.")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold={threshold} is not a probability strictly between 0 and 1.")
