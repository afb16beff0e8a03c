"""Windows over texts longer than a model's input: BERT's strided question-answering windows and
the word-aligned windows of NER."""

import numpy as np

# NER and QA: the most windows read per input, unless an export says otherwise (its export.json's
# `max_windows`; `kbert.export.ExportSpec` and `apps/export.py --max-windows` default to this).
# Inputs that need more are read up to there and flagged `truncated`.
MAX_WINDOWS = 64


def question_tokens_kept(max_question_length, max_length):
    """Question tokens kept in a `max_length` window: `max_question_length`, but room for a context token.

    Example:
    >>> question_tokens_kept(64, 384), question_tokens_kept(64, 32)
    (64, 28)
    """
    return max(min(max_question_length, max_length - 4), 0)


def question_windows(question_length, context_length, max_length, doc_stride):
    """[begin, end) context token ranges of BERT's sliding windows for one question.

    Each window holds `max_length - question_length - 3` context tokens (room for
    `[CLS] question [SEP] ... [SEP]`) and starts `doc_stride` tokens after the previous one;
    the last ends at the context's end. An empty context gets one empty window.

    Example:
    >>> question_windows(2, 10, 9, 3)
    [(0, 4), (3, 7), (6, 10)]
    """
    budget = max_length - question_length - 3
    if budget < 1:
        raise ValueError(f"max_length={max_length} leaves no room for the context after a "
                         f"{question_length}-token question.")
    windows, begin = [], 0
    while True:
        end = min(begin + budget, context_length)
        windows.append((begin, end))
        if end >= context_length:
            return windows
        begin += min(end - begin, doc_stride)


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


def pack_question_windows(questions, cls_id, sep_id, pad_id, width=None):
    """`[CLS] question [SEP] context window [SEP]` rows for every window of every question.

    Args:
        questions: list of `(question ids, context ids, context offsets, windows)`: int
            sequences, a (tokens, 2) array of [start, end) char spans, and the windows of
            `question_windows`.
        cls_id, sep_id, pad_id: int. The special tokens.
        width: int or None. Row length (default: the longest row).

    Returns: dict of arrays with one row per window, questions in order: `token_ids`,
    `segment_ids`, `padding_mask` (rows, width) int32; `offsets` (rows, width, 2) int32,
    the char span of each context token and -1 elsewhere; `max_context` (rows, width) bool.

    Example:
    >>> packed = pack_question_windows([([7], [8, 9, 8], np.array([[0, 1], [2, 3], [4, 5]]), [(0, 2), (1, 3)])],
    ...                                cls_id=2, sep_id=3, pad_id=0)
    >>> packed["token_ids"].tolist(), packed["offsets"][1, :, 0].tolist()
    ([[2, 7, 3, 8, 9, 3], [2, 7, 3, 9, 8, 3]], [-1, -1, -1, 2, 4, -1])
    """
    rows = [(question, ids, offsets, begin, end, mask) for question, ids, offsets, windows in questions
            for (begin, end), mask in zip(windows, max_context(windows))]
    if width is None:
        width = max((len(q) + (end - begin) + 3 for q, _, _, begin, end, _ in rows), default=3)
    count = len(rows)
    out = {"token_ids": np.full((count, width), pad_id, "int32"),
           "segment_ids": np.zeros((count, width), "int32"),
           "padding_mask": np.zeros((count, width), "int32"),
           "offsets": np.full((count, width, 2), -1, "int32"),
           "max_context": np.zeros((count, width), bool)}
    for r, (question, ids, offsets, begin, end, mask) in enumerate(rows):
        first = len(question) + 2  # the position of the first context token
        n = first + end - begin + 1
        out["token_ids"][r, :n] = [cls_id, *question, sep_id, *ids[begin:end], sep_id]
        out["segment_ids"][r, first:n] = 1
        out["padding_mask"][r, :n] = 1
        out["offsets"][r, first : n - 1] = np.asarray(offsets, "int32").reshape(-1, 2)[begin:end]
        out["max_context"][r, first : n - 1] = mask
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
