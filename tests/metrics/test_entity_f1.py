import numpy as np
import pytest

from kbert.metrics.entity_f1 import entity_scores, format_entity_scores, get_entities


def test_entities_bio_iob1_and_sloppy_starts():
    assert get_entities(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 1), ("LOC", 3, 3)]
    # IOB1: I- opens an entity after O; B- only splits two adjacent entities of one type
    assert get_entities(["I-ORG", "I-ORG", "B-ORG", "O", "I-LOC"]) == [("ORG", 0, 1), ("ORG", 2, 2), ("LOC", 4, 4)]
    # a type change inside a run starts a new entity (conlleval)
    assert get_entities(["B-PER", "I-LOC", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 2)]


def test_entities_do_not_cross_sentences():
    assert get_entities([["B-PER", "I-PER"], ["I-PER"]]) == [("PER", 0, 1), ("PER", 3, 3)]


def test_scores_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG", "O", "B-MISC"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG", "O"], ["B-ORG", "O", "O", "B-MISC"]]
    # gold: PER(0-1) LOC(3) ORG(0-1) MISC(3); predicted: PER(0-1) ORG(3) ORG(0) MISC(3)
    # correct: PER, MISC -> P 2/4, R 2/4
    scores = entity_scores(gold, predicted)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.5, 0.5, 0.5)
    assert scores["per_type"]["PER"]["f1"] == 1.0
    assert scores["per_type"]["LOC"] == pytest.approx(
        {"precision": 0.0, "recall": 0.0, "f1": 0.0, "gold_entities": 1, "predicted_entities": 0,
         "correct_entities": 0})
    assert scores["per_type"]["ORG"]["precision"] == 0.0 and scores["per_type"]["ORG"]["predicted_entities"] == 2
    assert "micro" in format_entity_scores(scores, "t")


def test_partial_boundaries_count_as_wrong():
    scores = entity_scores([["B-PER", "I-PER", "I-PER"]], [["B-PER", "I-PER", "O"]])
    assert scores["f1"] == 0.0 and scores["gold_entities"] == 1


def test_errors():
    with pytest.raises(ValueError, match="Sentence 0: 2 gold tags but 1"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="'E-PER' is neither"):
        get_entities(["E-PER"])


def random_tags(rng, sentences):
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"]
    return [list(rng.choice(tags, size=rng.integers(1, 12))) for _ in range(sentences)]


def test_matches_seqeval():
    seqeval = pytest.importorskip("seqeval.metrics", reason="seqeval is an optional test reference")
    rng = np.random.default_rng(0)
    gold = random_tags(rng, 200)
    predicted = [[t if rng.random() < 0.7 else str(rng.choice(["O", "B-PER", "I-LOC"])) for t in s] for s in gold]
    scores = entity_scores(gold, predicted)
    assert scores["f1"] == pytest.approx(seqeval.f1_score(gold, predicted))
    assert scores["precision"] == pytest.approx(seqeval.precision_score(gold, predicted))
    assert scores["recall"] == pytest.approx(seqeval.recall_score(gold, predicted))
    report = seqeval.classification_report(gold, predicted, output_dict=True)
    for kind, s in scores["per_type"].items():
        assert s["f1"] == pytest.approx(report[kind]["f1-score"])
