"""kbert.text.wordpieces: BERT's long-word rule in characters, word ids, byte-to-character offsets, by hand."""

import keras
import pytest
import tensorflow as tf

from kbert.text.wordpieces import chars_before, merge_long_words, row_ids, to_char_offsets

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
def test_row_ids_with_empty_rows():
    assert row_ids(tf.constant([0, 0, 2, 2, 5]), 5).numpy().tolist() == [1, 1, 3, 3, 3]
    assert row_ids(tf.constant([0, 3]), 3).numpy().tolist() == [0, 0, 0]
    assert row_ids(tf.constant([0, 0, 0]), 0).numpy().tolist() == []


@once
def test_chars_before_counts_utf8_lead_bytes():
    # "aé€😀" is 1 + 2 + 3 + 4 bytes, 4 characters; then "" and "b".
    cumulative, text_start = chars_before(tf.constant(["a\u00e9\u20ac\U0001f600", "", "b"]))
    assert cumulative.numpy().tolist() == [0, 1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5]
    assert text_start.numpy().tolist() == [0, 10, 10]


@once
def test_char_offsets_of_byte_spans():
    # Text 0 "😀ab" normalized as it is: pieces "😀" (bytes 0-4) and "ab" (4-6).
    # Text 1 "ﬁ x" normalized to "fi x" (as NFKC would): "f" and "i" both come from byte 0 (ﬁ is 3 bytes).
    byte_map = tf.ragged.constant([[0, 1, 2, 3, 4, 5, 6], [0, 0, 3, 4, 5]], dtype=tf.int64)
    starts, ends = to_char_offsets(tf.constant(["\U0001f600ab", "\ufb01 x"]), byte_map, tf.constant([0, 4, 0, 1, 3]),
                                   tf.constant([4, 6, 1, 2, 4]), tf.constant([0, 2, 5]))
    assert starts.numpy().tolist() == [0, 1, 0, 0, 2]
    assert ends.numpy().tolist() == [1, 3, 1, 1, 3]


@once
def test_words_longer_than_max_chars_become_one_unk():
    # Ids: 5 "é", 6 "##é", 7 "ab", 8 "##éé", 9 "##cd", 10 "x"; "##" pieces continue a word.
    is_suffix = tf.constant([False] * 6 + [True, False, True, True, False])
    texts = tf.constant(["\u00e9\u00e9\u00e9 ab", "", "\u00e9" * 4, "abcd x"])
    ids = tf.ragged.constant([[5, 8, 7], [], [5, 8, 6], [7, 9, 10]])
    starts = tf.ragged.constant([[0, 2, 7], [], [0, 2, 6], [0, 2, 5]])
    ends = tf.ragged.constant([[2, 6, 9], [], [2, 6, 8], [2, 4, 6]])
    pieces = merge_long_words(texts, ids, starts, ends, is_suffix, unk_id=1, max_chars=3)
    # "ééé" is 6 bytes but 3 characters: kept; "éééé" (4 characters) and "abcd" become one [UNK] each.
    assert pieces.token_ids.numpy().tolist() == [5, 8, 7, 1, 1, 10]
    assert pieces.starts.numpy().tolist() == [0, 2, 7, 0, 0, 5]
    assert pieces.ends.numpy().tolist() == [2, 6, 9, 8, 4, 6]
    assert pieces.word_ids.numpy().tolist() == [0, 0, 1, 0, 0, 1]
    assert pieces.row_splits.numpy().tolist() == [0, 3, 3, 4, 6]
