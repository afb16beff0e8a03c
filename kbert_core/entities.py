"""Entities from BIO / IOB1 tags, as conlleval (and seqeval's default mode) reads them."""


def get_entities(tags):
    """The entities of a tag sequence as `(type, first, last)` word indices, conlleval's way.

    An entity starts at `B-X`, and also at an `I-X` that follows `O` or another type (so IOB1
    and sloppy BIO read as conlleval reads them); it runs over the following `I-X`. A list of
    lists is read as sentences: entities never cross from one into the next, and indices
    count words of all sentences in a row.

    Args:
        tags: list of str (`O`, `B-X`, `I-X`), or a list of such lists.

    Example:
    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4), ('ORG', 5, 5)]
    """
    if tags and isinstance(tags[0], (list, tuple)):
        tags = [tag for sentence in tags for tag in [*sentence, "O"]]
    entities, start, kind = [], None, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, tag_type = _split(tag)
        starts = prefix == "B" or (prefix == "I" and tag_type != kind)
        if start is not None and (prefix == "O" or starts):
            entities.append((kind, start, i - 1))
            start, kind = None, None
        if starts:
            start, kind = i, tag_type
    return entities


def entity_spans(text, word_spans, tags, probabilities):
    """The entities of one tagged text: type, text, [start, end) char span, mean word probability.

    Args:
        text: str.
        word_spans: (words, 2) ints, the char span of each word in `text`.
        tags: list of str, one per word.
        probabilities: list of float, one per word.

    Example:
    >>> entity_spans("Ann met Bob", [[0, 3], [4, 7], [8, 11]], ["B-PER", "O", "B-PER"], [0.9, 1.0, 0.7])
    [{'type': 'PER', 'text': 'Ann', 'start': 0, 'end': 3, 'score': 0.9}, {'type': 'PER', 'text': 'Bob', 'start': 8, 'end': 11, 'score': 0.7}]
    """
    entities = []
    for kind, first, last in get_entities(tags):
        start, end = int(word_spans[first][0]), int(word_spans[last][1])
        score = sum(probabilities[first : last + 1]) / (last + 1 - first)
        entities.append({"type": kind, "text": text[start:end], "start": start, "end": end,
                         "score": round(float(score), 4)})
    return entities


def _split(tag):
    """(prefix, type) of a tag: ("O", None), ("B", "PER") or ("I", "PER")."""
    if tag == "O":
        return "O", None
    prefix, _, tag_type = tag.partition("-")
    if prefix not in ("B", "I") or not tag_type:
        raise ValueError(f"Tag {tag!r} is neither O nor B-TYPE / I-TYPE.")
    return prefix, tag_type
