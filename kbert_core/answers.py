"""Answer spans from a question answerer's start and end logits, over the windows of a context."""

import numpy as np

from kbert_core.classification import best_first

# Answers decoded per question and the longest answer in tokens, as BERT's run_squad.py: the defaults of every QA
# decoding (the task, its windows, the apps, the exports and the edge runner).
N_BEST, MAX_ANSWER_LENGTH = 20, 30
# What the apps say of the answer "no answer" (a model that allows it, SQuAD 2.0), the edge runner's too.
NO_ANSWER_NOTE = "no answer: the context does not answer it, says the model"


def window_candidates(start_logits, end_logits, offsets, max_context, n_best=N_BEST,
                      max_answer_length=MAX_ANSWER_LENGTH):
    """The candidate answers of one window: `(score, start char, end char)` triples.

    The `n_best` highest start and the `n_best` highest end logits among the window's context
    tokens are paired (end >= start, at most `max_answer_length` tokens, and a start only
    where this window gives the token its most context); the score is start + end logit.

    Args:
        start_logits, end_logits: float arrays (width,). One window's logits.
        offsets: int array (width, 2). Each context token's char span; -1 elsewhere.
        max_context: bool array (width,). See `kbert_core.windows.max_context`.
        n_best: int. Starts and ends considered.
        max_answer_length: int. Longest answer, in tokens.

    Example:
    >>> offsets = np.array([[-1, -1], [0, 3], [4, 7], [-1, -1]])
    >>> window_candidates(np.array([9, 1, 0, 9.]), np.array([9, 0, 2, 9.]), offsets, np.ones(4, bool), 1)
    [(3.0, 0, 7)]
    """
    positions = np.flatnonzero(offsets[:, 0] >= 0)
    if not len(positions):
        return []
    starts = positions[best_first(start_logits[positions], n_best)]
    ends = positions[best_first(end_logits[positions], n_best)]
    starts = starts[max_context[starts]]
    length = ends[None, :] - starts[:, None] + 1
    ok = (length >= 1) & (length <= max_answer_length)
    return [(float(start_logits[starts[a]] + end_logits[ends[b]]), int(offsets[starts[a], 0]),
             int(offsets[ends[b], 1])) for a, b in zip(*np.nonzero(ok))]


def null_score(start_logits, end_logits):
    """The score of "no answer" in one window: the start + end logit of its first token ([CLS], or RoBERTa's `<s>`),
    where training points questions that have no answer in the window (SQuAD 2.0, as BERT's run_squad.py).

    Example:
    >>> null_score(np.array([2.0, 0.5]), np.array([1.5, 0.0]))
    3.5
    """
    return float(start_logits[0] + end_logits[0])


def says_no_answer(answer):
    """Whether a decoded answer is "no answer" (text "", span (0, 0)), not a span nor "no span fits" (start -1).

    Example:
    >>> says_no_answer({"text": "", "start": 0, "end": 0}), says_no_answer({"text": "", "start": -1, "end": -1})
    (True, False)
    """
    return answer["text"] == "" and answer["start"] == 0 and answer["end"] == 0


def best_answers(candidates, context, n_best=N_BEST, window_nulls=None, no_answer_threshold=0.0):
    """The `n_best` best distinct spans among the candidates of all windows of `context`, and "no answer".

    Returns a list (best first) of dicts: `text` (sliced from `context`), `start`, `end`
    (char span), `score` (the logit sum) and `probability` (softmax of the scores over the
    list). An empty list: no candidate.

    With `window_nulls`, the `null_score` of each window of the question, the list also holds
    "no answer": `{"text": "", "start": 0, "end": 0, "score": null}` (Hugging Face's question
    answering pipeline's empty answer), where the question's `null` is the least of its
    windows' (as BERT's run_squad.py and Hugging Face's SQuAD 2.0 examples take it): first
    when `null` beats the best span's score by more than `no_answer_threshold` (BERT's
    `null_score_diff_threshold`), else after the spans it does not beat by that much; the
    probabilities count it as Hugging Face's do.

    Example:
    >>> [(a["text"], round(a["probability"], 3)) for a in best_answers([(1.0, 0, 3), (3.0, 4, 7), (2.0, 4, 7)], "Ann met Bob")]
    [('met', 0.881), ('Ann', 0.119)]
    >>> [a["text"] for a in best_answers([(1.0, 0, 3), (3.0, 4, 7)], "Ann met Bob", window_nulls=[2.0])]
    ['met', '', 'Ann']
    >>> [a["text"] for a in best_answers([(1.0, 0, 3), (3.0, 4, 7)], "Ann met Bob", window_nulls=[5.0, 4.0])]
    ['', 'met', 'Ann']
    """
    best, seen = [], set()
    for score, start, end in sorted(candidates, key=lambda c: -c[0]):
        if (start, end) not in seen:
            seen.add((start, end))
            best.append({"text": context[start:end], "start": start, "end": end, "score": score})
        if len(best) == n_best:
            break
    if window_nulls is not None:
        null = min(window_nulls)
        place = sum(answer["score"] >= null - no_answer_threshold for answer in best)
        best.insert(place, {"text": "", "start": 0, "end": 0, "score": float(null)})
    if best:
        scores = np.array([b["score"] for b in best])
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        for b, p in zip(best, probabilities):
            b["probability"] = float(p)
    return best
