"""kbert_core.classification: the blank-text rule against BERT's normalizer's character classes, and the
probabilities against their definitions (softmax, sigmoid) written out here."""

import math

import keras
import numpy as np
import pytest

from kbert_core import class_probabilities, is_blank

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@pytest.mark.parametrize("text, pair, blank", [
    ("", None, True), (" \t\n", None, True),
    ("\u200b\u3000", None, True),  # a zero-width space (format, dropped) and an ideographic space
    ("\x00\ufffd", None, True),  # NUL and the replacement character: BERT's normalizer drops both
    ("a", None, False), (".", None, False), ("\u00e9", None, False),
    ("a", "", True), ("", "b", True), ("a", " ", True), ("a", "b", False),
    (b"  ", None, True), (b"ok", None, False), (b"\xff", None, False),  # bytes: text.tflite's input; bad UTF-8 is [UNK]
])
def test_blank_is_no_token_in_the_text_or_its_pair(text, pair, blank):
    assert is_blank(text, pair) is blank


def test_accents_alone_are_blank_when_lowercasing_strips_them():
    """A combining accent is dropped by the uncased normalizer (accents stripped) and kept by the cased one."""
    assert is_blank("\u0301") and not is_blank("\u0301", lowercase=False)


def test_softmax_and_sigmoid_as_defined():
    logits = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    softmax = class_probabilities(logits)
    expected = [math.exp(v) / sum(math.exp(w) for w in (1.0, 2.0, 3.0)) for v in (1.0, 2.0, 3.0)]
    np.testing.assert_allclose(softmax[0], expected, rtol=1e-12)
    np.testing.assert_allclose(softmax[1], [1.0, 0.0, 0.0])  # no overflow on large logits
    sigmoid = class_probabilities(np.array([[0.0, 2.0, -3.0]]), multi_label=True)
    np.testing.assert_allclose(sigmoid[0], [0.5, 1 / (1 + math.exp(-2.0)), 1 / (1 + math.exp(3.0))], rtol=1e-12)
