import json

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.tasks import BertClassifier
from tests.conftest import TINY, tiny_batch


def test_config_round_trip_keeps_label_names():
    model = BertClassifier(BertBackbone(**TINY), 3, dropout=0.2, label_names=["e", "n", "c"])
    config = model.get_config()
    json.dumps(config)
    again = BertClassifier.from_config(config)
    assert again.get_config() == config and again.label_names == ["e", "n", "c"]


def test_outputs_logits_or_one_score():
    batch = tiny_batch()
    assert tuple(BertClassifier(BertBackbone(**TINY), 3)(batch).shape) == (3, 3)
    regressor = BertClassifier(BertBackbone(**TINY), 1)
    assert regressor.regression and tuple(regressor(batch).shape) == (3, 1)
    with pytest.raises(ValueError, match="2 label_names for num_classes=3"):
        BertClassifier(BertBackbone(**TINY), 3, label_names=["a", "b"])


def test_head_computes_in_float32_under_mixed_precision():
    model = BertClassifier(BertBackbone(**TINY, dtype="mixed_bfloat16"), 2)
    assert model.get_layer("logits").compute_dtype == "float32"
    assert ops.convert_to_numpy(model(tiny_batch())).dtype == np.float32


def test_saved_model_round_trip(tmp_path):
    model = BertClassifier(BertBackbone(**TINY), 2, label_names=["neg", "pos"])
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert isinstance(loaded, BertClassifier) and loaded.label_names == ["neg", "pos"]
    batch = tiny_batch()
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(batch)), ops.convert_to_numpy(model(batch)), atol=1e-6)


def test_predict_on_raw_texts_matches_one_by_one_in_input_order():
    """Served longest first in batches of similar length (jit-compiled shapes on JAX), returned in order."""
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=TINY["max_sequence_length"])
    model = BertClassifier(BertBackbone(**TINY), 3, preprocessor=preprocessor)
    texts = ["", "good " * 10000, "a film", "not very good and boring", "", "fun"]
    one_by_one = np.concatenate([model.predict([text], verbose=0) for text in texts])
    for batch_size in (1, 2, 4, 100):
        np.testing.assert_allclose(model.predict(texts, batch_size=batch_size, verbose=0), one_by_one, atol=1e-5)


def test_duplicate_label_names_are_refused():
    """Issue 43: ["a", "a"] was accepted, and class 1 could never be a target."""
    with pytest.raises(ValueError, match=r"label_names must be distinct: \['a'\] appear more than once in "
                                         r"\['a', 'a', 'b'\]"):
        BertClassifier(BertBackbone(**TINY), num_classes=3, label_names=["a", "a", "b"])


