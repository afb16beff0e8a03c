import numpy as np
import pytest

from kbert.data.windows.ner import NerWindows
from kbert.data.windows.token_rows import word_spans_of
from kbert.text import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "merkel", "paris", "vis", "##ited", ".", "a"]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCABULARY)


def test_first_piece_carries_the_label(tokenizer):
    windows = NerWindows(tokenizer, ["Merkel visited Paris"], [np.array([[0, 6], [7, 14], [15, 20]])],
                         max_length=8, labels=[np.array([3, 0, 1])])
    assert windows.inputs["token_ids"].tolist() == [[2, 5, 7, 8, 6, 3]]
    assert windows.labels.tolist() == [[0, 3, 0, 0, 1, 0]]
    assert windows.sample_weight.tolist() == [[0, 1, 1, 0, 1, 0]]


def test_long_sentences_become_windows_and_every_word_gets_logits(tokenizer):
    text = " ".join(["visited"] * 10)  # 20 pieces
    spans = word_spans_of(tokenizer, [text, "a"])
    windows = NerWindows(tokenizer, [text, "a"], spans, max_length=7)  # 5 pieces a window: 2 words
    assert len(windows) == 6 and windows.window_texts.tolist() == [0, 0, 0, 0, 0, 1]
    logits = np.random.default_rng(0).normal(size=(6, 7, 3))
    per_word = windows.word_logits(logits)
    assert [w.shape for w in per_word] == [(10, 3), (1, 3)]
    assert not np.isnan(per_word[0]).any()
    np.testing.assert_allclose(per_word[0][2], logits[1, 1], rtol=1e-6)  # word 2 opens window 1
    np.testing.assert_allclose(per_word[1][0], logits[5, 1], rtol=1e-6)


def test_word_without_tokens_gets_nan(tokenizer):
    text = "a \x00 a"  # the control character is deleted by BERT's normalizer
    windows = NerWindows(tokenizer, [text], [np.array([[0, 1], [2, 3], [4, 5]])], max_length=8)
    per_word = windows.word_logits(np.ones((1, 8, 2)))[0]
    assert np.isnan(per_word[1]).all() and not np.isnan(per_word[[0, 2]]).any()
