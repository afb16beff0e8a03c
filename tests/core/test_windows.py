"""kbert_core.windows: strided question windows, their packing, and word-aligned NER windows, by hand."""

import keras
import numpy as np
import pytest

from kbert_core import first_pieces, max_context, pack_question_windows, question_windows, word_windows

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def test_question_windows_by_hand():
    assert question_windows(1, 5, 10, 2) == [(0, 5)]
    assert question_windows(1, 7, 8, 2) == [(0, 4), (2, 6), (4, 7)]
    assert question_windows(1, 7, 8, 9) == [(0, 4), (4, 7)]  # a stride over the budget leaves no gap
    assert question_windows(3, 0, 8, 2) == [(0, 0)]
    with pytest.raises(ValueError, match="leaves no room"):
        question_windows(5, 3, 8, 2)


def test_max_context_by_hand():
    # Context of token t in window [b, e): min(t - b, e - 1 - t) + 0.01 * (e - b).
    # Token 2: 1.04 in (0, 4), 0.06 in (2, 8); token 6: 1.06 in (2, 8), 1.04 in (5, 9) (the
    # longer window breaks the tie); token 7: 0.06 against 1.04.
    masks = [mask.tolist() for mask in max_context([(0, 4), (2, 8), (5, 9)])]
    assert masks == [[True, True, True, False], [False, True, True, True, True, False],
                     [False, False, True, True]]
    # Token 3: 0.04 in both windows: the earlier one takes it.
    assert [mask.tolist() for mask in max_context([(0, 4), (3, 7)])] == [[True] * 4, [False, True, True, True]]


def _check_is_max_context(doc_spans, cur_span_index, position):
    """BERT's own function (google-research/bert, run_squad.py), on (start, length) spans."""
    best_score, best_span_index = None, None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


def test_max_context_is_berts_on_random_windows():
    """Strided windows as question_windows makes them, and windows of any order, overlap and length."""
    rng = np.random.default_rng(0)
    cases = [question_windows(int(q), int(n), 32, int(stride))
             for q, n, stride in zip(rng.integers(1, 10, 20), rng.integers(1, 300, 20), rng.integers(1, 20, 20))]
    for _ in range(20):
        begins = rng.integers(0, 60, rng.integers(1, 8))
        cases.append([(int(b), int(b + length)) for b, length in zip(begins, rng.integers(1, 25, len(begins)))])
    for windows in cases:
        spans = [(begin, end - begin) for begin, end in windows]
        expected = [[_check_is_max_context(spans, w, p) for p in range(begin, end)]
                    for w, (begin, end) in enumerate(windows)]
        assert [mask.tolist() for mask in max_context(windows)] == expected, windows


def test_pack_question_windows_by_hand():
    offsets = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    packed = pack_question_windows([([7, 8], [11, 12, 13, 14], offsets, [(0, 3), (2, 4)]),
                                    ([9], [15], offsets[:1], [(0, 1)])], cls_id=2, sep_id=3, pad_id=0)
    assert packed["token_ids"].tolist() == [[2, 7, 8, 3, 11, 12, 13, 3], [2, 7, 8, 3, 13, 14, 3, 0],
                                            [2, 9, 3, 15, 3, 0, 0, 0]]
    assert packed["segment_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 0],
                                              [0, 0, 0, 1, 1, 0, 0, 0]]
    assert packed["padding_mask"].sum(1).tolist() == [8, 7, 5]
    assert packed["offsets"][:, :, 0].tolist() == [[-1, -1, -1, -1, 0, 2, 4, -1], [-1, -1, -1, -1, 4, 6, -1, -1],
                                                   [-1, -1, -1, 0, -1, -1, -1, -1]]
    # Context token 2: 0.03 in the first window, 0.02 in the second (shorter).
    assert packed["max_context"].astype(int).tolist() == [[0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 0, 0, 1, 0, 0],
                                                          [0, 0, 0, 1, 0, 0, 0, 0]]
    assert pack_question_windows([], 2, 3, 0)["token_ids"].shape == (0, 3)


def test_word_windows_cut_before_a_first_piece():
    first = first_pieces([0, 0, 0, 1, 2, 2, 3])
    assert first.tolist() == [True, False, False, True, True, False, True]
    assert word_windows(first, 4) == [(0, 4), (4, 7)]
    assert word_windows(first, 2) == [(0, 2), (2, 4), (4, 6), (6, 7)]  # word 0 is cut inside
    assert word_windows(first, 100) == [(0, 7)]
    assert word_windows([], 4) == [(0, 0)]
    assert first_pieces([-1, 0, -1, 0]).tolist() == [False, True, False, True]
