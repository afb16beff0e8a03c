import dataclasses

import numpy as np

from kbert.data.readers.seeded_split import seeded_order, seeded_split


@dataclasses.dataclass
class SentenceExamples:
    """Texts (or text pairs) with their labels, as read from a TSV file.

    Args:
        texts: list of str. The first (or only) sentence of each example.
        pairs: list of str or None. The second sentence (the NLI hypothesis), if any.
        labels: numpy array or None. int32 class ids, or float32 scores for regression.
        label_names: list of str or None. The class of each id (None for regression).
        source: str. Where the examples come from, for messages.

    Example:
    >>> data = SentenceExamples(["good", "bad", "fine"], None, np.array([1, 0, 1]), ["neg", "pos"])
    >>> train, valid = data.split(1 / 3, seed=0)
    >>> len(train), len(valid)
    (2, 1)
    """

    texts: list
    pairs: list = None
    labels: np.ndarray = None
    label_names: list = None
    source: str = ""

    def __len__(self):
        return len(self.texts)

    def take(self, indices):
        """The examples at `indices`, in that order."""
        indices = np.asarray(indices, "int64")
        pairs = None if self.pairs is None else [self.pairs[i] for i in indices]
        labels = None if self.labels is None else self.labels[indices]
        return SentenceExamples([self.texts[i] for i in indices], pairs, labels, self.label_names, self.source)

    def shuffled(self, seed, limit=None):
        """A seeded random order of the examples, cut to the first `limit` if given."""
        return self.take(seeded_order(len(self), seed, limit))

    def split(self, fraction, seed):
        """Seeded `(train, validation)` split with `fraction` of the examples in validation."""
        train, valid = seeded_split(len(self), fraction, seed, self.source)
        return self.take(train), self.take(valid)
