"""BertTokenClassifierPreprocessor: words or raw texts to windows, each word's tag on its first WordPiece."""

import numpy as np
import pytest

from kbert.tasks import BertTokenClassifier, BertTokenClassifierPreprocessor
from kbert.text import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ann", "sing", "##s", "in", "paris", ".", "bob"]
#              0        1        2        3        4         5      6       7      8     9        10   11
WORDS = [["Ann", "sings"], ["Bob", "in", "Paris", "."]]
TAGS = [[1, 0], [1, 0, 2, 0]]
IDS = [[2, 5, 6, 7, 3, 0], [2, 11, 8, 9, 10, 3]]
LABELS = [[0, 1, 0, 0, 0, 0], [0, 1, 0, 2, 0, 0]]  # on first pieces; "##s" and the specials get 0
WEIGHTS = [[0, 1, 1, 0, 0, 0], [0, 1, 1, 1, 1, 0]]


def preprocessor(sequence_length=16):
    return BertTokenClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=sequence_length)


def test_prepare_puts_each_words_tag_on_its_first_piece():
    prepared = preprocessor().prepare(WORDS, [np.array(tags) for tags in TAGS])
    assert prepared.inputs["token_ids"].tolist() == IDS
    assert prepared.inputs["padding_mask"].tolist() == [[1, 1, 1, 1, 1, 0], [1] * 6]
    assert not prepared.inputs["segment_ids"].any()
    assert prepared.y.tolist() == LABELS and prepared.sample_weight.tolist() == WEIGHTS
    assert [(text, spans.tolist()) for text, spans in prepared.examples] == [
        ("Ann sings", [[0, 3], [4, 9]]), ("Bob in Paris .", [[0, 3], [4, 6], [7, 12], [13, 14]])]


def test_prepare_of_raw_text_splits_words_at_spaces_and_punctuation():
    prepared = preprocessor().prepare(["Ann sings in Paris."])
    assert prepared.inputs["token_ids"].tolist() == [[2, 5, 6, 7, 8, 9, 10, 3]]
    [(text, spans)] = prepared.examples
    assert text == "Ann sings in Paris." and spans.tolist() == [[0, 3], [4, 9], [10, 12], [13, 18], [18, 19]]
    assert prepared.y is None


def test_prepare_cuts_long_sentences_at_word_boundaries():
    """sequence_length=5 leaves 3 pieces a window: "ann sing ##s" fits, "in" starts the next."""
    prepared = preprocessor(sequence_length=5).prepare([["Ann", "sings", "in"]], [np.array([1, 0, 2])])
    assert prepared.inputs["token_ids"].tolist() == [[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]]
    assert prepared.y.tolist() == [[0, 1, 0, 0, 0], [0, 2, 0, 0, 0]]


def test_prepare_refuses_tags_that_do_not_match_the_words():
    with pytest.raises(ValueError, match="Example 1 has 4 words but 3 tags"):
        preprocessor().prepare(WORDS, [[1, 0], [1, 0, 2]])
    with pytest.raises(TypeError, match=r"x\[1\]\[0\] is None"):
        preprocessor().prepare([["Ann"], [None]])


def test_call_gives_the_same_tags_in_tensorflow_padded_to_a_multiple_of_8():
    tf = pytest.importorskip("tensorflow")
    x, labels, weights = preprocessor()(tf.ragged.constant(WORDS), tf.ragged.constant(TAGS))
    assert x["token_ids"].numpy().tolist() == [row + [0, 0] for row in IDS]
    assert labels.numpy().tolist() == [row + [0, 0] for row in LABELS]
    assert weights.numpy().tolist() == [row + [0, 0] for row in WEIGHTS]
    only_inputs = preprocessor()(tf.constant([["Bob", "in"]]))  # a dense tensor of words, no tags
    assert only_inputs["token_ids"].numpy().tolist() == [[2, 11, 8, 3, 0, 0, 0, 0]]


