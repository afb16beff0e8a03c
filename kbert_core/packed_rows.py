"""Packed rows: several tokenized texts laid end to end in one model row, as text-embeddings-inference serves
them, so that a batch of texts of mixed lengths is computed with almost no padding. Each text keeps its own
positions (restarting at 0) and attends only to its own tokens (`sequence_ids`); its answer is read at its first
token ([CLS]) or over its own tokens."""

import numpy as np


def fit_rows(lengths, row_length):
    """Texts of `lengths` tokens put into rows of at most `row_length` tokens, first fit, longest first:
    a list of rows, each the list of the texts' indices in it.

    Example:
    >>> fit_rows([5, 3, 4, 2], 8)
    [[0, 1], [2, 3]]
    """
    too_long = [i for i, n in enumerate(lengths) if n > row_length]
    if too_long:
        raise ValueError(f"fit_rows: text {too_long[0]} has {lengths[too_long[0]]} tokens, more than the row "
                         f"length {row_length}.")
    rows, room = [], []
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        row = next((r for r, left in enumerate(room) if left >= lengths[index]), None)
        if row is None:
            rows.append([])
            room.append(row_length)
            row = len(rows) - 1
        rows[row].append(index)
        room[row] -= lengths[index]
    return rows


def packed_inputs(inputs, row_length=None):
    """Padded model inputs (`token_ids`, `segment_ids`, `padding_mask`: (texts, length) int arrays, real tokens
    first) laid out as packed rows (`fit_rows`) of `row_length` tokens (None: the longest text's).

    Returns:
        (packed, spans): `packed` a dict of int32 arrays (rows, row_length), `token_ids`, `segment_ids` and
        `sequence_ids` (text k of a row has id k + 1 on its tokens, padding 0); `spans` (texts, 3) int32, the
        row and column of each text's first token and its number of tokens, in input order.

    Example:
    >>> mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]])
    >>> packed, spans = packed_inputs({"token_ids": mask * 7, "segment_ids": mask * 0, "padding_mask": mask})
    >>> packed["sequence_ids"].tolist(), spans.tolist()
    ([[1, 1, 1], [1, 1, 2]], [[0, 0, 3], [1, 0, 2], [1, 2, 1]])
    """
    lengths = np.asarray(inputs["padding_mask"]).sum(-1).astype(int).tolist()
    row_length = max(lengths, default=1) if row_length is None else row_length
    rows = fit_rows(lengths, row_length)
    packed = {key: np.zeros((len(rows), row_length), "int32") for key in ("token_ids", "segment_ids", "sequence_ids")}
    spans = np.zeros((len(lengths), 3), "int32")
    given = {key: np.asarray(inputs[key]) for key in ("token_ids", "segment_ids")}
    for r, row in enumerate(rows):
        column = 0
        for k, index in enumerate(row):
            end = column + lengths[index]
            for key in ("token_ids", "segment_ids"):
                packed[key][r, column:end] = given[key][index, : lengths[index]]
            packed["sequence_ids"][r, column:end] = k + 1
            spans[index] = (r, column, lengths[index])
            column = end
    return packed, spans
