"""kbert.text.packing: Hugging Face's truncation rule and [CLS] A [SEP] B [SEP] packing, by hand."""

import keras
import pytest
import tensorflow as tf

from kbert.text.packing import pack_segments, truncation_lengths

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def kept(lengths, budget, truncation="longest_first"):
    columns = [tf.constant(column) for column in zip(*lengths)]
    return list(zip(*[n.numpy().tolist() for n in truncation_lengths(columns, budget, truncation)]))


@once
def test_longest_first():
    # (first, second) -> kept, with a budget of 8 (odd budgets below): a fitting pair stays; the
    # longer is cut to what the shorter leaves; both over half the budget get half each.
    cases = {(3, 2): (3, 2), (10, 2): (6, 2), (2, 10): (2, 6), (10, 10): (4, 4), (4, 10): (4, 4), (0, 10): (0, 8),
             (5, 3): (5, 3), (9, 0): (8, 0)}
    assert kept(list(cases), 8) == list(cases.values())
    # Budget 7: the longer takes the odd token, the second on a tie.
    assert kept([(10, 9), (9, 10), (9, 9), (5, 5), (3, 9)], 7) == [(4, 3), (3, 4), (3, 4), (3, 4), (3, 4)]


@once
def test_only_second_and_a_lone_segment():
    assert kept([(3, 10), (3, 2), (10, 3), (8, 1)], 8, "only_second") == [(3, 5), (3, 2), (8, 0), (8, 0)]
    assert truncation_lengths([tf.constant([7, 3, 0])], 5)[0].numpy().tolist() == [5, 3, 0]
    with pytest.raises(ValueError, match="truncation must be one of"):
        truncation_lengths([tf.constant([1]), tf.constant([1])], 5, "only_first")


@once
def test_pack_pairs_with_columns_and_an_empty_text():
    # Two texts; segment A: [11, 12, 13] and [], B: [21] and [22, 23]; each token has a second column (-id).
    a = (tf.constant([[11, -11], [12, -12], [13, -13]]), tf.constant([0, 3, 3]))
    b = (tf.constant([[21, -21], [22, -22], [23, -23]]), tf.constant([0, 1, 3]))
    packed, segment_ids, padding_mask = pack_segments(
        [a, b], [tf.constant([2, 0]), tf.constant([1, 2])], [1, -1], [2, -2], [0, 0], width=7)
    assert packed[..., 0].numpy().tolist() == [[1, 11, 12, 2, 21, 2, 0], [1, 2, 22, 23, 2, 0, 0]]
    assert packed[..., 1].numpy().tolist() == [[-1, -11, -12, -2, -21, -2, 0], [-1, -2, -22, -23, -2, 0, 0]]
    assert segment_ids.numpy().tolist() == [[0, 0, 0, 0, 1, 1, 0], [0, 0, 1, 1, 1, 0, 0]]
    assert padding_mask.numpy().tolist() == [[True] * 6 + [False], [True] * 5 + [False] * 2]


@once
def test_pack_one_segment_and_a_batch_of_empty_texts():
    a = (tf.constant([[11], [12], [13], [14]]), tf.constant([0, 3, 4]))
    packed, segment_ids, padding_mask = pack_segments([a], [tf.constant([3, 1])], [1], [2], [0], width=6)
    assert packed[..., 0].numpy().tolist() == [[1, 11, 12, 13, 2, 0], [1, 14, 2, 0, 0, 0]]
    assert segment_ids.numpy().tolist() == [[0] * 6] * 2
    empty = (tf.zeros([0, 1], tf.int32), tf.constant([0, 0, 0]))
    packed, _, padding_mask = pack_segments([empty], [tf.constant([0, 0])], [1], [2], [0], width=3)
    assert packed[..., 0].numpy().tolist() == [[1, 2, 0]] * 2
    assert padding_mask.numpy().tolist() == [[True, True, False]] * 2
