"""Windows over texts longer than a model's input: BERT's strided question-answering windows, a
classifier's strided windows over long texts, and the word-aligned windows of NER."""

import numpy as np

from kbert_core.packing import Layout

# NER and QA: the most windows read per input, unless an export says otherwise (its export.json's
# `max_windows`; `kbert.export.ExportSpec` and `apps/export.py --max-windows` default to this).
# Inputs that need more are read up to there and flagged `truncated`.
MAX_WINDOWS = 64
# QA's windows in BERT's SQuAD recipe (run_squad.py), the defaults everywhere a QA model is built, trained or
# exported: tokens per window, tokens between window starts, question tokens kept.
QA_SEQUENCE_LENGTH, QA_DOC_STRIDE, MAX_QUESTION_LENGTH = 384, 128, 64


def question_tokens_kept(max_question_length, max_length, specials=3):
    """Question tokens kept in a `max_length` window: `max_question_length`, but room for a context token beside
    the window's `specials` special tokens (BERT's 3; RoBERTa's 4).

    Example:
    >>> question_tokens_kept(64, 384), question_tokens_kept(64, 32), question_tokens_kept(64, 32, specials=4)
    (64, 28, 27)
    """
    return max(min(max_question_length, max_length - specials - 1), 0)


def question_windows(question_length, context_length, max_length, doc_stride, specials=3):
    """[begin, end) context token ranges of BERT's sliding windows for one question.

    Each window holds `max_length - question_length - specials` context tokens (room for
    `[CLS] question [SEP] ... [SEP]`; RoBERTa's `<s> question </s></s> ... </s>` has 4) and starts
    `doc_stride` tokens after the previous one; the last ends at the context's end. An empty context
    gets one empty window.

    Example:
    >>> question_windows(2, 10, 9, 3)
    [(0, 4), (3, 7), (6, 10)]
    """
    budget = max_length - question_length - specials
    if budget < 1:
        raise ValueError(f"max_length={max_length} leaves no room for the context after a "
                         f"{question_length}-token question.")
    return strided_windows(context_length, budget, doc_stride)


def text_windows(length, max_length, doc_stride):
    """[begin, end) token ranges of the windows a classifier reads a `length`-token text through: each
    `[CLS] tokens [SEP]` in `max_length`, starting `doc_stride` tokens after the previous one.

    Example:
    >>> text_windows(10, 6, 3)
    [(0, 4), (3, 7), (6, 10)]
    """
    return strided_windows(length, max_length - 2, doc_stride)


def strided_windows(length, budget, stride):
    """[begin, end) ranges of at most `budget` of `length` tokens, each starting `stride` (at most `budget`)
    after the previous; the last ends at the end. No tokens: one empty window.

    Example:
    >>> strided_windows(5, 2, 2), strided_windows(0, 2, 2)
    ([(0, 2), (2, 4), (4, 5)], [(0, 0)])
    """
    windows, begin = [], 0
    while True:
        end = min(begin + budget, length)
        windows.append((begin, end))
        if end >= length:
            return windows
        begin += min(end - begin, stride)


def max_context(windows):
    """Per window, for each of its tokens: whether this window gives the token its most context.

    A token's context in a window is min(tokens left, tokens right) + 0.01 * window length,
    as in BERT's `_check_is_max_context`; ties go to the earlier window. One pass over the
    windows' tokens (the best score and its window so far, per token): linear in the number
    of windows, where comparing every window with every other grew with its square (a 1 MB
    QA context did not answer in 5 minutes).

    Example:
    >>> [mask.astype(int).tolist() for mask in max_context([(0, 4), (2, 6)])]
    [[1, 1, 1, 0], [0, 1, 1, 1]]
    """
    length = max((end for _, end in windows), default=0)
    best, owner = np.full(length, -np.inf), np.full(length, -1)
    for w, (begin, end) in enumerate(windows):
        positions = np.arange(begin, end)
        score = np.minimum(positions - begin, end - 1 - positions) + 0.01 * (end - begin)
        better = score > best[begin:end]  # strictly: a tie stays with the earlier window
        best[begin:end] = np.where(better, score, best[begin:end])
        owner[begin:end] = np.where(better, w, owner[begin:end])
    return [owner[begin:end] == w for w, (begin, end) in enumerate(windows)]


