"""kbert.data.windows.tensors: SQuAD's strided windows in TensorFlow ops, by hand and against the numpy packing."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.data.readers.squad_example import SquadExample
from kbert.data.windows.squad import SquadWindows
from kbert.data.windows.tensors import pick, question_window_rows, whole_texts, window_rows
from kbert.text import BertTokenizer

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
A, B, C, Q, CLS, SEP = 5, 6, 7, 8, 2, 3


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "?"])


def rows_of(tokenizer, questions, contexts, *args, **kwargs):
    out = question_window_rows(tokenizer, tf.constant(questions), tf.constant(contexts), *args, **kwargs)
    return {key: {k: v.numpy() for k, v in value.items()} if isinstance(value, dict) else value.numpy()
            for key, value in out.items()}


@once
def test_window_rows_and_pick():
    example, window = window_rows(tf.constant([0, 3, 1]))
    assert example.numpy().tolist() == [1, 1, 1, 2] and window.numpy().tolist() == [0, 1, 2, 0]
    assert [x.numpy().tolist() for x in window_rows(tf.constant([], tf.int32))] == [[], []]
    values = tf.reshape(tf.range(12), (2, 3, 2))  # a trailing axis is carried along
    picked = pick(values, tf.constant([1, 0]), tf.constant([[2, -1], [0, 7]]))  # out of range: clipped
    assert picked.numpy().tolist() == [[[10, 11], [6, 7]], [[0, 1], [4, 5]]]


@once
def test_whole_texts_keep_every_token_without_specials(tokenizer):
    ids, offsets, word_ids, lengths = whole_texts(tokenizer, tf.constant(["a b?", "", "c " * 600]))
    assert lengths.numpy().tolist() == [3, 0, 600]  # none cut at 512
    # After a text's tokens: its [SEP], then padding; word ids -1 from its length on.
    assert ids.numpy()[0, :5].tolist() == [A, B, Q, SEP, 0] and ids.numpy()[1, :2].tolist() == [SEP, 0]
    assert offsets.numpy()[0, :3].tolist() == [[0, 1], [2, 3], [3, 4]]
    assert word_ids.numpy()[0, :4].tolist() == [0, 1, 2, -1] and word_ids.numpy()[1, 0] == -1


@once
def test_windows_by_hand(tokenizer):
    # "a?" is 2 tokens: 8 - 2 - 3 = 3 context tokens a window, starting 2 apart over 6 tokens: 3 windows.
    rows = rows_of(tokenizer, ["a?"], ["a b c a b c"], 8, 2, 4)
    assert rows["inputs"]["token_ids"].tolist() == [[CLS, A, Q, SEP, A, B, C, SEP],
                                                    [CLS, A, Q, SEP, C, A, B, SEP],
                                                    [CLS, A, Q, SEP, B, C, SEP, 0]]
    assert rows["inputs"]["segment_ids"].tolist() == [[0] * 4 + [1] * 4] * 2 + [[0] * 4 + [1] * 3 + [0]]
    assert rows["inputs"]["padding_mask"].tolist() == [[1] * 8] * 2 + [[1] * 7 + [0]]
    assert rows["begin"].tolist() == [0, 2, 4] and rows["size"].tolist() == [3, 3, 2]
    assert rows["windows"].tolist() == rows["needed"].tolist() == [3]
    assert rows["source"][1, 4:7].tolist() == [2, 3, 4]
    assert rows["in_context"][2].tolist() == [0] * 4 + [1] * 2 + [0] * 2
    # A stride beyond the window's room moves by the room (3): windows at 0 and 3.
    wide = rows_of(tokenizer, ["a?"], ["a b c a b c"], 8, 5, 4)
    assert wide["begin"].tolist() == [0, 3] and wide["size"].tolist() == [3, 3]


@once
def test_max_windows_width_question_cut_and_empty_context(tokenizer):
    rows = rows_of(tokenizer, ["a?", "a b c a ?"], ["a b c a b c", ""], 9, 1, 3, max_windows=2, width=10)
    # question 0: 9 - 2 - 3 = 4 tokens a window, stride 1 over 6 tokens needs 3 windows, 2 are made;
    # question 1: cut to 3 tokens ("a b c"), room for 3; its empty context gets one empty window.
    assert rows["needed"].tolist() == [3, 1] and rows["windows"].tolist() == [2, 1]
    assert rows["question_cut"].tolist() == [False, True]
    assert rows["inputs"]["token_ids"].tolist() == [[CLS, A, Q, SEP, A, B, C, A, SEP, 0],
                                                    [CLS, A, Q, SEP, B, C, A, B, SEP, 0],
                                                    [CLS, A, B, C, SEP, SEP, 0, 0, 0, 0]]
    assert rows["example"].tolist() == [0, 0, 1] and rows["window"].tolist() == [0, 1, 0]


@once
@pytest.mark.parametrize("max_length, doc_stride", [(8, 1), (9, 2), (10, 3), (12, 128)])
def test_same_rows_as_the_numpy_packing(tokenizer, max_length, doc_stride):
    rng = np.random.default_rng(max_length)
    contexts = [" ".join(rng.choice(list("abc"), n)) for n in (1, 7, 13)]
    questions = ["a?", "b c?", "c"]
    examples = [SquadExample(str(i), q, c) for i, (q, c) in enumerate(zip(questions, contexts))]
    expected = SquadWindows(tokenizer, examples, max_length=max_length, doc_stride=doc_stride)
    rows = rows_of(tokenizer, questions, contexts, max_length, doc_stride, 64, width=max_length)
    assert rows["example"].tolist() == expected.window_examples.tolist()
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(rows["inputs"][key], expected.inputs[key], err_msg=key)
