"""SQuAD v1.1 exact match and F1, with the official evaluation script's normalisation."""

import collections
import re
import string

_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """Lower-cases, drops punctuation and the articles a / an / the, and collapses whitespace.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction, gold_answers):
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0.

    Example:
    >>> exact_match("the Denver Broncos", ["Denver Broncos", "Broncos"])
    1.0
    """
    return float(max(normalize_answer(prediction) == normalize_answer(gold) for gold in gold_answers))


def f1_score(prediction, gold_answers):
    """Best bag-of-tokens F1 between the normalised prediction and any gold answer.

    Example:
    >>> round(f1_score("Denver Broncos won", ["the Denver Broncos"]), 4)  # P 2/3, R 1
    0.8
    """
    return max(_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())
               for gold in gold_answers)


def squad_scores(predictions, gold):
    """Mean exact match and F1 in percent, as the official v1.1 script reports them.

    Args:
        predictions: dict of question id -> predicted answer text. A question without a
            prediction scores 0 (and is counted in `missing`).
        gold: dict of question id -> list of gold answer texts.

    Example:
    >>> squad_scores({"q1": "Paris", "q2": "in 1990"}, {"q1": ["Paris"], "q2": ["1990", "1991"]})
    {'exact_match': 50.0, 'f1': 83.33333333333333, 'questions': 2, 'missing': 0}
    """
    em = f1 = 0.0
    missing = 0
    for question_id, answers in gold.items():
        if question_id not in predictions:
            missing += 1
            continue
        em += exact_match(predictions[question_id], answers)
        f1 += f1_score(predictions[question_id], answers)
    total = max(len(gold), 1)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total, "questions": len(gold),
            "missing": missing}


def _f1(prediction_tokens, gold_tokens):
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)
