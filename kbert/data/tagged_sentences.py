import dataclasses


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

    def label_names(self):
        """`O`, then `B-X` and `I-X` for every entity type X in the tags, types sorted."""
        types = sorted({tag[2:] for sentence in self.tags for tag in sentence if tag != "O"})
        return ["O", *[f"{prefix}-{kind}" for kind in types for prefix in "BI"]]

    def take(self, indices):
        """The sentences at `indices`, in that order."""
        pick = lambda values: None if values is None else [values[i] for i in indices]  # noqa: E731
        return TaggedSentences(pick(self.words), pick(self.tags), pick(self.lines), self.source)
