"""Packing tokenized texts into model inputs in pure Python: special tokens, truncation and padding.

`WordPiece`, `SentencePiece` and `ByteLevelBPE` tokenize; `pack` lays their rows out with a model's
special tokens (`Layout`), cuts pairs as Hugging Face does (`kept_lengths`) and pads, as int32 arrays.
"""

import dataclasses

import numpy as np

TRUNCATIONS = ("longest_first", "only_second")


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a model puts its special tokens around one or two segments, and how it pads.

    Args:
        start: tuple of int. The ids before the first segment.
        middle: tuple of int. The ids between the first and the second segment.
        end: tuple of int. The ids after the last segment.
        pad: int. The id of padding.
        count_segments: bool. Segment id 1 on the second segment and the ids after it (BERT's
            token types); False keeps every segment id 0 (RoBERTa has none).

    Example:
    >>> Layout.bert(2, 3, 0).specials(2), Layout.roberta(0, 2, 1).specials(2)
    (3, 4)
    """

    start: tuple
    middle: tuple
    end: tuple
    pad: int
    count_segments: bool = True

    @classmethod
    def bert(cls, cls_id, sep_id, pad_id):
        """BERT's and ALBERT's `[CLS] A [SEP] (B [SEP])`, segment id 1 on B and its [SEP]."""
        return cls((cls_id,), (sep_id,), (sep_id,), pad_id)

    @classmethod
    def roberta(cls, cls_id, sep_id, pad_id):
        """RoBERTa's `<s> A </s>` or `<s> A </s></s> B </s>`, all segment ids 0."""
        return cls((cls_id,), (sep_id, sep_id), (sep_id,), pad_id, count_segments=False)

    def specials(self, segments):
        """The special tokens of a row of `segments` (1 or 2) segments."""
        return len(self.start) + (segments - 1) * len(self.middle) + len(self.end)


def pack(rows, layout, max_length, pairs=None, truncation="longest_first", max_first_length=None):
    """Packs tokenized texts (and their pairs) with `layout`'s special tokens, padded to `max_length`.

    Args:
        rows: list of `(ids, spans, word_ids)`, one per text, as the tokenizers' `tokenize` gives.
        layout: `Layout`. The model's special tokens and padding.
        max_length: int. Tokens per row, special tokens included.
        pairs: None or a list like `rows`: the second segments, one per text.
        truncation: str. "longest_first" or "only_second" (see `kept_lengths`).
        max_first_length: None or int. First segments are cut to this many tokens first.

    Returns:
        dict of int32 arrays `token_ids`, `segment_ids`, `padding_mask`, `word_ids` (-1 on special
        tokens and padding), `offsets` (rows, max_length, 2) and bool `truncated` (rows,): whether
        a row's tokens, special ones included, exceed `max_length`.

    Example:
    >>> out = pack([([7, 8], [(0, 1), (2, 3)], [0, 1])], Layout.bert(2, 3, 0), 6,
    ...            pairs=[([9], [(0, 1)], [0])])
    >>> out["token_ids"].tolist(), out["segment_ids"].tolist(), out["word_ids"].tolist()
    ([[2, 7, 8, 3, 9, 3]], [[0, 0, 0, 0, 1, 1]], [[-1, 0, 1, -1, 0, -1]])
    """
    if pairs is not None and len(pairs) != len(rows):
        raise ValueError(f"Got {len(rows)} texts but {len(pairs)} pairs.")
    specials = layout.specials(1 if pairs is None else 2)
    if max_length < specials:
        raise ValueError(f"max_length={max_length} leaves no room for the {specials} special tokens.")
    out = {key: np.zeros((len(rows), max_length), "int32")
           for key in ("token_ids", "segment_ids", "padding_mask", "word_ids")}
    out["offsets"] = np.zeros((len(rows), max_length, 2), "int32")
    out["token_ids"][:] = layout.pad
    out["word_ids"][:] = -1
    out["truncated"] = np.zeros(len(rows), bool)
    for r, segments in enumerate(zip(rows) if pairs is None else zip(rows, pairs)):
        lengths = [len(ids) for ids, _, _ in segments]
        kept = kept_lengths(lengths, max_length - specials, truncation, max_first_length)
        out["truncated"][r] = sum(lengths) + specials > max_length
        position, starts = 0, []
        for s, ((ids, spans, word_ids), n) in enumerate(zip(segments, kept)):
            before = layout.middle if s else layout.start
            out["token_ids"][r, position : position + len(before)] = before
            position += len(before)
            starts.append(position)
            stop = position + n
            out["token_ids"][r, position:stop] = ids[:n]
            out["offsets"][r, position:stop] = spans[:n] if n else np.zeros((0, 2))
            out["word_ids"][r, position:stop] = word_ids[:n]
            position = stop
        out["token_ids"][r, position : position + len(layout.end)] = layout.end
        position += len(layout.end)
        if layout.count_segments:
            for s, start in enumerate(starts):
                out["segment_ids"][r, start:position] = s
        out["padding_mask"][r, :position] = 1
    return out


def kept_lengths(lengths, budget, truncation="longest_first", max_first_length=None):
    """Tokens kept per segment: the rule of `kbert.text.packing.truncation_lengths` (Hugging Face's), on ints.

    Example:
    >>> kept_lengths([5, 5], 5), kept_lengths([5, 5], 5, "only_second")
    ([2, 3], [5, 0])
    """
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
    if len(lengths) == 1:
        return [min(lengths[0], budget)]
    first, second = lengths
    if max_first_length is not None:
        first = min(first, max_first_length)
    if truncation == "only_second" or max_first_length is not None:
        kept = min(first, budget)
        return [kept, min(second, max(budget - kept, 0))]
    shorter = min(first, second)
    longer_kept = shorter if shorter > budget else max(shorter, budget - shorter)
    if shorter + longer_kept > budget:
        shorter_kept, longer_kept = budget // 2, budget // 2 + budget % 2
    else:
        shorter_kept = shorter
    if first > second:
        return [min(first, longer_kept), min(second, shorter_kept)]
    return [min(first, shorter_kept), min(second, longer_kept)]
