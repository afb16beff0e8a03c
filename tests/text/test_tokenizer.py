"""BertTokenizer: API, packing and truncation against Hugging Face, offsets, bad input, tf.data."""

import itertools
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from kbert.text import BertTokenizer
from tests.text.reference import rows

TINY_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s", "!"]


def test_vocabulary_api(tokenizer, minilm_dir):
    tokens = (minilm_dir / "vocab.txt").read_text("utf-8").split("\n")[:-1]
    assert tokenizer.vocabulary() == tokens
    assert tokenizer.vocabulary_size == len(tokens) == 30522
    ids = [tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id,
           tokenizer.sep_token_id, tokenizer.mask_token_id]
    assert [tokens[i] for i in ids] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert tokenizer.token_to_id("##ing") == tokens.index("##ing")
    assert tokenizer.id_to_token(2000) == tokens[2000]
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tokenizer.token_to_id("no-such-token")


def test_vocabulary_checks(tmp_path):
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"])
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        BertTokenizer.from_hf(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(TINY_VOCABULARY) + "\n", "utf-8")
    assert BertTokenizer.from_hf(tmp_path).lowercase
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    cased = BertTokenizer.from_hf(tmp_path)
    assert not cased.lowercase
    assert rows(cased(["hi HI Hi"], padding="longest")) == [[2, 5, 1, 1, 3]]
    assert not BertTokenizer.from_vocab(tmp_path).lowercase  # a folder: its config read as from_hf reads it
    assert BertTokenizer.from_vocab(tmp_path / "vocab.txt").lowercase  # the file alone: uncased


@pytest.mark.parametrize("truncation", ["longest_first", "only_second"])
def test_pairs_match_hf(tokenizer, hf_tokenizer, truncation):
    """Every split of lengths 0..9 against 0..9 under odd and even budgets."""
    words = "one two three four five six seven eight nine".split()
    texts = [" ".join(words[:n]) for n in range(10)]
    pairs = list(itertools.product(texts, texts))
    for max_length in (8, 11):
        hf_tokenizer.enable_truncation(max_length, strategy=truncation)
        try:
            fitting = [p for p in pairs if truncation == "longest_first"
                       or len(p[0].split()) + 3 < max_length]
            references = hf_tokenizer.encode_batch(fitting)
        finally:
            hf_tokenizer.no_truncation()
        outputs = tokenizer([a for a, _ in fitting], [b for _, b in fitting],
                            max_length=max_length, truncation=truncation)
        assert outputs["token_ids"].shape == (len(fitting), max_length)
        assert rows(outputs) == [r.ids for r in references]
        for got, mask, reference in zip(outputs["segment_ids"], outputs["padding_mask"],
                                        references):
            assert got[: mask.sum()].tolist() == reference.type_ids
            assert not got[mask.sum():].any()


def test_only_second_cuts_a_long_first_text():
    tokenizer = BertTokenizer(TINY_VOCABULARY)
    outputs = tokenizer("hi hi hi hi", "hi", max_length=4, truncation="only_second")
    assert rows(outputs) == [[2, 5, 3, 3]]


def test_padding_and_single_string():
    tokenizer = BertTokenizer(TINY_VOCABULARY)
    outputs = tokenizer(["hi", "his hi!"], padding="longest", max_length=10)
    assert outputs["token_ids"].tolist() == [[2, 5, 3, 0, 0, 0], [2, 5, 6, 5, 7, 3]]
    assert outputs["padding_mask"].tolist() == [[1, 1, 1, 0, 0, 0], [1] * 6]
    assert all(v.dtype == np.int32 for v in outputs.values())
    single = tokenizer("hi", max_length=5)
    assert single["token_ids"].tolist() == [[2, 5, 3, 0, 0]]
    with pytest.raises(ValueError, match="padding"):
        tokenizer("hi", padding="left")
    with pytest.raises(ValueError, match="truncation"):
        tokenizer("hi", truncation="only_first")
    with pytest.raises(ValueError, match="pairs"):
        tokenizer(["a", "b"], ["c"])


