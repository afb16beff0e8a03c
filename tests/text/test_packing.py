"""kbert.text.packing: Hugging Face's truncation rule, [CLS] A [SEP] B [SEP] packing, `encode_texts` and
`encode_batch`, by hand."""

import keras
import pytest
import tensorflow as tf

from kbert.text.packing import encode_batch, encode_texts, pack_segments, truncation_lengths

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


def characters(texts):
    """A token per character: its code point, then (index, -index) as two columns."""
    chars = tf.strings.unicode_decode(texts, "UTF-8")
    index = tf.cast(tf.ragged.range(chars.row_lengths()).flat_values, tf.int32)
    return tf.stack([chars.flat_values, index, -index], 1), tf.cast(chars.row_splits, tf.int32)


@once
def test_encode_texts_columns_scalars_and_widths():
    out = encode_texts(characters, "abc", None, (1, 2, 0), max_length=4, columns={"both": [7, 8]},
                       return_lengths=True)
    assert out["token_ids"].numpy().tolist() == [1, 97, 98, 2]
    assert out["both"].numpy().tolist() == [[7, 8], [0, 0], [1, -1], [7, 8]]
    assert (int(out["lengths"]), out["segment_lengths"].numpy().tolist()) == (5, [3])
    texts = tf.constant(["a", "abcdefg"])
    widths = [encode_texts(characters, texts[:n], None, (1, 2, 0), 8, "longest", pad_to_multiple_of=3)
              ["token_ids"].shape[1] for n in (1, 2)]
    assert widths == [3, 8]  # 3 tokens: 3; 8 tokens round up to 9, over max_length: 8
    out = encode_texts(characters, texts, texts, (1, 2, 0), 6, truncation="only_second", max_first_length=1)
    assert out["token_ids"].numpy().tolist() == [[1, 97, 2, 97, 2, 0], [1, 97, 2, 97, 98, 2]]
    for options, message in (({"padding": "shortest"}, "padding must be one of"),
                             ({"truncation": "only_first"}, "truncation must be one of"),
                             ({"max_length": 2}, "leaves no room")):
        with pytest.raises(ValueError, match=message):
            encode_texts(characters, texts, texts, (1, 2, 0), **{"max_length": 6, **options})


@once
def test_encode_batch_caches_a_graph_per_options_and_names_bad_texts():
    def encode(texts, pairs=None, max_length=4):
        return encode_texts(characters, texts, pairs, (1, 2, 0), max_length)

    graphs = {}
    out = encode_batch(encode, graphs, ["ab", b"\xffc"], ["d", "e"], max_length=5)
    assert out["token_ids"].tolist() == [[1, 97, 2, 100, 2], [1, 0xFFFD, 2, 101, 2]]
    encode_batch(encode, graphs, "x", max_length=5)
    encode_batch(encode, graphs, ["y", "z"], max_length=5)
    assert len(graphs) == 2  # (one segment or two) x max_length=5
    with pytest.raises(TypeError, match=r"pairs\[1\] is NoneType, not str"):
        encode_batch(encode, graphs, ["a", "b"], ["c", None])
    with pytest.raises(ValueError, match="Got 2 texts but 1 pairs"):
        encode_batch(encode, graphs, ["a", "b"], ["c"])
