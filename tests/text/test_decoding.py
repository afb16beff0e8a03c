"""kbert.text.decoding: each tokenizer's `decode` gives the text of Hugging Face's `decode` (the `tokenizers` library's,
which transformers 5 returns as it is), with and without the special tokens, on the ids of real and hard texts and
on random ids (a "##" piece first, bytes cut in the middle of a character, special tokens anywhere)."""

import keras
import numpy as np
import pytest

from kbert.text import ByteLevelBPETokenizer, SentencePieceTokenizer
from kbert.text.decoding import join_byte_level, join_metaspace, join_wordpieces
from tests.core.family_reference import hf_outputs, parity_texts
from tests.text.test_parity import HARD_STRINGS

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def assert_decodes_as(tokenizer, reference, rows):
    """`tokenizer.decode` equals `reference.decode` (a `tokenizers.Tokenizer`) on every row, both ways."""
    for skip in (False, True):
        wrong = [row for row in rows
                 if tokenizer.decode(row, skip_special_tokens=skip) != reference.decode(row, skip_special_tokens=skip)]
        assert not wrong, (skip, len(wrong), wrong[:3], [tokenizer.decode(wrong[0], skip), reference.decode(
            wrong[0], skip_special_tokens=skip)])


def text_rows(tokenizer, texts):
    """The ids of each text, its special tokens included, unpadded."""
    out = tokenizer(texts, max_length=100_000, padding="longest")
    return [row[:n].tolist() for row, n in zip(out["token_ids"], out["padding_mask"].sum(axis=1))]


def random_rows(vocabulary_size, count=400, seed=0):
    """Rows of 1 to 12 ids drawn from the whole vocabulary, a third of them from its first 12 (the special tokens,
    byte-level BPE's first bytes, ALBERT's first pieces)."""
    generator = np.random.default_rng(seed)
    rows = []
    for _ in range(count):
        length = generator.integers(1, 13)
        ids = generator.integers(0, vocabulary_size, length)
        low = generator.random(length) < 1 / 3
        rows.append(np.where(low, generator.integers(0, 12, length), ids).tolist())
    return rows


@pytest.fixture(scope="module")
def family_folders(data_dir, tmp_path_factory):
    """RoBERTa's and ALBERT's tokenizer folders as the family tests train them, each with hf_tokenizer.json: the
    `tokenizers` tokenizer that transformers built from the folder."""
    pytest.importorskip("transformers", reason="transformers is a test-only dependency")
    pytest.importorskip("sentencepiece", reason="sentencepiece trains the test's model")
    folder = tmp_path_factory.mktemp("decoding")
    for family in ("roberta", "albert"):
        hf_outputs(family, data_dir, folder, {})
    return folder


def reference_of(folder):
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(folder / "hf_tokenizer.json"))


def test_wordpiece(tokenizer, hf_tokenizer):
    rows = text_rows(tokenizer, HARD_STRINGS + ["Don't stop, it's 3.5 - 4!", "a ' b n't 've 're ?!"])
    assert_decodes_as(tokenizer, hf_tokenizer, rows + random_rows(tokenizer.vocabulary_size))


def test_byte_level_bpe(family_folders, data_dir):
    tokenizer = ByteLevelBPETokenizer.from_hf(family_folders / "roberta")
    rows = text_rows(tokenizer, parity_texts(data_dir))
    assert_decodes_as(tokenizer, reference_of(family_folders / "roberta"), rows + random_rows(1000))


@pytest.mark.parametrize("name", ["albert", "albert_hub", "albert_added"])
def test_sentence_piece(family_folders, data_dir, name):
    tokenizer = SentencePieceTokenizer.from_hf(family_folders / name)
    rows = text_rows(tokenizer, parity_texts(data_dir))
    assert_decodes_as(tokenizer, reference_of(family_folders / name), rows + random_rows(800))


def test_joiners_by_hand():
    assert join_wordpieces(["##ing", "do not", "'", "x", "##y", "."]) == "##ing don't ' xy."
    assert join_byte_level(["\u0120caf\u00c3", "<mask>", "\u00a9", "\u2581x"]) == " caf\ufffd<mask>\ufffd\u2581x"
    assert join_metaspace(["\u2581a\u2581b", "\u2581c", "d\u2581"]) == "ab cd "