def test_offsets_cover_the_token_text(tokenizer, hf_tokenizer):
    """Each token is its source span, lower-cased without accents (independent of HF)."""
    texts = ["Héllo, WORLD! Ça va? 日本語 O'Neil's naïve-ish", "  spaced\tout\u00a0text  ",
             "Straße İstanbul ΟΔΟΣ", "a\u200bb c\x00d"]
    outputs = tokenizer(texts, max_length=64, return_offsets=True)
    for i, text in enumerate(texts):
        for token_id, (start, end), word in zip(outputs["token_ids"][i], outputs["offsets"][i],
                                                outputs["word_ids"][i]):
            token = tokenizer.id_to_token(token_id)
            if token in ("[CLS]", "[SEP]", "[PAD]"):
                assert (start, end, word) == (0, 0, -1)
                continue
            span = unicodedata.normalize("NFD", text[start:end])
            span = "".join(c for c in span if unicodedata.category(c) not in ("Mn", "Cf", "Cc"))
            assert span.lower() == token.removeprefix("##"), (text, token, start, end)


def test_bad_input_is_defined(tokenizer, hf_tokenizer):
    texts = ["", "   \n\t ", "\x00\x01\u200b", "\ue000\U0010fffd", "☃☃☃ ☃"]
    outputs = tokenizer(texts, max_length=6, return_offsets=True)
    assert rows(outputs)[0][:4] == [[101, 102]] * 3 + [[101, 102]]
    assert rows(outputs)[0][4] == [101, 100, 100, 102]
    with pytest.raises(TypeError, match=r"texts\[1\] is NoneType"):
        tokenizer(["ok", None])
    invalid = tokenizer([b"caf\xc3\xa9 \xff\xfeok", "café ok"], return_offsets=True)
    np.testing.assert_array_equal(invalid["token_ids"][0], invalid["token_ids"][1])
    np.testing.assert_array_equal(tokenizer("a\ud800b")["token_ids"], tokenizer("a?b")["token_ids"])


def test_megabyte_text_is_truncated(tokenizer):
    text = ("word " * 200_000)[:1_000_000]
    outputs = tokenizer([text, "x" * 1_000_000], max_length=16, return_offsets=True)
    assert outputs["token_ids"].shape == (2, 16)
    assert outputs["offsets"][0, 15].tolist() == [0, 0] and outputs["offsets"][0, 14, 1] == 69
    assert rows(outputs)[0][1] == [101, 100, 102]


def test_tf_data_map_matches_call(tokenizer):
    texts = ["The quick brown fox.", "Jumps over the lazy dog!", ""]
    pairs = ["Ask a question?", "Another one", "x"]
    expected = tokenizer(texts, pairs, max_length=12, return_offsets=True)
    dataset = tf.data.Dataset.from_tensor_slices((texts, pairs)).batch(3).map(
        lambda a, b: tokenizer.encode(a, b, max_length=12, return_offsets=True))
    batch = next(iter(dataset))
    for key, value in expected.items():
        np.testing.assert_array_equal(batch[key].numpy(), value)
    single = next(iter(tf.data.Dataset.from_tensor_slices(texts).map(
        lambda t: tokenizer.encode(t, max_length=12))))
    np.testing.assert_array_equal(single["token_ids"].numpy(),
                                  tokenizer(texts[0], max_length=12)["token_ids"][0])


def test_save_round_trip_matches_the_original(tmp_path, tokenizer):
    tokenizer.save(tmp_path)
    again = BertTokenizer.from_hf(tmp_path)
    texts = ["Zürich's café, 12 guests!", "ΟΔΟΣ 東京"]
    assert again.lowercase == tokenizer.lowercase and again.vocabulary() == tokenizer.vocabulary()
    np.testing.assert_array_equal(again(texts)["token_ids"], tokenizer(texts)["token_ids"])


@pytest.mark.parametrize("texts", [[""], ["\ufffd", " \x00 "]])
def test_batch_of_only_empty_texts(tokenizer, texts):
    outputs = tokenizer(texts, max_length=4, return_offsets=True)
    assert outputs["token_ids"].tolist() == [[101, 102, 0, 0]] * len(texts)
    assert outputs["word_ids"].tolist() == [[-1, -1, -1, -1]] * len(texts)
