"""Seeded index orders for validation splits and training subsets, shared by the task data classes."""

import numpy as np


def seeded_split(count, fraction, seed, source=""):
    """Seeded `(train, validation)` index arrays, each sorted, with `fraction` of `count` in validation.

    Args:
        count: int. How many examples there are.
        fraction: float in (0, 1). Share held out; at least one example.
        seed: int. Seeds the permutation.
        source: str. Where the examples come from, for messages.

    Example:
    >>> train, valid = seeded_split(5, 0.4, seed=0)
    >>> len(train), len(valid), sorted([*train.tolist(), *valid.tolist()])
    (3, 2, [0, 1, 2, 3, 4])
    """
    if not 0 < fraction < 1:
        raise ValueError(f"The validation fraction must lie in (0, 1); got {fraction}.")
    order = np.random.default_rng(seed).permutation(count)
    size = max(1, round(fraction * count))
    if size >= count:
        raise ValueError(f"{source}: {count} examples are too few to carve a validation split.")
    return np.sort(order[size:]), np.sort(order[:size])


def seeded_order(count, seed, limit=None):
    """A seeded random order of `range(count)`, cut to its first `limit` indices if given.

    Example:
    >>> sorted(seeded_order(4, seed=0).tolist()), len(seeded_order(4, seed=0, limit=2))
    ([0, 1, 2, 3], 2)
    """
    return np.random.default_rng(seed).permutation(count)[:limit]


def training_and_validation(train, valid, fraction, seed, limit=None, validation_limit=None):
    """`(train, valid)` as a recipe uses them: without `valid`, a seeded `fraction` of `train` held out; then
    each cut to a seeded subset of `limit` (`validation_limit`) examples if given. `train` and `valid` are
    examples with `split(fraction, seed)` and `shuffled(seed, limit)` (`SentenceExamples`, `TaggedSentences`).

    Example:
    >>> from kbert.data.readers.sentence_examples import SentenceExamples
    >>> examples = SentenceExamples([f"text {i}" for i in range(10)])
    >>> train, valid = training_and_validation(examples, None, 0.2, seed=0, limit=5)
    >>> len(train), len(valid)
    (5, 2)
    """
    if valid is None:
        train, valid = train.split(fraction, seed)
    if limit:
        train = train.shuffled(seed, limit)
    if validation_limit:
        valid = valid.shuffled(seed, validation_limit)
    return train, valid
