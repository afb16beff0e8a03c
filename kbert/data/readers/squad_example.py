import dataclasses


@dataclasses.dataclass
class SquadExample:
    """One extractive question: its context, and the gold answers when known.

    Args:
        id: str. The question id.
        question: str.
        context: str. The paragraph holding the answer.
        answers: list of str. Gold answer texts (SQuAD dev has several; train one).
        answer_start: int or None. Char index of the first answer in `context`, as located
            by the reader (None: not found, or no answers).
        title: str. The article title.

    Example:
    >>> example = SquadExample("q1", "Where?", "In Paris.", ["Paris"], 3)
    >>> example.answer_span
    (3, 8)
    """

    id: str
    question: str
    context: str
    answers: list = dataclasses.field(default_factory=list)
    answer_start: int = None
    title: str = ""

    @property
    def answer_span(self):
        """[start, end) char span of the first answer in `context`, or None."""
        if self.answer_start is None or not self.answers:
            return None
        return self.answer_start, self.answer_start + len(self.answers[0])
