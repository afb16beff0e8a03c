import dataclasses

import numpy as np

from kbert.data.readers.seeded_split import seeded_order, seeded_split


@dataclasses.dataclass
class TaggedSentences:
    """Sentences as lists of words, with one BIO tag per word (NER data).

    Args:
        words: list of lists of str. The words of each sentence.
        tags: list of lists of str or None. BIO (IOB2) tags, one per word.
        lines: list of int. The file line of each sentence's first word, for messages.
        source: str. Where the sentences come from, for messages.

    Example:
    >>> data = TaggedSentences([["Angela", "Merkel"], ["Paris"]], [["B-PER", "I-PER"], ["B-LOC"]])
    >>> len(data), data.label_names()
    (2, ['O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER'])
    >>> data.texts(), data.word_spans()[0].tolist()
    (['Angela Merkel', 'Paris'], [[0, 6], [7, 13]])
    """

    words: list
    tags: list = None
    lines: list = None
    source: str = ""

    def __len__(self):
        return len(self.words)

    def texts(self):
        """Each sentence as one string, its words joined by single spaces."""
        return [" ".join(words) for words in self.words]

    def word_spans(self):
        """Per sentence, the (words, 2) int64 [start, end) char spans of its words in `texts()`."""
        return [joined_word_spans(words) for words in self.words]

    def label_names(self):
        """`O`, then `B-X` and `I-X` for every entity type X in the tags, types sorted."""
        types = sorted({tag[2:] for sentence in self.tags for tag in sentence if tag != "O"})
        return ["O", *[f"{prefix}-{kind}" for kind in types for prefix in "BI"]]

    def take(self, indices):
        """The sentences at `indices`, in that order."""
        pick = lambda values: None if values is None else [values[i] for i in indices]  # noqa: E731
        return TaggedSentences(pick(self.words), pick(self.tags), pick(self.lines), self.source)

    def shuffled(self, seed, limit=None):
        """A seeded random order of the sentences, cut to the first `limit` if given."""
        return self.take(seeded_order(len(self), seed, limit))

    def split(self, fraction, seed):
        """Seeded `(train, validation)` split with `fraction` of the sentences in validation."""
        train, valid = seeded_split(len(self), fraction, seed, self.source)
        return self.take(train), self.take(valid)


def joined_word_spans(words):
    """The (words, 2) int64 [start, end) char spans of `words` in `" ".join(words)`.

    Example:
    >>> joined_word_spans(["Angela", "Merkel"]).tolist()
    [[0, 6], [7, 13]]
    """
    lengths = np.array([len(word) for word in words], "int64")
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]) if len(words) else lengths
    return np.stack([starts, starts + lengths], axis=1)
