"""kbert_core.packing: BERT's and RoBERTa's special-token layouts, truncation and padding, against rows by hand."""

import keras
import numpy as np
import pytest

from kbert_core import Layout, kept_lengths, pack

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

A = ([11, 12, 13], [(0, 1), (2, 3), (4, 5)], [0, 1, 2])  # three tokens of three words
B = ([21, 22], [(0, 2), (3, 4)], [0, 1])
EMPTY = ([], [], [])
BERT = Layout.bert(101, 102, 0)
ROBERTA = Layout.roberta(0, 2, 1)


def test_bert_single_and_pair():
    out = pack([A, B], BERT, 7)
    assert out["token_ids"].tolist() == [[101, 11, 12, 13, 102, 0, 0], [101, 21, 22, 102, 0, 0, 0]]
    assert out["segment_ids"].tolist() == [[0] * 7] * 2
    assert out["padding_mask"].tolist() == [[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0, 0]]
    assert out["word_ids"].tolist() == [[-1, 0, 1, 2, -1, -1, -1], [-1, 0, 1, -1, -1, -1, -1]]
    assert out["offsets"][0].tolist() == [[0, 0], [0, 1], [2, 3], [4, 5], [0, 0], [0, 0], [0, 0]]
    assert out["truncated"].tolist() == [False, False]
    out = pack([A], BERT, 8, pairs=[B])  # [CLS] A [SEP] B [SEP]: segment 1 on B and its [SEP]
    assert out["token_ids"].tolist() == [[101, 11, 12, 13, 102, 21, 22, 102]]
    assert out["segment_ids"].tolist() == [[0, 0, 0, 0, 0, 1, 1, 1]]
    assert out["padding_mask"].tolist() == [[1] * 8]
    assert out["word_ids"].tolist() == [[-1, 0, 1, 2, -1, 0, 1, -1]]
    assert out["offsets"][0].tolist() == [[0, 0], [0, 1], [2, 3], [4, 5], [0, 0], [0, 2], [3, 4], [0, 0]]
    assert {key: value.dtype.name for key, value in out.items()} == {
        "token_ids": "int32", "segment_ids": "int32", "padding_mask": "int32", "word_ids": "int32",
        "offsets": "int32", "truncated": "bool"}


def test_roberta_single_and_pair():
    out = pack([A], ROBERTA, 6)
    assert out["token_ids"].tolist() == [[0, 11, 12, 13, 2, 1]]  # padded with <pad>
    assert out["padding_mask"].tolist() == [[1, 1, 1, 1, 1, 0]]
    out = pack([A], ROBERTA, 10, pairs=[B])  # <s> A </s></s> B </s>, all segment 0
    assert out["token_ids"].tolist() == [[0, 11, 12, 13, 2, 2, 21, 22, 2, 1]]
    assert out["segment_ids"].tolist() == [[0] * 10]
    assert out["padding_mask"].tolist() == [[1] * 9 + [0]]
    assert out["word_ids"].tolist() == [[-1, 0, 1, 2, -1, -1, 0, 1, -1, -1]]
    assert out["offsets"][0].tolist() == [[0, 0], [0, 1], [2, 3], [4, 5], [0, 0], [0, 0], [0, 2], [3, 4], [0, 0],
                                          [0, 0]]
    assert out["truncated"].tolist() == [False]


def test_truncation():
    # Budget 3 for 3 + 2 tokens: both over half, the longer (first) takes the odd token.
    out = pack([A], BERT, 6, pairs=[B])
    assert out["token_ids"].tolist() == [[101, 11, 12, 102, 21, 102]]
    assert out["segment_ids"].tolist() == [[0, 0, 0, 0, 1, 1]]
    assert out["truncated"].tolist() == [True]
    out = pack([A], ROBERTA, 7, pairs=[B])
    assert out["token_ids"].tolist() == [[0, 11, 12, 2, 2, 21, 2]]
    assert out["word_ids"].tolist() == [[-1, 0, 1, -1, -1, 0, -1]]
    assert out["truncated"].tolist() == [True]
    out = pack([A], BERT, 6, pairs=[B], truncation="only_second")  # the second gives way, to nothing
    assert out["token_ids"].tolist() == [[101, 11, 12, 13, 102, 102]]
    assert out["segment_ids"].tolist() == [[0, 0, 0, 0, 0, 1]]
    out = pack([A], BERT, 8, pairs=[B], max_first_length=1)  # the question cut first
    assert out["token_ids"].tolist() == [[101, 11, 102, 21, 22, 102, 0, 0]]
    assert out["segment_ids"].tolist() == [[0, 0, 0, 1, 1, 1, 0, 0]]
    out = pack([A, B], ROBERTA, 4)
    assert out["token_ids"].tolist() == [[0, 11, 12, 2], [0, 21, 22, 2]]
    assert out["truncated"].tolist() == [True, False]


def test_empty_texts_and_errors():
    out = pack([EMPTY], BERT, 4, pairs=[EMPTY])
    assert out["token_ids"].tolist() == [[101, 102, 102, 0]]
    assert out["segment_ids"].tolist() == [[0, 0, 1, 0]]
    assert pack([EMPTY], ROBERTA, 4, pairs=[EMPTY])["token_ids"].tolist() == [[0, 2, 2, 2]]
    assert pack([], BERT, 3)["token_ids"].shape == (0, 3)
    with pytest.raises(ValueError, match="max_length=3 leaves no room for the 4 special tokens"):
        pack([A], ROBERTA, 3, pairs=[B])
    with pytest.raises(ValueError, match="Got 2 texts but 1 pairs"):
        pack([A, A], BERT, 8, pairs=[B])
    with pytest.raises(ValueError, match="truncation must be one of"):
        pack([A], BERT, 8, pairs=[B], truncation="only_first")


def test_layouts():
    assert BERT == Layout((101,), (102,), (102,), 0, count_segments=True)
    assert ROBERTA == Layout((0,), (2, 2), (2,), 1, count_segments=False)
    assert [BERT.specials(1), BERT.specials(2), ROBERTA.specials(1), ROBERTA.specials(2)] == [2, 3, 2, 4]


def test_kept_lengths_by_hand():
    assert kept_lengths([10], 6) == [6]
    assert kept_lengths([2, 10], 6) == [2, 4]  # the longer gives way
    assert kept_lengths([10, 10], 7) == [3, 4]  # both too long: halves, the odd token to the second
    assert kept_lengths([9, 4], 7, "only_second") == [7, 0]
    assert kept_lengths([9, 4], 7, max_first_length=3) == [3, 4]
