"""kbert_core.answers: span decoding over windows against a brute-force reference on tiny logits."""

import itertools
import math

import keras
import numpy as np
import pytest

from kbert_core import best_answers, pack_question_windows, question_windows, says_no_answer, window_candidates

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def brute_force(start_logits, end_logits, question_length, windows, spans, context, n_best, max_answer_length):
    """Every (start, end) token pair of every window, kept by the definitions read literally."""
    first = question_length + 2  # [CLS] question [SEP]

    def context_of(token, begin, end):  # BERT's _check_is_max_context score
        return min(token - begin, end - 1 - token) + 0.01 * (end - begin) if begin <= token < end else -math.inf

    def rank(logits, position, positions):  # how many context positions come first (ties: earlier first)
        return sum(logits[p] > logits[position] or (logits[p] == logits[position] and p < position)
                   for p in positions)

    best = {}
    for w, (begin, end) in enumerate(windows):
        positions = range(first, first + end - begin)
        for s, e in itertools.product(positions, positions):
            token = begin + s - first
            home = max(range(len(windows)), key=lambda v: (context_of(token, *windows[v]), -v))
            if (home == w and rank(start_logits[w], s, positions) < n_best
                    and rank(end_logits[w], e, positions) < n_best and 1 <= e - s + 1 <= max_answer_length):
                span = (spans[token][0], spans[begin + e - first][1])
                score = float(start_logits[w][s] + end_logits[w][e])
                best[span] = max(best.get(span, -math.inf), score)
    ranked = sorted(best.items(), key=lambda item: -item[1])[:n_best]
    total = sum(math.exp(score - ranked[0][1]) for _, score in ranked)
    return [{"text": context[a:b], "start": a, "end": b, "score": score,
             "probability": math.exp(score - ranked[0][1]) / total} for (a, b), score in ranked]


@pytest.mark.parametrize("n_best, max_answer_length", [(1, 30), (3, 2), (20, 4), (5, 1)])
def test_decoding_matches_brute_force(n_best, max_answer_length):
    context = "ab cd ef gh ij kl mn op qr st uv"
    spans = [(i, i + 2) for i in range(0, len(context), 3)]  # 11 tokens
    question = [7, 8]
    windows = question_windows(len(question), len(spans), max_length=10, doc_stride=2)
    assert len(windows) == 4
    packed = pack_question_windows([(question, list(range(20, 31)), np.array(spans), windows)], 2, 3, 0)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        start_logits, end_logits = rng.normal(size=(2, len(windows), packed["token_ids"].shape[1]))
        if seed == 4:  # ties among the logits
            start_logits, end_logits = np.round(start_logits), np.round(end_logits)
        candidates = [c for r in range(len(windows)) for c in window_candidates(
            start_logits[r], end_logits[r], packed["offsets"][r], packed["max_context"][r], n_best, max_answer_length)]
        got = best_answers(candidates, context, n_best)
        expected = brute_force(start_logits, end_logits, len(question), windows, spans, context, n_best,
                               max_answer_length)
        if seed == 4:  # spans of equal score may come in either order
            assert sorted(a["score"] for a in got) == sorted(a["score"] for a in expected)
            assert {(a["start"], a["end"]) for a in got if a["score"] > got[-1]["score"]} == {
                (a["start"], a["end"]) for a in expected if a["score"] > expected[-1]["score"]}
            continue
        assert [(a["text"], a["start"], a["end"]) for a in got] == [(a["text"], a["start"], a["end"]) for a in expected]
        np.testing.assert_allclose([a["score"] for a in got], [a["score"] for a in expected], rtol=1e-12)
        np.testing.assert_allclose([a["probability"] for a in got], [a["probability"] for a in expected], rtol=1e-9)


def test_no_context_no_answer():
    packed = pack_question_windows([([7], [], np.zeros((0, 2)), [(0, 0)])], 2, 3, 0)
    assert window_candidates(np.ones(3), np.ones(3), packed["offsets"][0], packed["max_context"][0]) == []
    assert best_answers([], "") == []


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 0.5])
def test_no_answer_joins_the_list_first_only_when_it_beats_the_best_span_by_more_than_the_threshold(threshold):
    """As Hugging Face's SQuAD 2.0 post-processing: the spans as without it, "no answer" among them (first where BERT's
    run_squad.py answers "": null - best span > threshold), and the softmax taken over the spans and the null."""
    context = "ab cd ef gh ij kl"
    rng = np.random.default_rng(int(threshold * 10) + 10)
    for trial in range(20):
        scores = np.round(rng.normal(size=6) * 4) / 4  # quarters: sums and differences are exact
        candidates = [(float(s), 3 * a, 3 * a + 2) for s, a in zip(scores, rng.integers(0, 6, size=6))]
        null = float(np.round(rng.normal() * 4) / 4) if trial else max(scores) + threshold  # a tie: the span wins
        spans = best_answers(candidates, context, 4)
        windows = rng.permutation([null, null + 1.0, null + 0.25])  # the question's null: the least of its windows'
        got = best_answers(candidates, context, 4, window_nulls=windows, no_answer_threshold=threshold)
        assert [(a["text"], a["score"]) for a in got if a["text"]] == [(a["text"], a["score"]) for a in spans]
        nulls = [i for i, a in enumerate(got) if says_no_answer(a)]
        assert len(nulls) == 1 and (got[nulls[0]]["start"], got[nulls[0]]["end"], got[nulls[0]]["score"]) == (0, 0, null)
        assert (nulls[0] == 0) == (null - spans[0]["score"] > threshold)
        scores = np.array([a["score"] for a in got])
        np.testing.assert_allclose([a["probability"] for a in got], np.exp(scores) / np.exp(scores).sum(), rtol=1e-9)
    alone = {"text": "", "start": 0, "end": 0, "score": 1.5, "probability": 1.0}
    assert best_answers([], "", window_nulls=[1.5]) == [alone]
