"""BertTokenClassifier: the Dense head on each token, tag names to ids, predict through all windows, saving."""

import json

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from tests.conftest import TINY, tiny_batch

LABELS = ["O", "B-PER", "I-PER"]


def test_token_classifier_config_and_save_round_trip(tmp_path):
    model = BertTokenClassifier(BertBackbone(**TINY), LABELS, dropout=0.2)
    config = model.get_config()
    json.dumps(config)
    assert BertTokenClassifier.from_config(config).get_config() == config
    batch = tiny_batch()
    assert tuple(model(batch).shape) == (3, 7, 3)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    assert loaded.label_names == LABELS and loaded.dropout == 0.2
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(batch)),
                               keras.ops.convert_to_numpy(model(batch)), atol=1e-6)


def test_logits_are_a_dense_layer_on_each_token_vector():
    """sequence_output @ kernel + bias, in numpy, at every position (padding too)."""
    model = BertTokenClassifier(BertBackbone(**TINY), LABELS)
    head = model.get_layer("logits")
    head.bias.assign(np.array([0.5, -1.0, 2.0], "float32"))  # zeros at first: make the bias count
    batch = tiny_batch()
    tokens = keras.ops.convert_to_numpy(model.backbone(batch)["sequence_output"])
    expected = tokens @ keras.ops.convert_to_numpy(head.kernel) + [0.5, -1.0, 2.0]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(batch)), expected, atol=1e-5)


def test_check_labels_maps_names_to_ids_and_refuses_others():
    model = BertTokenClassifier(BertBackbone(**TINY), LABELS)
    ids = model.check_labels([["B-PER", "I-PER", "O"], [2, 0], np.array([1])])
    assert [tags.tolist() for tags in ids] == [[1, 2, 0], [2, 0], [1]]
    assert all(tags.dtype == np.int32 for tags in ids) and model.check_labels(None) is None
    with pytest.raises(ValueError, match="Example 1: tag 'B-LOC' is not one of"):
        model.check_labels([["O"], ["O", "B-LOC"]])
    with pytest.raises(ValueError, match=r"Example 0: tag ids must lie in \[0, 3\); got \[0, 3\]"):
        model.check_labels([[0, 3]])


@pytest.mark.parametrize("names", [[], ["O", "B-PER", "O"]])
def test_label_names_must_be_distinct_and_not_empty(names):
    with pytest.raises(ValueError, match="label_names must be distinct and not empty"):
        BertTokenClassifier(BertBackbone(**TINY), names)


def test_ner_predict_reads_long_texts_through_all_windows():
    model = BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-PER"], sequence_length=8)
    text = " ".join(["Ann"] * 40)
    assert len(model.preprocessor.prepare([text]).windows) == 7  # 6 words a window
    [result] = model.predict([text], verbose=0)
    assert len(result["tags"]) == 40


def test_fit_weighs_each_sentences_words_by_its_sample_weight_in_memory_and_from_tf_data():
    """One step at learning rate 0, plain and weighed: Keras divides both sums by the batch's size, so their ratio is
    the sum of sentence weight x cross-entropy over the words' first pieces over the plain sum, computed here."""
    import tensorflow as tf

    from kbert.tasks import BertTokenClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    keras.utils.set_random_seed(1)
    preprocessor = BertTokenClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertTokenClassifier(BertBackbone(**TINY, dropout=0.0), LABELS, preprocessor=preprocessor, dropout=0.0)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    words = [["a", "man", "plays"], ["someone", "is", "fun", "and", "good"]]
    tags = [[0, 1, 0], [1, 2, 0, 0, 0]]
    weights = np.array([3.0, 0.5])
    prepared = preprocessor.prepare(words, [np.array(t) for t in tags])
    assert len(prepared.y) == 2  # a window a sentence: row i is sentence i
    logits = keras.ops.convert_to_numpy(model(prepared.inputs)).astype("float64")
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    losses = -np.take_along_axis(log_probabilities, prepared.y[..., None], -1)[..., 0] * (prepared.sample_weight > 0)
    expected = np.sum(weights[:, None] * losses) / np.sum(losses)

    def loss(data, **kwargs):
        return model.fit(data, epochs=1, shuffle=False, verbose=0, **kwargs).history["loss"][0]

    in_memory = loss(words, y=tags, sample_weight=weights) / loss(words, y=tags)
    columns = (tf.ragged.constant(words), tf.ragged.constant(tags))
    weighed = tf.data.Dataset.from_tensor_slices((*columns, weights)).ragged_batch(2)
    from_tf_data = loss(weighed) / loss(tf.data.Dataset.from_tensor_slices(columns).ragged_batch(2))
    assert in_memory == pytest.approx(expected, rel=1e-4) and from_tf_data == pytest.approx(expected, rel=1e-4)
