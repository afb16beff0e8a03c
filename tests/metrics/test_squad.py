import numpy as np
import pytest

from kbert.metrics.squad import exact_match, f1_score, normalize_answer, squad_scores, squad_v2_scores


def test_normalization_as_the_official_script():
    assert normalize_answer("  The Quick, brown fox!  ") == "quick brown fox"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theatre") == "theatre"  # only whole-word articles go
    assert normalize_answer("U.S.A.") == "usa"


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Broncos", ["Denver Broncos", "Broncos"]) == 1.0
    assert exact_match("Denver", ["Denver Broncos"]) == 0.0
    # prediction "denver broncos won" vs gold "denver broncos": P 2/3, R 1 -> F1 0.8
    assert f1_score("Denver Broncos won", ["Denver Broncos"]) == pytest.approx(0.8)
    # max over gold answers; repeated tokens count once per occurrence
    # "x x y" vs "x y z": overlap 2, P 2/3, R 2/3 -> 2/3; vs "y": P 1/3, R 1 -> 1/2
    assert f1_score("x x y", ["x y z", "y"]) == pytest.approx(2 / 3)
    assert f1_score("nothing", ["else"]) == 0.0


def test_corpus_scores_in_percent_and_missing_predictions_score_zero():
    scores = squad_scores({"a": "Paris", "b": "1990 and"}, {"a": ["paris."], "b": ["1990"], "c": ["x"]})
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert scores["missing"] == 1 and scores["questions"] == 3


def test_squad_2_scores_as_the_official_script_defines_them():
    """evaluate-v2.0.py: gold answers that normalise to nothing are dropped, none left is the gold answer ""; where
    either side is "", F1 is 1 if both are, else 0; HasAns / NoAns by whether the question listed answers."""
    gold = {"has": ["Denver Broncos"], "has_none": [], "none_right": [], "none_wrong": [], "only_article": ["The"],
            "empty_pred": ["Paris"], "missing": ["x"]}
    predictions = {"has": "Broncos won", "has_none": "", "none_right": "the", "none_wrong": "Paris",
                   "only_article": "", "empty_pred": ""}
    scores = squad_v2_scores(predictions, gold)
    # has: P 1/2 R 1/2 -> F1 0.5, EM 0; has_none 1/1; none_right ("the" normalises to "") 1/1; none_wrong 0/0;
    # only_article: gold [""] (HasAns: it listed an answer), prediction "" -> 1/1; empty_pred 0/0; missing 0/0.
    assert scores["exact_match"] == pytest.approx(100 * 3 / 7)
    assert scores["f1"] == pytest.approx(100 * 3.5 / 7)
    assert (scores["HasAns_total"], scores["NoAns_total"], scores["missing"]) == (4, 3, 1)
    assert scores["HasAns_f1"] == pytest.approx(100 * 1.5 / 4) and scores["HasAns_exact"] == pytest.approx(25.0)
    assert scores["NoAns_exact"] == pytest.approx(100 * 2 / 3) and scores["NoAns_f1"] == pytest.approx(100 * 2 / 3)


def test_the_best_no_answer_threshold_is_the_best_of_every_threshold_tried():
    """Against trying every threshold between the margins (and +-inf): the same best mean, reached at the threshold
    returned; equal margins answer "" together."""
    from kbert.metrics.squad import best_no_answer_threshold

    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.integers(1, 9))
        margins = list(np.round(rng.normal(size=n) * 2) / 2)  # halves: ties happen
        span_scores, null_scores = list(rng.random(n).round(2)), list(rng.integers(0, 2, n).astype(float))

        def mean_at(threshold):
            return np.mean([null if m > threshold else span for m, span, null in zip(margins, span_scores, null_scores)])

        tried = [np.inf, -np.inf, *margins, *(m - 1e-9 for m in margins)]
        threshold, best = best_no_answer_threshold(margins, span_scores, null_scores)
        assert best == pytest.approx(max(mean_at(t) for t in tried))
        assert mean_at(threshold) == pytest.approx(best)
