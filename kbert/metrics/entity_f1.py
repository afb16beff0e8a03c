"""Entity-level precision, recall and F1 over BIO / IOB1 tag sequences, as conlleval counts them."""

from kbert_core.entities import get_entities


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

