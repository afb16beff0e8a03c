"""SQuAD v1.1 and v2.0 exact match and F1, with the official evaluation scripts' normalisation."""

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


def squad_v2_scores(predictions, gold):
    """Exact match and F1 in percent as the official SQuAD 2.0 script reports them, where a question may have no
    answer.

    A question without gold answers (or only answers that normalise to nothing) has the gold answer "": the
    prediction "" scores 1, any other 0; elsewhere a prediction "" scores 0. Also reports the scores over the
    questions with gold answers (`HasAns_...`) and those without (`NoAns_...`), under the script's names.

    Args:
        predictions: dict of question id -> predicted answer text ("": no answer).
        gold: dict of question id -> list of gold answer texts (empty: unanswerable).

    Example:
    >>> scores = squad_v2_scores({"q1": "Paris", "q2": "", "q3": "Rome"}, {"q1": ["Paris"], "q2": [], "q3": []})
    >>> scores["exact_match"], scores["HasAns_f1"], scores["NoAns_exact"], scores["NoAns_total"]
    (66.66666666666667, 100.0, 50.0, 2)
    """
    sums = {kind: [0.0, 0.0, 0] for kind in ("HasAns", "NoAns")}
    missing = 0
    for question_id, answers in gold.items():
        kind = sums["HasAns" if answers else "NoAns"]  # as the script: by the answers given, before normalising
        kind[2] += 1
        if question_id not in predictions:
            missing += 1
            continue
        exact, f1 = squad_v2_question_scores(predictions[question_id], answers)
        kind[0] += exact
        kind[1] += f1
    total = max(len(gold), 1)
    scores = {"exact_match": 100.0 * (sums["HasAns"][0] + sums["NoAns"][0]) / total,
              "f1": 100.0 * (sums["HasAns"][1] + sums["NoAns"][1]) / total, "questions": len(gold), "missing": missing}
    for kind, (em, f1, count) in sums.items():
        if count:
            scores.update({f"{kind}_exact": 100.0 * em / count, f"{kind}_f1": 100.0 * f1 / count})
        scores[f"{kind}_total"] = count
    return scores


def best_no_answer_threshold(margins, span_scores, null_scores):
    """`(threshold, best mean score)`: the no-answer threshold that maximises a SQuAD 2.0 score over the questions,
    each answering "" where its margin (null score - best span score, BERT's scale) is above the threshold.

    The official 2.0 script's `best_f1_thresh` search, on the margins: from the threshold that answers no question
    "" downwards, one question at a time. The threshold returned lies halfway between the last margin answered ""
    and the next (+inf: never "", when that scores best).

    Args:
        margins: floats. Per question, null score - best span score.
        span_scores, null_scores: floats. Per question, the score (F1 or exact, 0 to 1) of its best span and of "".

    Example:
    >>> best_no_answer_threshold([2.0, -1.0, 0.5], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0])  # answer "" for the 1st and 3rd
    (-0.25, 1.0)
    """
    order = sorted(range(len(margins)), key=lambda i: -margins[i])
    total = best = float(sum(span_scores))
    threshold = float("inf")
    for k, i in enumerate(order):
        total += null_scores[i] - span_scores[i]
        following = margins[order[k + 1]] if k + 1 < len(order) else margins[i] - 2.0
        if total > best and following < margins[i]:  # equal margins go "" together
            best, threshold = total, (margins[i] + following) / 2
    return threshold, best / max(len(margins), 1)


def squad_v2_question_scores(prediction, answers):
    """(exact, F1) of one prediction against a question's gold answers by the official 2.0 rules (see
    `squad_v2_scores`).

    Example:
    >>> squad_v2_question_scores("", []), squad_v2_question_scores("Paris", ["the Paris"])
    ((1.0, 1.0), (1.0, 1.0))
    """
    answers = [answer for answer in answers if normalize_answer(answer)] or [""]
    prediction = normalize_answer(prediction)
    return (max(float(prediction == normalize_answer(answer)) for answer in answers),
            max(_f1_v2(prediction.split(), normalize_answer(answer).split()) for answer in answers))


def _f1_v2(prediction_tokens, gold_tokens):
    """SQuAD 2.0's F1 of one answer: where either side is no answer, 1 if both are, else 0."""
    if not prediction_tokens or not gold_tokens:
        return float(prediction_tokens == gold_tokens)
    return _f1(prediction_tokens, gold_tokens)


def _f1(prediction_tokens, gold_tokens):
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)
