"""BertTokenizer.encode's export options: max_first_length, return_lengths, raw invalid UTF-8."""

import tensorflow as tf

from kbert.text import BertTokenizer

TINY_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "x"]


def test_max_first_length_and_lengths():
    tokenizer = BertTokenizer(TINY_VOCABULARY)
    out = tokenizer.encode(tf.constant(["hi hi hi hi", "hi"]), tf.constant(["x x x", "x"]),
                           max_length=8, truncation="only_second", max_first_length=2,
                           return_lengths=True)
    assert out["token_ids"].numpy().tolist() == [[2, 5, 5, 3, 6, 6, 6, 3], [2, 5, 3, 6, 3, 0, 0, 0]]
    assert out["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]]
    assert out["lengths"].numpy().tolist() == [10, 5]
    assert "lengths" not in tokenizer.encode(tf.constant(["hi"]))


def test_raw_invalid_utf8_is_kept_as_bytes():
    tokenizer = BertTokenizer(TINY_VOCABULARY)
    out = tokenizer.encode(tf.constant(b"h\xffi x\x80 x"), max_length=6, return_offsets=True)
    assert out["token_ids"].numpy().tolist() == [2, 1, 1, 6, 3, 0]  # "h\xffi", "x\x80", "x"
    # A continuation byte (\x80) counts as no character, any other byte as one.
    assert out["offsets"].numpy().tolist() == [[0, 0], [0, 3], [4, 5], [6, 7], [0, 0], [0, 0]]
