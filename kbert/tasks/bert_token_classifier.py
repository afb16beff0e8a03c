import keras
import numpy as np

from kbert.tasks.bert_task import BertTask
from kbert.tasks.bert_token_classifier_preprocessor import BertTokenClassifierPreprocessor
from kbert_core.entities import entity_spans


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenClassifier(BertTask):
    """Tags every token (NER): backbone, dropout, a Dense head on `sequence_output`.

    On raw inputs, `fit` takes sentences as lists of words with one tag (a name from
    `label_names`, or its id) per word, and a `sample_weight` per sentence if any; `predict`
    takes lists of words or raw texts and returns, per example, `{"text", "tags",
    "tag_probabilities", "entities"}`: a tag per word, its probability (a word without any
    token: `O`, 1), and the entities with their type, text, [start, end) character span and
    mean probability. Long texts are read through several windows (see
    `BertTokenClassifierPreprocessor`). On token ids the model returns logits (batch, length,
    num_classes); each word's label sits on its first WordPiece. The head computes in float32
    even under mixed precision. Nothing here reads the backbone's pooler, so it stays out of
    training (see `BertTask`).

    Args:
        backbone: `kbert.BertBackbone`.
        label_names: list of str. The tags (e.g. `O`, `B-PER`, `I-PER`), in id order; kept
            in the saved model.
        preprocessor: `BertTokenClassifierPreprocessor` or None (token ids only).
        dropout: float. Dropout on the token vectors before the head.

    Example:
    >>> model = BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-PER", "I-PER"])
    >>> history = model.fit([["Ann", "sings"]], [["B-PER", "O"]], verbose=0)
    >>> sorted(model.predict(["Ann sings."], verbose=0)[0])
    ['entities', 'tag_probabilities', 'tags', 'text']
    """

    preprocessor_class = BertTokenClassifierPreprocessor
    token_outputs = True
    example_rank = 1  # a sentence's words
    input_names = ("sentences",)  # lists of words, or texts

    def __init__(self, backbone, label_names, preprocessor=None, dropout=0.1, **kwargs):
        label_names = [str(name) for name in label_names]
        if len(set(label_names)) != len(label_names) or not label_names:
            raise ValueError(f"label_names must be distinct and not empty; got {label_names}.")
        inputs = backbone.input
        x = backbone(inputs)["sequence_output"]
        x = keras.layers.Dropout(dropout, name="head_dropout")(x)
        logits = keras.layers.Dense(
            len(label_names), kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32", name="logits",
        )(x)
        super().__init__(inputs, logits, backbone, preprocessor,
                         config={"label_names": label_names, "dropout": dropout}, **kwargs)

    @property
    def num_classes(self):
        return len(self.label_names)

    def default_compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "weighted_metrics": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}

    def weighed_classes(self, y=None):
        """`label_names`: the tags `class_weight` weighs, a word's on its first piece (`kbert.tasks.class_weights`)."""
        return self.label_names

    def check_labels(self, y):
        if y is None:
            return None
        ids = []
        for i, tags in enumerate(y):
            tags = np.asarray(tags).tolist()
            if any(isinstance(tag, str) for tag in tags):
                unknown = [tag for tag in tags if tag not in self.label_names]
                if unknown:
                    raise ValueError(f"Example {i}: tag {unknown[0]!r} is not one of {self.label_names}.")
                tags = [self.label_names.index(tag) for tag in tags]
            if any(not 0 <= tag < self.num_classes for tag in tags):
                raise ValueError(f"Example {i}: tag ids must lie in [0, {self.num_classes}); got {tags}.")
            ids.append(np.array(tags, "int32"))
        return ids

    def decode(self, outputs, prepared):
        tags, probabilities = prepared.windows.word_tags(outputs, self.label_names)
        return [{"text": text, "tags": word_tags, "tag_probabilities": probs,
                 "entities": entity_spans(text, spans, word_tags, probs)}
                for (text, spans), word_tags, probs in zip(prepared.examples, tags, probabilities)]
