"""BertTextClassifierPreprocessor: texts and text pairs to `[CLS] A [SEP] (B [SEP])`, in Python and in tf.data."""

import numpy as np
import pytest

from kbert.tasks import BertClassifier, BertTextClassifierPreprocessor
from kbert.text import BertTokenizer
from tests.tasks import task_examples as examples
from tests.tasks.conftest import VOCABULARY

# Ids in tests.tasks.conftest.VOCABULARY: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, good 5, fun 7, bad 9, film 14,
# a 13, man 15, plays 16, not 22, very 23.
PAIRS = (["good film", "fun"], ["a man plays very", "bad"])
PAIR_IDS = [[2, 5, 14, 3, 13, 15, 16, 3],  # 2 + 4 tokens and 3 special > 8: the longer segment loses "very"
            [2, 7, 3, 9, 3, 0, 0, 0]]
PAIR_SEGMENTS = [[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]]
PAIR_MASK = [[1] * 8, [1, 1, 1, 1, 1, 0, 0, 0]]


def preprocessor(sequence_length=8):
    return BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=sequence_length)


def test_prepare_packs_pairs_cut_longest_first_and_padded_to_the_longest_row():
    prepared = preprocessor().prepare(PAIRS, y=[1, 0], sample_weight=[0.5, 2.0])
    assert prepared.inputs["token_ids"].tolist() == PAIR_IDS
    assert prepared.inputs["segment_ids"].tolist() == PAIR_SEGMENTS
    assert prepared.inputs["padding_mask"].tolist() == PAIR_MASK
    assert (prepared.y, prepared.sample_weight, prepared.windows) == ([1, 0], [0.5, 2.0], None)


def test_prepare_of_single_texts_lowercases_and_gives_unknown_characters_unk():
    inputs = preprocessor(sequence_length=16).prepare(["Not BAD!", "film"]).inputs
    assert inputs["token_ids"].tolist() == [[2, 22, 9, 1, 3], [2, 14, 3, 0, 0]]
    assert not inputs["segment_ids"].any()
    assert inputs["padding_mask"].tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


def test_call_gives_the_same_ids_in_tensorflow_padded_to_a_multiple_of_8():
    tf = pytest.importorskip("tensorflow")
    x, y = preprocessor(sequence_length=24)((tf.constant(PAIRS[0]), tf.constant(PAIRS[1])), tf.constant([1, 0]))
    assert x["token_ids"].numpy().tolist() == [[2, 5, 14, 3, 13, 15, 16, 23, 3] + [0] * 7,
                                               [2, 7, 3, 9, 3] + [0] * 11]
    assert x["segment_ids"].numpy().tolist() == [[0] * 4 + [1] * 5 + [0] * 7, [0, 0, 0, 1, 1] + [0] * 11]
    assert x["padding_mask"].numpy().sum(axis=1).tolist() == [9, 5]
    assert y.numpy().tolist() == [1, 0]
    x, y, weights = preprocessor()(tf.constant(["film"]), tf.constant([1]), tf.constant([0.5]))
    assert x["token_ids"].numpy().tolist() == [[2, 14, 3, 0, 0, 0, 0, 0]] and weights.numpy().tolist() == [0.5]


def sentence_pairs(data_dir, count=2000):
    """Real STS-B sentence pairs (the toy NLI pairs when the data folder is missing)."""
    path = data_dir / "stsb" / "train.tsv" if data_dir else None
    if path is None or not path.is_file():
        return examples.NLI[0]
    rows = [line.split("\t") for line in path.read_text("utf-8").split("\n")[1 : count + 1] if line]
    return [row[0] for row in rows], [row[1] for row in rows]


def test_the_text_preprocessor_gives_the_tokenizer_ids_in_python_and_in_tf_data():
    tf = pytest.importorskip("tensorflow")
    from kbert.paths import data_dir

    model = BertClassifier.from_preset("bert_tiny", num_classes=3, sequence_length=24)
    premises, hypotheses = sentence_pairs(data_dir() if data_dir().is_dir() else None)
    expected = model.preprocessor.tokenizer(premises, hypotheses, max_length=24, padding="longest")
    prepared = model.preprocessor.prepare((premises, hypotheses)).inputs
    data = tf.data.Dataset.from_tensor_slices((premises, hypotheses)).batch(len(premises)).map(
        lambda a, b: model.preprocessor((a, b)))
    mapped = {key: value.numpy() for key, value in next(iter(data)).items()}
    width = expected["token_ids"].shape[1]
    for key, value in expected.items():
        np.testing.assert_array_equal(prepared[key], value)
        np.testing.assert_array_equal(mapped[key][:, :width], value)
        assert not mapped[key][:, width:].any() and mapped[key].shape[1] % 8 == 0


def test_windows_cover_a_long_text_at_the_stride_and_labelled_texts_give_their_first_or_all():
    # "a man plays very good film fun": ids 13 15 16 23 5 14 7; windows of 4 + [CLS] [SEP], starting every 2 tokens
    windowed = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=6, doc_stride=2)
    prepared = windowed.prepare(["a man plays very good film fun", "bad"])
    assert prepared.inputs["token_ids"].tolist() == [[2, 13, 15, 16, 23, 3], [2, 16, 23, 5, 14, 3],
                                                     [2, 5, 14, 7, 3, 0], [2, 9, 3, 0, 0, 0]]
    assert prepared.inputs["padding_mask"].sum(1).tolist() == [6, 6, 5, 3] and prepared.windows.tolist() == [0, 0, 0, 1]
    labelled = windowed.prepare(["a man plays very good film fun", "bad"], y=np.array([1, 0]))
    first = preprocessor(6).prepare(["a man plays very good film fun", "bad"])  # the first window is the cut text
    assert labelled.inputs["token_ids"].tolist() == first.inputs["token_ids"].tolist() and labelled.y.tolist() == [1, 0]
    every = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), 6, doc_stride=2, train_windows="all")
    labelled = every.prepare(["a man plays very good film fun", "bad"], y=np.array([1, 0]), sample_weight=[2.0, 1.0])
    assert labelled.y.tolist() == [1, 1, 1, 0] and labelled.sample_weight.tolist() == [2.0, 2.0, 2.0, 1.0]
    assert len(labelled.inputs["token_ids"]) == 4


def test_windows_refuse_pairs_tf_data_and_bad_settings():
    import tensorflow as tf

    windowed = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=6, doc_stride=2)
    with pytest.raises(ValueError, match="Windows \\(doc_stride\\) read single texts"):
        windowed.prepare(PAIRS)
    with pytest.raises(ValueError, match="not a tf.data.Dataset"):
        windowed(tf.constant(["good film"]))
    with pytest.raises(ValueError, match="doc_stride must be a positive number"):
        BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), doc_stride=0)
    with pytest.raises(ValueError, match="train_windows must be one of"):
        BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), doc_stride=4, train_windows="last")
    every = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), 6, doc_stride=2, train_windows="all")
    again = BertTextClassifierPreprocessor.from_config(every.get_config())
    assert (again.doc_stride, again.train_windows) == (2, "all")
