"""BertPreprocessor, the base of the task preprocessors: its config, padding to a multiple, and the input checks."""

import numpy as np
import pytest

from kbert.tasks.bert_preprocessor import BertPreprocessor, text_list, text_pairs
from kbert.text import BertTokenizer

# [PAD] is not id 0 here, so that padding with [PAD] and padding with 0 differ.
VOCABULARY = ["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]", "a", "B"]


def test_config_carries_the_vocabulary_and_settings():
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY, lowercase=False), sequence_length=9, name="pre")
    config = preprocessor.get_config()
    assert config["tokenizer"] == {"vocabulary": VOCABULARY, "lowercase": False}
    again = BertPreprocessor.from_config(config)
    assert isinstance(again.tokenizer, BertTokenizer) and again.tokenizer.vocabulary() == VOCABULARY
    assert (again.tokenizer.lowercase, again.sequence_length, again.name) == (False, 9, "pre")


def test_a_sequence_length_without_room_for_text_is_refused():
    BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=3)
    with pytest.raises(ValueError, match="sequence_length=2 leaves no room"):
        BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=2)


def test_pad_to_multiple_pads_token_ids_with_pad_and_the_rest_with_zeros():
    tf = pytest.importorskip("tensorflow")
    tensors = {"token_ids": tf.constant([[2, 5, 6, 5, 3]]), "segment_ids": tf.constant([[0, 0, 0, 1, 1]]),
               "offsets": tf.constant([[[0, 0], [0, 1], [2, 3], [4, 5], [0, 0]]])}
    padded = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=20).pad_to_multiple(tensors, multiple=4)
    assert padded["token_ids"].numpy().tolist() == [[2, 5, 6, 5, 3, 1, 1, 1]]  # [PAD] is 1
    assert padded["segment_ids"].numpy().tolist() == [[0, 0, 0, 1, 1, 0, 0, 0]]
    assert padded["offsets"].numpy().tolist() == [[[0, 0], [0, 1], [2, 3], [4, 5], [0, 0]] + [[0, 0]] * 3]
    capped = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=6).pad_to_multiple(tensors, multiple=4)
    assert capped["token_ids"].numpy().tolist() == [[2, 5, 6, 5, 3, 1]]  # 8 would pass sequence_length
    same = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=20).pad_to_multiple(tensors, multiple=5)
    assert same["token_ids"].shape == (1, 5)


def test_text_list_takes_strings_bytes_and_arrays_and_names_what_is_not_text():
    assert text_list("one") == ["one"]
    assert text_list((b"caf\xc3\xa9", np.str_("x"))) == ["café", "x"]
    assert text_list(np.array([b"a", b"\xff"])) == ["a", "\ufffd"]
    with pytest.raises(TypeError, match="questions must be a list or array of strings; got int"):
        text_list(3, "questions")
    with pytest.raises(TypeError, match=r"texts\[2\] is float, not a string"):
        text_list(["a", "b", 1.5])


def test_text_pairs_takes_one_list_or_a_pair_of_equal_lists():
    assert text_pairs(("q", "c")) == (["q"], ["c"])
    assert text_pairs(["a", "b"]) == (["a", "b"], None)
    with pytest.raises(ValueError, match="Got 2 questions but 1 contexts: they pair up one to one"):
        text_pairs((["a", "b"], ["c"]), ("questions", "contexts"))
    with pytest.raises(ValueError, match=r"Expected texts, or a tuple \(texts, pairs\); got a tuple of 3"):
        text_pairs(("a", "b", "c"))
    with pytest.raises(TypeError, match=r"pairs\[0\] is None"):
        text_pairs((["a"], [None]))
