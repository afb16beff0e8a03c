"""Zero-shot classification from an NLI classifier's logits, as Hugging Face's zero-shot-classification pipeline: the
question's (text, hypothesis) pairs and the answers the logits on them give. The Keras task
(`kbert.BertClassifier.zero_shot`), the server and the edge runner (`kbert_edge.EdgeModel.zero_shot`) ask by it.

Each candidate label becomes a hypothesis about the text ("This example is {}." with the label in the braces), and
the classifier reads every (text, hypothesis) pair. The entailment logit of a pair is the label's: a softmax of them
over the labels gives one distribution per text, or, with `multi_label` (or a single label), a softmax over each
pair's contradiction and entailment logits gives each label a probability of its own.
"""

import dataclasses

import numpy as np

from kbert_core.classification import best_first, class_probabilities

# Hugging Face's hypothesis about a text, `{}` where a candidate label goes (the pipeline's `hypothesis_template`).
HYPOTHESIS_TEMPLATE = "This example is {}."


@dataclasses.dataclass(frozen=True)
class ZeroShotQuestion:
    """Which of `labels` each of `texts` is, asked of an NLI classifier: the (text, hypothesis) `pairs` it reads, and
    the `answers` its logits on them give (what a server batches with other requests' pairs).

    Example:
    >>> question = ZeroShotQuestion.of(["entailment", "neutral", "contradiction"], ["Ann scored."], "sports, law")
    >>> question.pairs
    (['Ann scored.', 'Ann scored.'], ['This example is sports.', 'This example is law.'])
    >>> question.answers([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])[0]["labels"]
    ['sports', 'law']
    """

    texts: list
    labels: list
    hypotheses: list
    entailment: int
    contradiction: int
    pairwise: bool  # each label against contradiction (multi_label, or one label), not the labels against each other

    @classmethod
    def of(cls, label_names, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False):
        """The question to a classifier of `label_names`, checked: a ValueError for no text, no or a blank label, a
        template without `{}`, or classes without the NLI classes it needs (`nli_classes`).

        Args:
            label_names: the classifier's class names, in id order.
            texts: a str, or a list of str (the premises).
            candidate_labels: a list of str, or one str of comma-separated labels.
            hypothesis_template: str with `{}` where a label goes.
            multi_label: bool. Each label's own probability, not one distribution over the labels.
        """
        texts = [texts] if isinstance(texts, str) else list(texts)
        if not texts:
            raise ValueError("Zero-shot classification needs at least one text.")  # as Hugging Face's pipeline
        labels = _candidate_labels(candidate_labels)
        if hypothesis_template.format(labels[0]) == hypothesis_template:
            raise ValueError(f"The hypothesis template {hypothesis_template!r} has no {{}} where the label goes "
                             "(e.g. \"This example is {}.\").")
        entailment, contradiction = nli_classes(label_names)
        pairwise = bool(multi_label) or len(labels) == 1
        if pairwise and contradiction is None:
            raise ValueError(f"Zero-shot classification with multi_label (or one label) weighs entailment against "
                             f"contradiction: {list(label_names)} names no class \"contradiction\".")
        return cls(texts, labels, [hypothesis_template.format(label) for label in labels], entailment,
                   contradiction, pairwise)

    @property
    def pairs(self):
        """(premises, hypotheses): every text with every label's hypothesis, text by text."""
        return [text for text in self.texts for _ in self.labels], self.hypotheses * len(self.texts)

    def answers(self, logits):
        """Per text, `{"sequence", "labels", "scores"}`, the labels best first, from the classifier's `logits` on
        `pairs` (texts x labels, classes)."""
        logits = np.asarray(logits, "float64").reshape(len(self.texts), len(self.labels), -1)
        if self.pairwise:
            scores = class_probabilities(logits[..., [self.contradiction, self.entailment]])[..., 1]
        else:
            scores = class_probabilities(logits[..., self.entailment])
        answers = []
        for text, row in zip(self.texts, scores):
            order = best_first(row)
            answers.append({"sequence": text, "labels": [self.labels[i] for i in order],
                            "scores": row[order].tolist()})
        return answers


def nli_classes(label_names):
    """(entailment, contradiction): the class ids of an NLI classifier's, by name. Entailment is the class named
    "entail..." (Hugging Face's rule; a ValueError for classes without one); contradiction the class named
    "contradict...", or the other class of a two-class model (entailment / not entailment, as RTE's and QNLI's),
    else None.

    Example:
    >>> nli_classes(["entailment", "neutral", "contradiction"]), nli_classes(["not_entailment", "entailment"])
    ((0, 2), (1, 0))
    """
    names = [str(name).lower() for name in label_names or ()]
    if not any(name.startswith("entail") for name in names):
        raise ValueError(f"Zero-shot classification reads an NLI classifier, with a class named \"entailment\": this "
                         f"is a classifier of {list(label_names or [])}. Train one on NLI pairs (apps/nli.py) or "
                         "name its classes (label_names).")
    entailment = next(i for i, name in enumerate(names) if name.startswith("entail"))
    contradiction = [i for i, name in enumerate(names) if name.startswith("contradict")]
    if contradiction:
        return entailment, contradiction[0]
    return entailment, (1 - entailment if len(names) == 2 else None)


def _candidate_labels(candidate_labels):
    """A list of labels: a str is comma-separated labels (as Hugging Face's pipeline reads it)."""
    if isinstance(candidate_labels, str):
        candidate_labels = [label.strip() for label in candidate_labels.split(",") if label.strip()]
    labels = list(candidate_labels)
    if not labels:
        raise ValueError("Zero-shot classification needs at least one candidate label.")
    for i, label in enumerate(labels):
        if not isinstance(label, str):
            raise TypeError(f"candidate_labels[{i}] is {type(label).__name__}, not a string.")
        if not label.strip():
            raise ValueError(f"candidate_labels[{i}] is blank: each label needs words for its hypothesis.")
    return labels
