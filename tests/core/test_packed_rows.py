"""kbert_core.packed_rows: first-fit-decreasing rows and the packed arrays, by hand."""

import keras
import numpy as np
import pytest

from kbert_core.packed_rows import fit_rows, packed_inputs

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def test_fit_rows_by_hand():
    assert fit_rows([4, 4, 4], 8) == [[0, 1], [2]]
    assert fit_rows([7, 1, 2, 6], 8) == [[0, 1], [3, 2]]
    assert fit_rows([], 8) == []
    with pytest.raises(ValueError, match="text 1 has 9 tokens, more than the row length 8"):
        fit_rows([3, 9], 8)


def test_packed_inputs_keep_tokens_segments_order_and_spans():
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]])
    ids = np.arange(12).reshape(3, 4) * mask
    segments = np.array([[0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 1, 0]])
    packed, spans = packed_inputs({"token_ids": ids, "segment_ids": segments, "padding_mask": mask}, 6)
    assert packed["sequence_ids"].tolist() == [[1, 1, 1, 1, 2, 2], [1, 1, 1, 0, 0, 0]]
    assert packed["token_ids"].tolist() == [[0, 1, 2, 3, 4, 5], [8, 9, 10, 0, 0, 0]]
    assert packed["segment_ids"].tolist() == [[0, 0, 1, 1, 0, 0], [0, 1, 1, 0, 0, 0]]
    assert spans.tolist() == [[0, 0, 4], [0, 4, 2], [1, 0, 3]]
