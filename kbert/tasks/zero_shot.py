"""`BertClassifier.zero_shot`: Hugging Face's zero-shot-classification pipeline on a kbert NLI classifier, the same
labels, order and scores.

Each candidate label becomes a hypothesis about the text ("This example is {}." with the label in the braces), and
the classifier reads every (text, hypothesis) pair. The entailment logit of a pair is the label's: a softmax of
them over the labels gives one distribution per text, or, with `multi_label` (or a single label), a softmax over
each pair's contradiction and entailment logits gives each label a probability of its own.
"""

import dataclasses

import numpy as np

from kbert.tasks.bert_preprocessor import text_list
from kbert_core.classification import HYPOTHESIS_TEMPLATE, class_probabilities


def zero_shot(classifier, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False,
              batch_size=None, verbose=0):
    """What `BertClassifier.zero_shot` returns (see there)."""
    question = ZeroShotQuestion.of(classifier, texts, candidate_labels, hypothesis_template, multi_label)
    answers = question.answers(classifier.logits(question.pairs, batch_size, verbose))
    return answers[0] if isinstance(texts, str) else answers


@dataclasses.dataclass(frozen=True)
class ZeroShotQuestion:
    """Which of `labels` each of `texts` is, asked of an NLI classifier: the (text, hypothesis) `pairs` it reads, and
    the `answers` its logits on them give (what a server batches with other requests' pairs)."""

    texts: list
    labels: list
    hypotheses: list
    entailment: int
    contradiction: int
    pairwise: bool  # each label against contradiction (multi_label, or one label), not the labels against each other

    @classmethod
    def of(cls, classifier, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False):
        """The question, checked: a ValueError for no text, no label, a template without `{}`, or a classifier
        without the NLI classes it needs (`nli_classes`).

        Example:
        >>> from kbert import BertClassifier
        >>> nli = BertClassifier.from_preset("bert_tiny", num_classes=3,
        ...                                  label_names=["entailment", "neutral", "contradiction"])
        >>> ZeroShotQuestion.of(nli, "Ann scored.", "sports, politics").pairs
        (['Ann scored.', 'Ann scored.'], ['This example is sports.', 'This example is politics.'])
        """
        texts = text_list(texts)
        if not texts:
            raise ValueError("Zero-shot classification needs at least one text.")  # as Hugging Face's pipeline
        labels = _candidate_labels(candidate_labels)
        if hypothesis_template.format(labels[0]) == hypothesis_template:
            raise ValueError(f"The hypothesis template {hypothesis_template!r} has no {{}} where the label goes "
                             "(e.g. \"This example is {}.\").")
        entailment, contradiction = nli_classes(classifier)
        pairwise = bool(multi_label) or len(labels) == 1
        if pairwise and contradiction is None:
            raise ValueError(f"Zero-shot classification with multi_label (or one label) weighs entailment against "
                             f"contradiction: {classifier.label_names} names no class \"contradiction\".")
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
            order = np.argsort(-row, kind="stable")
            answers.append({"sequence": text, "labels": [self.labels[i] for i in order],
                            "scores": row[order].tolist()})
        return answers


def nli_classes(classifier):
    """(entailment, contradiction): the class ids of an NLI classifier's, by name. Entailment is the class named
    "entail..." (Hugging Face's rule; a ValueError for a classifier without one); contradiction the class named
    "contradict...", or the other class of a two-class model (entailment / not entailment, as RTE's and QNLI's),
    else None.

    Example:
    >>> from kbert import BertClassifier
    >>> nli_classes(BertClassifier.from_preset("bert_tiny", num_classes=3,
    ...                                        label_names=["entailment", "neutral", "contradiction"]))
    (0, 2)
    """
    names = [str(name).lower() for name in classifier.label_names or ()]
    if classifier.regression or classifier.multi_label or not any(n.startswith("entail") for n in names):
        kind = ("a regressor" if classifier.regression else "a multi-label classifier" if classifier.multi_label
                else f"a classifier of {list(classifier.label_names or range(classifier.num_classes))}")
        raise ValueError(f"Zero-shot classification reads an NLI classifier, with a class named \"entailment\": this "
                         f"is {kind}. Train one on NLI pairs (apps/nli.py) or name its classes (label_names).")
    entailment = next(i for i, n in enumerate(names) if n.startswith("entail"))
    contradiction = [i for i, n in enumerate(names) if n.startswith("contradict")]
    if contradiction:
        return entailment, contradiction[0]
    return entailment, (1 - entailment if len(names) == 2 else None)


def _candidate_labels(candidate_labels):
    """A list of labels: a str is comma-separated labels (as Hugging Face's pipeline reads it)."""
    if isinstance(candidate_labels, str):
        candidate_labels = [label.strip() for label in candidate_labels.split(",") if label.strip()]
    labels = text_list(candidate_labels, "candidate_labels")
    if not labels:
        raise ValueError("Zero-shot classification needs at least one candidate label.")
    blank = [i for i, label in enumerate(labels) if not label.strip()]
    if blank:
        raise ValueError(f"candidate_labels[{blank[0]}] is blank: each label needs words for its hypothesis.")
    return labels