@pytest.mark.parametrize("x, y, message", [
    ([], [], "BertClassifier.fit got no examples: nothing to train on"),
    (["a", "b", "c"], [0, 1], "BertClassifier.fit got 3 examples but 2 labels: give one label per example"),
    (["a", "b"], None, "BertClassifier.fit needs a label for each of its 2 examples (y); got None"),
    ((["a", "b"], ["c", "d"]), [1], "got 2 examples but 1 labels"),
    (["a film", " \u200b "], [0, 1], "BertClassifier.fit: text 1 is empty (no tokens"),
    ((["a", "b"], ["c", ""]), [0, 1], "BertClassifier.fit: text 1 is empty"),
])
def test_fit_refuses_examples_it_cannot_train_on_before_any_step(x, y, message):
    """Issue 43: 3 texts with 2 labels was an IndexError; fit([], []) and fit(texts, None) failed inside Keras."""
    import re

    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertClassifier(BertBackbone(**TINY), 2, preprocessor=preprocessor)
    with pytest.raises(ValueError, match=re.escape(message)):
        model.fit(x, y, epochs=1, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 0


def multi_label_model(**kwargs):
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    return BertClassifier(BertBackbone(**TINY), 3, preprocessor=preprocessor, label_names=["a", "b", "c"],
                          multi_label=True, **kwargs)


def test_multi_label_trains_with_binary_cross_entropy_on_sigmoid_outputs():
    """The compiled loss on token ids is binary cross-entropy worked in numpy from the model's logits, and
    `predict`'s probabilities their sigmoid (not a softmax: the rows do not sum to 1)."""
    model = multi_label_model()
    model.compile()
    batch, targets = tiny_batch(), np.array([[1, 0, 1], [0, 0, 0], [0, 1, 1]], "float32")
    logits = ops.convert_to_numpy(model(batch)).astype("float64")
    probabilities = 1 / (1 + np.exp(-logits))
    expected = -np.mean(targets * np.log(probabilities) + (1 - targets) * np.log(1 - probabilities))
    assert float(model.evaluate(batch, targets, verbose=0)[0]) == pytest.approx(expected, rel=1e-4)
    np.testing.assert_allclose(model.decode(logits, None), probabilities, atol=1e-6)


def test_multi_label_fits_names_ids_and_matrices_alike_and_keeps_its_threshold(tmp_path):
    texts = ["a film", "fun", "not very good", "boring"]
    names = [["a", "c"], [], ["b"], "c"]  # a str alone is one name
    model = multi_label_model(threshold=0.3)
    expected = np.array([[1, 0, 1], [0, 0, 0], [0, 1, 0], [0, 0, 1]], "float32")
    for labels in (names, [[0, 2], [], [1], [2]], expected):
        np.testing.assert_array_equal(model.check_labels(labels), expected)
    model.fit(texts, names, epochs=1, verbose=0)
    assert model.labels_of([[0.2, 0.3, 0.9]]) == [["b", "c"]]
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert (loaded.multi_label, loaded.threshold) == (True, 0.3)
    np.testing.assert_allclose(loaded.predict(texts, verbose=0), model.predict(texts, verbose=0), atol=1e-6)


def test_multi_label_rows_wider_than_the_texts_train_whole():
    """12 classes, texts of 4 tokens: each batch's label rows keep all 12 columns (not cut to its 8 tokens), so
    the loss `fit` reports is the mean binary cross-entropy over every class, worked in numpy."""
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertClassifier(BertBackbone(**{**TINY, "dropout": 0.0}), 12, preprocessor=preprocessor, dropout=0.0,
                           multi_label=True)
    texts, targets = ["a film", "fun"], np.eye(12, dtype="float32")[[3, 11]]
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    probabilities = model.predict(texts, verbose=0).astype("float64")
    expected = -np.mean(targets * np.log(probabilities) + (1 - targets) * np.log(1 - probabilities))
    history = model.fit(texts, targets, batch_size=2, epochs=1, verbose=0)
    assert history.history["loss"][0] == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("labels, message", [
    ([["a", "d"], ["b"]], "Label row 0 names 'd', not one of the label names ['a', 'b', 'c']"),
    ([[0], [3]], "Label row 1 holds 3, outside the 3 classes (ids 0 to 2)"),
    ([["a"], 1], "Label row 1 is 1: a multi-label row is a list of class names or ids"),
    (np.array([[1, 0, 2], [0, 0, 1]]), "Label row 0 is [1.0, 0.0, 2.0]: a 0/1 matrix holds 0 or 1 only"),
    (np.array([[1, 0], [0, 1]]), "must have shape (texts, 3), not (2, 2)"),
])
def test_a_bad_multi_label_row_is_named_before_any_step(labels, message):
    import re

    model = multi_label_model()
    with pytest.raises(ValueError, match=re.escape(message)):
        model.fit(["a film", "fun"], labels, epochs=1, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 0


def test_multi_label_arguments_are_checked():
    with pytest.raises(ValueError, match="multi_label=True takes num_classes of 2 or more"):
        BertClassifier(BertBackbone(**TINY), 1, multi_label=True)
    with pytest.raises(ValueError, match="threshold=1.0 is not a probability strictly between 0 and 1"):
        BertClassifier(BertBackbone(**TINY), 2, multi_label=True, threshold=1.0)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="tf.data pipelines: TensorFlow")
def test_multi_label_on_a_tf_data_dataset_takes_a_0_1_matrix():
    import tensorflow as tf

    model = multi_label_model()
    texts = tf.constant(["a film", "fun", "boring"])
    matrix = tf.constant([[1, 0, 1], [0, 0, 0], [0, 1, 0]], "float32")
    model.fit(tf.data.Dataset.from_tensor_slices((texts, matrix)).batch(2), epochs=1, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    with pytest.raises(ValueError, match=r"takes labels as a 0/1 matrix, batches of shape \(batch, 3\)"):
        model.fit(tf.data.Dataset.from_tensor_slices((texts, tf.constant([0, 1, 2]))).batch(2), epochs=1, verbose=0)
    bad = tf.data.Dataset.from_tensor_slices((texts, tf.constant([[1, 0, 2], [0, 0, 0], [0, 1, 0]], "float32")))
    with pytest.raises(Exception, match="multi-label targets must be 0 or 1"):
        model.fit(bad.batch(2), epochs=1, verbose=0)


def _windowed_classifier(window_pooling="mean", train_windows="first", **kwargs):
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=6, doc_stride=2,
                                                  train_windows=train_windows)
    keras.utils.set_random_seed(3)
    return BertClassifier(BertBackbone(**TINY, dropout=0.0), 3, preprocessor=preprocessor,
                          window_pooling=window_pooling, **kwargs)


# ids 13 15 16 23 5 14 7: three windows of 4 tokens at stride 2 (see test_bert_text_classifier_preprocessor.py)
LONG = "a man plays very good film fun"
LONG_WINDOWS = [[2, 13, 15, 16, 23, 3], [2, 16, 23, 5, 14, 3], [2, 5, 14, 7, 3]]


@pytest.mark.parametrize("window_pooling", ["mean", "max"])
def test_a_long_text_is_predicted_from_all_its_windows(window_pooling):
    model = _windowed_classifier(window_pooling)
    logits = [ops.convert_to_numpy(model(tiny_batch_of(ids)))[0] for ids in LONG_WINDOWS]
    combined = np.mean(logits, axis=0) if window_pooling == "mean" else np.max(logits, axis=0)
    expected = np.exp(combined) / np.exp(combined).sum()
    short = ops.convert_to_numpy(ops.softmax(model(tiny_batch_of([2, 9, 3]))))[0]  # "bad": one window
    np.testing.assert_allclose(model.predict([LONG, "bad", LONG], verbose=0), [expected, short, expected], atol=1e-5)


def tiny_batch_of(ids):
    return {"token_ids": np.array([ids], "int32"), "segment_ids": np.zeros((1, len(ids)), "int32"),
            "padding_mask": np.ones((1, len(ids)), "int32")}


@pytest.mark.parametrize("train_windows, steps", [("first", 1), ("all", 2)])
def test_training_reads_the_first_or_every_window_of_a_long_text(train_windows, steps, tmp_path):
    model = _windowed_classifier(train_windows=train_windows)
    model.fit([LONG, "bad"], [2, 0], batch_size=2, epochs=1, verbose=0)  # first: 2 rows (1 batch); all: 3 + 1 (2)
    assert int(ops.convert_to_numpy(model.optimizer.iterations)) == steps
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert (loaded.window_pooling, loaded.preprocessor.doc_stride, loaded.preprocessor.train_windows) == (
        "mean", 2, train_windows)
    np.testing.assert_allclose(loaded.predict([LONG], verbose=0), model.predict([LONG], verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="window_pooling must be one of"):
        _windowed_classifier("median")


@pytest.mark.parametrize("window_pooling, train_windows", [("mean", "first"), ("max", "all")])
def test_evaluate_scores_each_long_text_once_as_predict_combines_its_windows(window_pooling, train_windows):
    """Issue 55: evaluate scored window rows (each text's first window, or all of them), not the texts `predict`
    answers for. The reference: cross-entropy and accuracy worked in numpy from `predict`'s probabilities."""
    model = _windowed_classifier(window_pooling, train_windows)
    texts, labels, weights = [LONG, "bad", "a man plays very good film"], np.array([2, 0, 1]), np.array([1.0, 0.5, 2.0])
    probabilities = model.predict(texts, verbose=0).astype("float64")
    picked = probabilities[np.arange(3), labels]
    scores = model.evaluate(texts, labels, verbose=0, return_dict=True)
    assert scores["loss"] == pytest.approx(-np.log(picked).mean(), rel=1e-5)
    assert scores["accuracy"] == pytest.approx(np.mean(probabilities.argmax(-1) == labels))
    weighted = model.evaluate(texts, labels, sample_weight=weights, verbose=0)
    assert weighted[0] == pytest.approx(-(weights * np.log(picked)).sum() / 3, rel=1e-5)
    with pytest.raises(ValueError, match=r"BertClassifier.evaluate got 3 examples but 2 labels"):
        model.evaluate(texts, labels[:2], verbose=0)


def test_fit_on_class_names_without_label_names_takes_them_sorted_and_keeps_them(tmp_path):
    """Issue 55: "Label 0 is 'pos', not one of the label names None"."""
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)
    model.fit(["a gripping film", "dull", "great fun"], ["pos", "neg", "pos"], verbose=0)
    assert model.label_names == ["neg", "pos"] and model.labels_of([[0.1, 0.9]]) == ["pos"]
    model.save(tmp_path / "model.keras")
    assert keras.saving.load_model(tmp_path / "model.keras").label_names == ["neg", "pos"]
    model.fit(["fine"], ["neg"], verbose=0)  # names now the model's: one class in a fit is fine
    tagger = BertClassifier.from_preset("bert_tiny", num_classes=3, multi_label=True, sequence_length=16)
    tagger.fit(["a", "b"], [["sports", "arts"], ["politics"]], verbose=0)
    assert tagger.label_names == ["arts", "politics", "sports"]


@pytest.mark.parametrize("num_classes, labels, message", [
    (3, ["pos", "neg", "pos"], "BertClassifier.fit got labels as class names, 2 of them (['neg', 'pos']), for "
                               "num_classes=3 and no label_names: pass label_names=[...] to from_preset"),
    (2, [1, "pos", 0], "Labels mix class names and ids: label 0 is 1 but label 1 is 'pos'; give all as names or "
                       "all as ids."),
    (2, np.array(["pos", 1], dtype=object), "Labels mix class names and ids: label 0 is 'pos' but label 1 is 1"),
])
def test_class_names_that_cannot_be_the_classes_are_refused_before_any_step(num_classes, labels, message):
    import re

    model = BertClassifier.from_preset("bert_tiny", num_classes=num_classes, sequence_length=16)
    with pytest.raises(ValueError, match=re.escape(message)):
        model.fit(["a", "b", "c"][: len(labels)], labels, verbose=0)
    assert model.label_names is None and int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 0
    named = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"], sequence_length=16)
    with pytest.raises(ValueError, match="Labels mix class names and ids: label 0 is 0 but label 1 is 'pos'"):
        named.fit(["a", "b"], [0, "pos"], verbose=0)  # was taken: "pos" as 1 beside the id 0
    with pytest.raises(ValueError, match="Labels mix class names and ids: label row 0 is 'a' but label row 1 is 1"):
        multi_label_model().fit(["a", "b"], [["a"], [1]], verbose=0)


def test_answers_decode_predict_with_one_tokenization_and_notes(monkeypatch):
    """`answers`: predict's probabilities by name, a note for an empty text and for a text cut to the sequence
    length (its tokens counted by a tokenizer call of its own here), and each text tokenized once."""
    from kbert.text import BertTokenizer
    from kbert_core.classification import EMPTY_TEXT

    model = BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=["a", "b", "c"], sequence_length=8)
    texts = ["a gripping film", " ", "good " * 20, "fun", "one two three four five six"]
    tokenizer, calls = model.preprocessor.tokenizer, []
    cut = [tokenizer([text], max_length=1000)["padding_mask"].sum() > 8 for text in texts]
    call = BertTokenizer.__call__
    monkeypatch.setattr(BertTokenizer, "__call__", lambda self, *args, **kwargs: calls.append(1) or call(
        self, *args, **kwargs))
    answers = model.answers(texts, batch_size=2)
    assert len(calls) == 1
    monkeypatch.undo()
    kept = [i for i, text in enumerate(texts) if text.strip()]
    probabilities = model.predict([texts[i] for i in kept], verbose=0)
    assert answers[1] == {"text": " ", "label": None, "note": EMPTY_TEXT}
    for i, row in zip(kept, probabilities):
        assert answers[i]["text"] == texts[i] and answers[i]["label"] == "abc"[row.argmax()]
        assert answers[i]["probability"] == pytest.approx(row.max(), abs=1e-6)
        np.testing.assert_allclose(list(answers[i]["probabilities"].values()), row, atol=1e-6)
        assert ("note" in answers[i]) == cut[i], (texts[i], answers[i])
    assert cut[2] and answers[2]["note"] == "long input: read its first 8 tokens"


