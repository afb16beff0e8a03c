"""Whole texts as WordPiece rows, with no length limit: the raw material of sliding windows."""

import numpy as np

UNLIMITED = 2**30  # the tokenizer's max_length when nothing may be cut


def token_rows(tokenizer, texts, chunk_size=256):
    """Tokenizes each text in full; returns (token ids, char offsets) per text, no specials.

    Args:
        tokenizer: `kbert.text.BertTokenizer`.
        texts: list of str.
        chunk_size: int. Texts tokenized per call (each call pads to its longest text).

    Returns: list of `(ids, offsets)`: int32 arrays of shape (tokens,) and (tokens, 2), the
    [start, end) character span of each token in its text.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> [(ids.tolist(), offsets.tolist()) for ids, offsets in token_rows(tokenizer, ["hi hi", ""])]
    [([5, 5], [[0, 2], [3, 5]]), ([], [])]
    """
    rows = []
    for begin in range(0, len(texts), chunk_size):
        batch = tokenizer(list(texts[begin : begin + chunk_size]), max_length=UNLIMITED,
                          padding="longest", return_offsets=True)
        for ids, offsets, length in zip(batch["token_ids"], batch["offsets"], batch["padding_mask"].sum(1)):
            rows.append((ids[1 : length - 1].astype("int32"),
                         offsets[1 : length - 1].astype("int32").reshape(-1, 2)))
    return rows


def word_spans_of(tokenizer, texts):
    """The words of each text as the tokenizer splits them: (words, 2) char spans.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> word_spans_of(tokenizer, ["Hi, Bob!"])[0].tolist()
    [[0, 2], [2, 3], [4, 7], [7, 8]]
    """
    spans = []
    for begin in range(0, len(texts), 256):
        batch = tokenizer(list(texts[begin : begin + 256]), max_length=UNLIMITED, padding="longest",
                          return_offsets=True)
        for offsets, word_ids in zip(batch["offsets"], batch["word_ids"]):
            real = word_ids >= 0
            count = int(word_ids[real].max()) + 1 if real.any() else 0
            starts = np.full(count, np.iinfo("int32").max, "int64")
            ends = np.zeros(count, "int64")
            np.minimum.at(starts, word_ids[real], offsets[real, 0])
            np.maximum.at(ends, word_ids[real], offsets[real, 1])
            spans.append(np.stack([starts, ends], axis=1).astype("int32").reshape(-1, 2))
    return spans
