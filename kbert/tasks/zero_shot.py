"""`BertClassifier.zero_shot`: Hugging Face's zero-shot-classification pipeline on a kbert NLI classifier, the same
labels, order and scores; the question and its scoring are `kbert_core.zero_shot`'s, which the server and the edge
runner share."""

from kbert.tasks.bert_preprocessor import text_list
from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE, ZeroShotQuestion


def zero_shot(classifier, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False,
              batch_size=None, verbose=0):
    """What `BertClassifier.zero_shot` returns (see there)."""
    question = zero_shot_question(classifier, texts, candidate_labels, hypothesis_template, multi_label)
    answers = question.answers(classifier.logits(question.pairs, batch_size, verbose))
    return answers[0] if isinstance(texts, str) else answers


def zero_shot_question(classifier, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE,
                       multi_label=False):
    """The `ZeroShotQuestion` to `classifier` (a `BertClassifier` trained on NLI), checked before it runs: a
    ValueError for a regressor, a multi-label classifier or classes without "entailment", and what
    `ZeroShotQuestion.of` refuses; a TypeError names a text that is not one.

    Example:
    >>> from kbert import BertClassifier
    >>> zero_shot_question(BertClassifier.from_preset("bert_tiny", num_classes=1), ["a film"], ["sports"])
    Traceback (most recent call last):
    ...
    ValueError: Zero-shot classification reads an NLI classifier, with a class named "entailment": this is a regressor.
    """
    if classifier.regression or classifier.multi_label:
        kind = "a regressor" if classifier.regression else "a multi-label classifier"
        raise ValueError(f"Zero-shot classification reads an NLI classifier, with a class named \"entailment\": this "
                         f"is {kind}.")
    return ZeroShotQuestion.of(classifier.label_names or list(range(classifier.num_classes)), text_list(texts),
                               candidate_labels, hypothesis_template, multi_label)