def test_answers_of_pairs_multi_label_and_regressors():
    texts, pairs = ["a film", "a play", "x"], ["a good film", "", "y"]
    regressor = BertClassifier.from_preset("bert_tiny", num_classes=1)
    scores = regressor.predict(([texts[0], texts[2]], [pairs[0], pairs[2]]), verbose=0)
    answers = regressor.answers((texts, pairs))
    assert [sorted(answer) for answer in answers] == [["pair", "score", "text"], ["label", "note", "pair", "text"],
                                                      ["pair", "score", "text"]]
    assert [answers[0]["score"], answers[2]["score"]] == pytest.approx(scores.tolist(), abs=1e-6)
    tagger = BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=["x", "y", "z"], multi_label=True,
                                        threshold=0.5)
    probabilities = tagger.predict(texts, verbose=0)
    for answer, row in zip(tagger.answers(texts), probabilities):
        assert answer["labels"] == [name for name, p in zip("xyz", row) if p >= 0.5]
        np.testing.assert_allclose(list(answer["probabilities"].values()), row, atol=1e-6)
    windowed = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=8, doc_stride=4)
    assert "note" not in windowed.answers(["good " * 20])[0]  # read through all its windows: nothing cut


def test_a_saved_classifier_takes_another_threshold_and_window_pooling_without_a_new_head(tmp_path):
    """from_preset(saved, threshold=..., window_pooling=...) keeps the trained head (it used to build a random one
    on the backbone) and decodes with them; values the constructor refuses are refused."""
    model = BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=["a", "b", "c"], multi_label=True,
                                       sequence_length=16)
    model.get_layer("logits").bias.assign(np.array([2.0, 0.0, -2.0], "float32"))
    model.save(tmp_path / "topics.keras")
    again = BertClassifier.from_preset(tmp_path / "topics.keras", threshold=0.45, window_pooling="max")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(again.get_layer("logits").bias), [2.0, 0.0, -2.0])
    assert (again.threshold, again.window_pooling, again.get_config()["threshold"]) == (0.45, "max", 0.45)
    probabilities = again.predict(["a film"], verbose=0)
    assert again.labels_of(probabilities) == [[name for name, p in zip("abc", probabilities[0]) if p >= 0.45]]
    with pytest.raises(ValueError, match="threshold=1.5 is not a probability"):
        BertClassifier.from_preset(tmp_path / "topics.keras", threshold=1.5)
    with pytest.raises(ValueError, match="window_pooling must be one of"):
        again.set_decoding(window_pooling="sum")
