"""kbert.data.windows.token_rows: whole texts as WordPiece ids with character offsets, and their words."""

import keras
import pytest

from kbert.data.windows.token_rows import token_rows, word_spans_of
from kbert.text import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "there", "##s", ",", "merkel", "visited", "paris",
              "."]
once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCABULARY)


@once
def test_ids_and_offsets_by_hand(tokenizer):
    texts = ["Hi there", "  HIS, hi zz", "", "é hi"]
    rows = token_rows(tokenizer, texts)
    assert [ids.tolist() for ids, _ in rows] == [[5, 6], [5, 7, 8, 5, 1], [], [1, 5]]
    assert [offsets.tolist() for _, offsets in rows] == [
        [[0, 2], [3, 8]], [[2, 4], [4, 5], [5, 6], [7, 9], [10, 12]], [], [[0, 1], [2, 4]]]
    assert rows[2][0].shape == (0,) and rows[2][1].shape == (0, 2)
    assert all(ids.dtype == "int32" and offsets.dtype == "int32" for ids, offsets in rows)


@once
def test_no_length_limit_and_chunks_do_not_leak_padding(tokenizer):
    texts = ["hi " * 700, "hi", "there hi", ""]
    rows = token_rows(tokenizer, texts, chunk_size=2)
    assert [len(ids) for ids, _ in rows] == [700, 1, 2, 0]  # past 512 tokens, none cut; no [PAD] or [SEP] kept
    assert rows[0][1][-1].tolist() == [2097, 2099]
    whole = token_rows(tokenizer, texts)
    assert all((a == b).all() and (c == d).all() for (a, c), (b, d) in zip(rows, whole))


@once
def test_raw_text_words_split_at_punctuation(tokenizer):
    assert word_spans_of(tokenizer, ["Merkel visited Paris."])[0].tolist() == [[0, 6], [7, 14], [15, 20], [20, 21]]


@once
def test_word_spans_join_the_pieces_of_a_word(tokenizer):
    spans = word_spans_of(tokenizer, ["his, zz hi", "", "\u00a0 hi"])
    assert spans[0].tolist() == [[0, 3], [3, 4], [5, 7], [8, 10]]  # "his" is "hi" + "##s"; "zz" is [UNK]
    assert spans[1].shape == (0, 2)
    assert spans[2].tolist() == [[2, 4]]
