"""kbert_core.entities: entities with character spans from word tags, checked against spans written by hand."""

import keras
import pytest

from kbert_core import entity_spans

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def test_entity_spans_by_hand():
    text = "Angela Merkel  met Jean-Luc in New York ,Paris"
    words = [[0, 6], [7, 13], [15, 18], [19, 27], [28, 30], [31, 34], [35, 39], [40, 41], [41, 46]]
    tags = ["B-PER", "I-PER", "O", "I-PER", "O", "B-LOC", "I-LOC", "I-ORG", "B-LOC"]
    probabilities = [0.9, 0.7, 1.0, 0.6, 1.0, 0.5, 0.25, 0.8, 0.33333]
    assert entity_spans(text, words, tags, probabilities) == [
        {"type": "PER", "text": "Angela Merkel", "start": 0, "end": 13, "score": 0.8},
        {"type": "PER", "text": "Jean-Luc", "start": 19, "end": 27, "score": 0.6},  # I- after O starts one
        {"type": "LOC", "text": "New York", "start": 31, "end": 39, "score": 0.375},
        {"type": "ORG", "text": ",", "start": 40, "end": 41, "score": 0.8},  # another type's I- too
        {"type": "LOC", "text": "Paris", "start": 41, "end": 46, "score": 0.3333},
    ]


def test_b_after_b_and_no_entities():
    assert [e["text"] for e in entity_spans("a b", [[0, 1], [2, 3]], ["B-X", "B-X"], [1, 1])] == ["a", "b"]
    assert entity_spans("a b", [[0, 1], [2, 3]], ["O", "O"], [1, 1]) == []
    assert entity_spans("", [], [], []) == []
    with pytest.raises(ValueError, match="neither O nor"):
        entity_spans("a", [[0, 1]], ["X"], [1])
