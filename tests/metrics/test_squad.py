import pytest

from kbert.metrics.squad import exact_match, f1_score, normalize_answer, squad_scores


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
