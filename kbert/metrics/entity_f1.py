"""Entity-level precision, recall and F1 over BIO / IOB1 tag sequences, as conlleval counts them."""


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


def entity_scores(gold, predicted):
    """Micro and per-type precision, recall and F1 of predicted entities against gold ones.

    An entity counts as correct only when its type and both boundaries match (conlleval,
    and seqeval's default mode). Scores are fractions in [0, 1]; a score with a zero
    denominator is 0. Sentences are compared position by position.

    Args:
        gold: list of lists of str. The gold tags of each sentence.
        predicted: list of lists of str. The predicted tags, shaped like `gold`.

    Returns: dict with `precision`, `recall`, `f1`, `gold_entities`, `predicted_entities`,
    `correct_entities`, and `per_type`: {type: the same keys}.

    Example:
    >>> scores = entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> round(scores["f1"], 4), scores["per_type"]["PER"]["f1"]
    (0.5, 1.0)
    """
    if len(gold) != len(predicted):
        raise ValueError(f"Got {len(gold)} gold sentences but {len(predicted)} predicted ones.")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"Sentence {i}: {len(g)} gold tags but {len(p)} predicted ones.")
    gold_set, predicted_set = set(get_entities(list(gold))), set(get_entities(list(predicted)))
    types = sorted({kind for kind, _, _ in gold_set | predicted_set})
    per_type = {kind: _scores({e for e in gold_set if e[0] == kind},
                              {e for e in predicted_set if e[0] == kind}) for kind in types}
    return {**_scores(gold_set, predicted_set), "per_type": per_type}


def format_entity_scores(scores, title):
    """The scores as printable lines, conlleval-like: micro first, then one line per type."""
    lines = [f"{title}:", f"  {'':8} {'precision':>9} {'recall':>9} {'f1':>9} {'support':>8}"]
    rows = [("micro", scores), *scores["per_type"].items()]
    for name, s in rows:
        lines.append(f"  {name:8} {100 * s['precision']:9.2f} {100 * s['recall']:9.2f} "
                     f"{100 * s['f1']:9.2f} {s['gold_entities']:8d}")
    return "\n".join(lines)


def _scores(gold, predicted):
    correct = len(gold & predicted)
    precision = correct / len(predicted) if predicted else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "gold_entities": len(gold),
            "predicted_entities": len(predicted), "correct_entities": correct}


def _split(tag):
    """(prefix, type) of a tag: ("O", None), ("B", "PER") or ("I", "PER")."""
    if tag == "O":
        return "O", None
    prefix, _, tag_type = tag.partition("-")
    if prefix not in ("B", "I") or not tag_type:
        raise ValueError(f"Tag {tag!r} is neither O nor B-TYPE / I-TYPE.")
    return prefix, tag_type
