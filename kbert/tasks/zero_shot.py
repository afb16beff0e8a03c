"""`BertClassifier.zero_shot`: Hugging Face's zero-shot-classification pipeline on a kbert NLI classifier, the same
labels, order and scores.

Each candidate label becomes a hypothesis about the text ("This example is {}." with the label in the braces), and
the classifier reads every (text, hypothesis) pair. The entailment logit of a pair is the label's: a softmax of
them over the labels gives one distribution per text, or, with `multi_label` (or a single label), a softmax over
each pair's contradiction and entailment logits gives each label a probability of its own.
"""

import numpy as np

from kbert.tasks.bert_preprocessor import text_list
from kbert_core.classification import HYPOTHESIS_TEMPLATE, class_probabilities


def zero_shot(classifier, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False,
              batch_size=None, verbose=0):
    """What `BertClassifier.zero_shot` returns (see there)."""
    single = isinstance(texts, str)
    texts = text_list(texts)
    labels = _candidate_labels(candidate_labels)
    if hypothesis_template.format(labels[0]) == hypothesis_template:
        raise ValueError(f"The hypothesis template {hypothesis_template!r} has no {{}} where the label goes "
                         "(e.g. \"This example is {}.\").")
    entailment, contradiction = nli_classes(classifier)
    pairwise = multi_label or len(labels) == 1  # each label against contradiction, not the labels against each other
    if pairwise and contradiction is None:
        raise ValueError(f"Zero-shot classification with multi_label (or one label) weighs entailment against "
                         f"contradiction: {classifier.label_names} names no class \"contradiction\".")
    if not texts:
        return []
    hypotheses = [hypothesis_template.format(label) for label in labels]
    premises = [text for text in texts for _ in labels]
    logits = classifier.logits((premises, hypotheses * len(texts)), batch_size, verbose)
    logits = logits.reshape(len(texts), len(labels), -1).astype("float64")
    if pairwise:
        scores = class_probabilities(logits[..., [contradiction, entailment]])[..., 1]
    else:
        scores = class_probabilities(logits[..., entailment])
    results = []
    for text, row in zip(texts, scores):
        order = np.argsort(-row, kind="stable")
        results.append({"sequence": text, "labels": [labels[i] for i in order], "scores": row[order].tolist()})
    return results[0] if single else results


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
    return labels
