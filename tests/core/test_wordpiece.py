"""kbert_core.wordpiece: the pure-Python tokenizer gives kbert's BertTokenizer's ids, offsets and words."""

import keras
import numpy as np
import pytest

from kbert_core import WordPiece

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

TRICKY = [
    "The quick brown fox's \"quote\" (1990-2000) costs $5.99 — e-mail: a@b.com",  # punctuation
    "Ça va?\u200b\x00 naïve café, Straße ΑΒΓ ﬁne №4 Ångström",  # accents, zero-width, NUL, ligature
    "東京は日本の首都です。北京大学 and 서울",  # CJK ideographs split alone; Hangul does not
    "x" * 101 + " " + "é" * 120 + " ok " + "y" * 100,  # words over (and at) 100 characters
    "tab\tnew\nline\r\x07bell\x1b[0m \u2028sep\ufeffbom \ue000private \ufffdreplaced",  # control chars
    "emoji 😀👍🏽 text…¿¡ «guillemets» ‘quotes’",
    "", "   \u3000 ",
]


@pytest.fixture(scope="module")
def tokenizers(minilm_dir):
    from kbert.text import BertTokenizer

    return BertTokenizer.from_hf(minilm_dir), WordPiece(minilm_dir / "vocab.txt")


def test_encode_matches_bert_tokenizer(tokenizers):
    tokenizer, wordpiece = tokenizers
    pairs = [text[::-1] for text in TRICKY]
    for max_length in (16, 64):
        for truncation in ("longest_first", "only_second"):
            for second in (None, pairs):
                expected = tokenizer(TRICKY, second, max_length=max_length, truncation=truncation,
                                     return_offsets=True)
                got = wordpiece.encode(TRICKY, second, max_length=max_length, truncation=truncation)
                for key in ("token_ids", "segment_ids", "padding_mask", "offsets", "word_ids"):
                    np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{key} {truncation}")


def test_tokenize_gives_whole_texts(tokenizers):
    tokenizer, wordpiece = tokenizers
    expected = tokenizer(TRICKY, max_length=512, padding="longest", return_offsets=True)
    for i, text in enumerate(TRICKY):
        ids, spans, words = wordpiece.tokenize(text)
        n = int(expected["padding_mask"][i].sum()) - 2
        assert ids == expected["token_ids"][i, 1 : n + 1].tolist()
        assert spans == [tuple(s) for s in expected["offsets"][i, 1 : n + 1].tolist()]
        assert words == expected["word_ids"][i, 1 : n + 1].tolist()
    assert wordpiece.tokenize("x" * 101) == ([wordpiece.unk], [(0, 101)], [0])