def test_ner_tf_data_preprocessing_matches_the_windows_on_conll(data_dir):
    """`call` (tf.data) against `prepare` (NerWindows) on 300 real CoNLL sentences at 24 tokens a window, many cut
    into several windows: the same rows, labels and weights (issue 41: `call` truncated them)."""
    tf = pytest.importorskip("tensorflow")
    from kbert.data.readers.conll import read_conll

    sentences = read_conll(data_dir / "conll2003" / "train.txt").take(range(300))
    model = BertTokenClassifier.from_preset("bert_tiny", label_names=sentences.label_names(), sequence_length=24)
    tags = model.check_labels(sentences.tags)
    prepared = model.preprocessor.prepare(sentences.words, tags)
    assert np.sum(np.bincount(prepared.windows.window_texts) > 1) > 50  # sentences of several windows
    labels = [t.tolist() for t in tags]
    data = tf.data.Dataset.from_tensor_slices((tf.ragged.constant(sentences.words), tf.ragged.constant(labels)))
    x, y, weights = model.preprocessor(*next(iter(data.batch(len(labels)))))
    width = prepared.inputs["token_ids"].shape[1]
    assert x["token_ids"].shape[0] == len(prepared.inputs["token_ids"])
    for key, value in prepared.inputs.items():
        np.testing.assert_array_equal(x[key].numpy()[:, :width], value[:, :x[key].shape[1]])
    np.testing.assert_array_equal(y.numpy()[:, :width], prepared.y[:, :y.shape[1]])
    np.testing.assert_array_equal(weights.numpy()[:, :width], prepared.sample_weight[:, :y.shape[1]])


def test_call_cuts_a_long_sentence_into_the_windows_prepare_cuts():
    """Without ../shared: a sentence of three windows (a word of four unknown pieces among them) between two
    short ones, through `call` and `prepare`: the same rows, labels and weights."""
    tf = pytest.importorskip("tensorflow")
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTokenClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    sentences = [["a", "good", "film"], ["the", "man", "plays", "a", "good", "film", "and", "a", "dull", "film",
                                         "U.S.", "fun"], ["fun"]]
    tags = [[1, 2, 0], [0, 1, 2, 0, 0, 1, 2, 0, 1, 2, 1, 0], [1]]
    prepared = preprocessor.prepare(sentences, tags)
    assert len(prepared.inputs["token_ids"]) == 5
    x, labels, weights = preprocessor(tf.ragged.constant(sentences), tf.ragged.constant(tags))
    np.testing.assert_array_equal(x["token_ids"].numpy(), prepared.inputs["token_ids"])
    np.testing.assert_array_equal(x["padding_mask"].numpy(), prepared.inputs["padding_mask"])
    np.testing.assert_array_equal(labels.numpy(), prepared.y)
    np.testing.assert_array_equal(weights.numpy(), prepared.sample_weight)


def test_call_stops_on_a_sentence_of_more_windows_than_it_reads():
    tf = pytest.importorskip("tensorflow")
    from kbert.tasks.bert_token_classifier_preprocessor import MAX_WINDOWS
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTokenClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=3)  # a token a window
    words, tags = tf.ragged.constant([["fun"] * (MAX_WINDOWS + 1)]), tf.ragged.constant([[0] * (MAX_WINDOWS + 1)])
    data = tf.data.Dataset.from_tensor_slices((words, tags)).batch(1).map(preprocessor)  # as fit maps it
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"a sentence needs more than {MAX_WINDOWS} windows"):
        next(iter(data))


def test_a_sentences_sample_weight_weighs_each_of_its_words_once_in_prepare_and_in_call():
    """Each word weighs its sentence's weight on its first piece, in every window the sentence is cut into: a
    sentence's weights sum to its weight times its words."""
    tf = pytest.importorskip("tensorflow")
    weights = [2.0, 0.5]
    prepared = preprocessor().prepare(WORDS, [np.array(tags) for tags in TAGS], weights)
    assert prepared.sample_weight.tolist() == [[2.0 * w for w in row] for row in WEIGHTS[:1]] + [
        [0.5 * w for w in row] for row in WEIGHTS[1:]]
    _, _, called = preprocessor()(tf.ragged.constant(WORDS), tf.ragged.constant(TAGS), tf.constant(weights))
    assert called.numpy()[:, : len(WEIGHTS[0])].tolist() == prepared.sample_weight.tolist()
    cut = preprocessor(sequence_length=4).prepare(WORDS, [np.array(tags) for tags in TAGS], weights)
    assert len(cut.inputs["token_ids"]) > len(WORDS)  # windows of 2 pieces
    rows_of = cut.windows.window_texts
    assert [float(cut.sample_weight[rows_of == i].sum()) for i in range(2)] == [2.0 * 2, 0.5 * 4]
