"""BertSentenceEncoderPreprocessor: each text encoded on its own; an example's texts stacked by `prepare` and
served as consecutive rows (`PaddedBatches`), given as those rows by `call` in tf.data; columns checked."""

import numpy as np
import pytest

from kbert.data.batches.padded import PaddedBatches
from kbert.tasks import BertSentenceEncoderPreprocessor
from kbert.tasks.bert_sentence_encoder_preprocessor import text_columns
from kbert.text import BertTokenizer
from tests.tasks.conftest import VOCABULARY

# Ids in tests.tasks.conftest.VOCABULARY: [CLS] 2, [SEP] 3, good 5, fun 7, bad 9, a 13, film 14, man 15, plays 16
ANCHORS, POSITIVES, NEGATIVES = ["a man plays", "fun"], ["a film", "good good"], ["bad", "a bad film"]


def preprocessor():
    return BertSentenceEncoderPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)


def test_prepare_stacks_each_examples_texts_and_the_batches_serve_them_as_consecutive_rows():
    prepared = preprocessor().prepare((ANCHORS, POSITIVES, NEGATIVES), y=np.zeros(2))
    assert prepared.inputs["token_ids"].tolist() == [[[2, 13, 15, 16, 3], [2, 13, 14, 3, 0], [2, 9, 3, 0, 0]],
                                                     [[2, 7, 3, 0, 0], [2, 5, 5, 3, 0], [2, 13, 9, 14, 3]]]
    x, y = PaddedBatches(prepared.inputs, prepared.y, batch_size=2)[0]
    assert x["token_ids"].tolist() == [row for example in prepared.inputs["token_ids"].tolist() for row in example]
    assert x["padding_mask"].shape == (6, 5) and y.shape == (2,)
    assert preprocessor().prepare(ANCHORS).inputs["token_ids"].tolist() == [[2, 13, 15, 16, 3], [2, 7, 3, 0, 0]]


def test_call_gives_the_rows_of_prepare_in_tensorflow():
    import tensorflow as tf

    x = preprocessor()((tf.constant(ANCHORS), tf.constant(POSITIVES)))
    prepared = preprocessor().prepare((ANCHORS, POSITIVES)).inputs
    for key, value in prepared.items():
        rows = value.reshape(-1, value.shape[-1])  # each example's texts one after another
        assert x[key].numpy()[:, : rows.shape[1]].tolist() == rows.tolist() and not x[key].numpy()[:, 5:].any()
    assert x["token_ids"].shape[1] == 8  # padded to a multiple of 8


def test_columns_pair_up_row_by_row():
    assert text_columns((np.array(["a", "b"]), ["c", "d"])) == [["a", "b"], ["c", "d"]]
    with pytest.raises(ValueError, match="different lengths: 2 texts, 1 pairs"):
        text_columns((["a", "b"], ["c"]))
    with pytest.raises(ValueError, match="a tuple of 4"):
        text_columns((["a"], ["b"], ["c"], ["d"]))
    with pytest.raises(TypeError, match=r"column 1\[0\] is None"):
        text_columns((["a"], [None]))
