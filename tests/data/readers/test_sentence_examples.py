"""kbert.data.readers.sentence_examples: taking, shuffling and splitting keep texts, pairs and labels together."""

import keras
import numpy as np
import pytest

from kbert.data import SentenceExamples

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def numbered(count):
    """Example i: text "t{i}", pair "p{i}", label i; so any mix-up shows."""
    return SentenceExamples([f"t{i}" for i in range(count)], [f"p{i}" for i in range(count)],
                            np.arange(count, dtype="int32"), ["a", "b"], "data.tsv")


@once
def test_take_keeps_rows_together_in_the_given_order():
    taken = numbered(6).take([4, 1, 1])
    assert (taken.texts, taken.pairs, taken.labels.tolist()) == (["t4", "t1", "t1"], ["p4", "p1", "p1"], [4, 1, 1])
    assert (taken.label_names, taken.source, len(taken)) == (["a", "b"], "data.tsv", 3)
    bare = SentenceExamples(["x", "y", "z"]).take([2, 0])
    assert (bare.texts, bare.pairs, bare.labels) == (["z", "x"], None, None)
    assert len(SentenceExamples(["x"]).take([])) == 0


@once
def test_shuffled_is_seeded_and_cut_to_limit():
    data = numbered(20)
    shuffled = data.shuffled(seed=1)
    assert sorted(shuffled.texts, key=lambda t: int(t[1:])) == data.texts and shuffled.texts != data.texts
    assert [f"p{label}" for label in shuffled.labels] == shuffled.pairs == [f"p{t[1:]}" for t in shuffled.texts]
    assert data.shuffled(seed=1).texts == shuffled.texts and data.shuffled(seed=2).texts != shuffled.texts
    assert data.shuffled(seed=1, limit=5).texts == shuffled.texts[:5]


@once
def test_split_keeps_pairs_and_refuses_too_few():
    train, valid = numbered(10).split(0.2, seed=0)
    assert len(train) == 8 and len(valid) == 2
    for part in (train, valid):
        assert part.pairs == [f"p{t[1:]}" for t in part.texts]
        assert part.labels.tolist() == [int(t[1:]) for t in part.texts]
    with pytest.raises(ValueError, match="data.tsv: 2 examples are too few"):
        numbered(2).split(0.9, seed=0)


def test_seeded_split_is_disjoint_and_reproducible():
    data = SentenceExamples([str(i) for i in range(100)], labels=np.arange(100) % 2)
    train, valid = data.split(0.1, seed=3)
    again_train, again_valid = data.split(0.1, seed=3)
    assert len(valid) == 10 and valid.texts == again_valid.texts and train.texts == again_train.texts
    assert sorted(train.texts + valid.texts, key=int) == data.texts
    assert valid.texts != data.split(0.1, seed=4)[1].texts
    assert [int(t) % 2 for t in train.texts] == train.labels.tolist()