def pack_question_windows(questions, cls_id, sep_id, pad_id, width=None, layout=None):
    """`[CLS] question [SEP] context window [SEP]` rows for every window of every question.

    Args:
        questions: list of `(question ids, context ids, context offsets, windows)`: int
            sequences, a (tokens, 2) array of [start, end) char spans, and the windows of
            `question_windows`.
        cls_id, sep_id, pad_id: int. The special tokens.
        width: int or None. Row length (default: the longest row).
        layout: None, or a `kbert_core.Layout` to lay rows out by instead of `cls_id`, `sep_id` and
            `pad_id` (RoBERTa's: `<s> question </s></s> context window </s>`, segment ids all 0).

    Returns: dict of arrays with one row per window, questions in order: `token_ids`,
    `segment_ids`, `padding_mask` (rows, width) int32; `offsets` (rows, width, 2) int32,
    the char span of each context token and -1 elsewhere; `max_context` (rows, width) bool.

    Example:
    >>> packed = pack_question_windows([([7], [8, 9, 8], np.array([[0, 1], [2, 3], [4, 5]]), [(0, 2), (1, 3)])],
    ...                                cls_id=2, sep_id=3, pad_id=0)
    >>> packed["token_ids"].tolist(), packed["offsets"][1, :, 0].tolist()
    ([[2, 7, 3, 8, 9, 3], [2, 7, 3, 9, 8, 3]], [-1, -1, -1, 2, 4, -1])
    """
    layout = layout or Layout.bert(cls_id, sep_id, pad_id)
    rows = [(question, ids, offsets, begin, end, mask) for question, ids, offsets, windows in questions
            for (begin, end), mask in zip(windows, max_context(windows))]
    specials = layout.specials(2)
    if width is None:
        width = max((len(q) + (end - begin) + specials for q, _, _, begin, end, _ in rows), default=specials)
    count = len(rows)
    out = {"token_ids": np.full((count, width), layout.pad, "int32"),
           "segment_ids": np.zeros((count, width), "int32"),
           "padding_mask": np.zeros((count, width), "int32"),
           "offsets": np.full((count, width, 2), -1, "int32"),
           "max_context": np.zeros((count, width), bool)}
    for r, (question, ids, offsets, begin, end, mask) in enumerate(rows):
        first = len(layout.start) + len(question) + len(layout.middle)  # the position of the first context token
        n = first + end - begin + len(layout.end)
        out["token_ids"][r, :n] = [*layout.start, *question, *layout.middle, *ids[begin:end], *layout.end]
        if layout.count_segments:
            out["segment_ids"][r, len(layout.start) + len(question) + 1:n] = 1  # after the first [SEP]
        out["padding_mask"][r, :n] = 1
        out["offsets"][r, first : first + end - begin] = np.asarray(offsets, "int32").reshape(-1, 2)[begin:end]
        out["max_context"][r, first : first + end - begin] = mask
    return out


def word_windows(first, budget):
    """[begin, end) token ranges of at most `budget` tokens, cut before a word's first piece.

    A single word longer than `budget` is cut inside. No tokens: one empty window.

    Args:
        first: bool sequence. Whether each token is the first piece of a word.
        budget: int. Tokens per window.

    Example:
    >>> word_windows([True, False, True, True, False, False], 3)
    [(0, 3), (3, 6)]
    """
    first = np.asarray(first, bool)
    windows, begin, n = [], 0, len(first)
    while begin < n:
        end = min(begin + budget, n)
        if end < n:
            cuts = np.flatnonzero(first[begin + 1 : end + 1]) + begin + 1
            end = int(cuts[-1]) if len(cuts) else end
        windows.append((begin, end))
        begin = end
    return windows or [(0, 0)]


def first_pieces(word_ids):
    """Whether each token is the first piece of its word (word ids below 0: no word).

    Example:
    >>> first_pieces([-1, 0, 0, 1, 2, 2]).tolist()
    [False, True, False, True, True, False]
    """
    word_ids = np.asarray(word_ids)
    first = word_ids >= 0
    first[1:] &= word_ids[1:] != word_ids[:-1]
    return first


def pack_text_windows(texts, cls_id, sep_id, pad_id, width=None):
    """`[CLS] window [SEP]` rows for every window of every text, and the text of each row.

    Args:
        texts: list of `(token ids, windows)`: an int sequence and its [begin, end) windows (`text_windows`).
        cls_id, sep_id, pad_id: int. The special tokens.
        width: int or None. Row length (default: the longest row).

    Returns: `(inputs, window_examples)`: a dict of int32 arrays (rows, width) `token_ids`, `segment_ids`
    (zeros) and `padding_mask`; and the index in `texts` of each row (rows,).

    Example:
    >>> inputs, examples = pack_text_windows([([7, 8, 9], [(0, 2), (1, 3)]), ([], [(0, 0)])], 2, 3, 0)
    >>> inputs["token_ids"].tolist(), examples.tolist()
    ([[2, 7, 8, 3], [2, 8, 9, 3], [2, 3, 0, 0]], [0, 0, 1])
    """
    rows = [(i, ids[begin:end]) for i, (ids, windows) in enumerate(texts) for begin, end in windows]
    width = width or max((len(row) + 2 for _, row in rows), default=2)
    token_ids = np.full((len(rows), width), pad_id, "int32")
    padding_mask = np.zeros((len(rows), width), "int32")
    for r, (_, row) in enumerate(rows):
        token_ids[r, : len(row) + 2] = [cls_id, *row, sep_id]
        padding_mask[r, : len(row) + 2] = 1
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}
    return inputs, np.array([i for i, _ in rows], "int64")


def combine_windows(outputs, window_examples, pooling="mean"):
    """One row per text from the rows of its windows (`window_examples[r]`: the text of row r): their mean
    or their largest value, per column.

    Example:
    >>> combine_windows(np.array([[1.0, 4.0], [3.0, 0.0], [5.0, 5.0]]), np.array([0, 0, 1])).tolist()
    [[2.0, 2.0], [5.0, 5.0]]
    >>> combine_windows(np.array([[1.0, 4.0], [3.0, 0.0], [5.0, 5.0]]), np.array([0, 0, 1]), "max").tolist()
    [[3.0, 4.0], [5.0, 5.0]]
    """
    texts = int(window_examples.max()) + 1 if len(window_examples) else 0
    if pooling == "max":
        combined = np.full((texts, *outputs.shape[1:]), -np.inf, outputs.dtype)
        np.maximum.at(combined, window_examples, outputs)
        return combined
    combined = np.zeros((texts, *outputs.shape[1:]), outputs.dtype)
    np.add.at(combined, window_examples, outputs)
    return combined / np.bincount(window_examples, minlength=texts).reshape(-1, *[1] * (outputs.ndim - 1))
