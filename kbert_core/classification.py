"""A classifier's answers from its logits in numpy: the probabilities, and the rule for an input with nothing
to classify; the Keras task (`kbert.BertClassifier.answers`) and the edge runner answer by them."""

import numpy as np

from kbert_core.wordpiece import normalize_char

EMPTY_TEXT = "empty text: nothing to classify"


def is_blank(text, pair=None, lowercase=True):
    """Whether a classifier's input has nothing to classify: a text, or pair, with no tokens (empty,
    blank, or only characters BERT's normalizer drops: `normalize_char`), as the exported
    classifiers' `empty` output says.

    Example:
    >>> is_blank(" "), is_blank("a", ""), is_blank("a", "b"), is_blank("\\u200b\\u3000")
    (True, True, False, True)
    """
    def no_tokens(part):
        if isinstance(part, bytes):  # text.tflite's input
            try:
                part = part.decode()
            except UnicodeDecodeError:  # the graph reads each bad byte as an unknown character
                return False
        return all(not normalize_char(char, lowercase).strip() for char in part)

    return no_tokens(text) or (pair is not None and no_tokens(pair))


def best_first(scores, top=None):
    """The indices of `scores` from the highest down (ties in their order), the first `top` of them (None: all): how
    kbert ranks answers, labels, candidates and documents.

    Example:
    >>> best_first([0.2, 0.9, 0.2, 0.5], top=3).tolist()
    [1, 3, 0]
    """
    return np.argsort(-np.asarray(scores), kind="stable")[:top]


def class_probabilities(logits, multi_label=False):
    """A classifier's probabilities from its logits (numpy): a softmax over the classes, or a sigmoid per class.

    Example:
    >>> class_probabilities(np.array([[0.0, 0.0]])).tolist(), class_probabilities(np.array([[0.0]]), True).tolist()
    ([[0.5, 0.5]], [[0.5]])
    """
    if multi_label:
        return 1 / (1 + np.exp(-logits))
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)
