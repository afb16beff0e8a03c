"""kbert.data.readers.seeded_split: split sizes, disjointness and seeding, worked from the definition."""

import keras
import numpy as np
import pytest

from kbert.data.readers.seeded_split import seeded_order, seeded_split

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
@pytest.mark.parametrize("count, fraction, valid_size", [
    (10, 0.3, 3),
    (7, 0.5, 4),  # round(3.5) = 4
    (100, 0.01, 1),
    (50, 0.001, 1),  # at least one held out
    (2, 0.5, 1),
])
def test_sizes_cover_every_index_once_sorted(count, fraction, valid_size):
    train, valid = seeded_split(count, fraction, seed=0)
    assert len(valid) == valid_size and len(train) == count - valid_size
    assert sorted(train.tolist() + valid.tolist()) == list(range(count))  # disjoint, and together all of them
    assert train.tolist() == sorted(train.tolist()) and valid.tolist() == sorted(valid.tolist())


@once
def test_the_seed_decides_the_split():
    first = seeded_split(200, 0.1, seed=5)
    again = seeded_split(200, 0.1, seed=5)
    other = seeded_split(200, 0.1, seed=6)
    assert all((a == b).all() for a, b in zip(first, again))
    assert first[1].tolist() != other[1].tolist()
    assert first[1].max() > 100  # drawn from the whole range, not its head
    assert first[1].tolist() != list(range(20))


@once
@pytest.mark.parametrize("count, fraction, message", [
    (10, 0.0, "must lie in"),
    (10, 1.0, "must lie in"),
    (10, -0.1, "must lie in"),
    (3, 0.9, "data.tsv: 3 examples are too few"),  # round(2.7) = 3 leaves no training example
    (1, 0.5, "data.tsv: 1 examples are too few"),
])
def test_impossible_splits_are_refused(count, fraction, message):
    with pytest.raises(ValueError, match=message):
        seeded_split(count, fraction, seed=0, source="data.tsv")


@once
def test_seeded_order_is_a_permutation_cut_to_its_head():
    order = seeded_order(30, seed=2)
    assert sorted(order.tolist()) == list(range(30)) and order.tolist() != list(range(30))
    assert seeded_order(30, seed=2).tolist() == order.tolist()
    assert seeded_order(30, seed=3).tolist() != order.tolist()
    assert seeded_order(30, seed=2, limit=5).tolist() == order[:5].tolist()
    assert len(seeded_order(3, seed=2, limit=10)) == 3
    assert seeded_order(0, seed=2).tolist() == []
