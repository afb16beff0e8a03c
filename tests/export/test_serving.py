"""kbert.export.serving: the export spec and the serving graphs, called directly (no SavedModel, no TFLite)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.export.serving import ExportSpec, model_kind_of, serving_functions, text_input_names
from tests.export.conftest import TENSORFLOW_ONLY, numpy_mean_pool, small_backbone

pytestmark = TENSORFLOW_ONLY
LABELS = ("negative", "neutral", "positive")
# 2, 3 and 9 words: with [CLS] and [SEP], 4, 5 and 11 tokens, so only the last is cut at 8.
TEXTS = ["the film", "the film was", "a bad film a bad film a bad film"]


def numpy_softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def test_the_spec_refuses_what_it_cannot_export():
    with pytest.raises(ValueError, match="model_kind must be one of"):
        ExportSpec("pretrainer")
    with pytest.raises(ValueError, match="padding must be one of"):
        ExportSpec("classifier", padding="do_not_pad")
    with pytest.raises(ValueError, match="at least 1, got 0 and 128"):
        ExportSpec("token_classifier", max_windows=0)
    with pytest.raises(ValueError, match="window_pooling reads long texts through windows: a classifier of single"):
        ExportSpec("classifier", num_texts=2, window_pooling="mean")
    spec = ExportSpec("classifier", 64, label_names=LABELS)
    assert spec.to_dict()["label_names"] == list(LABELS) and spec.to_dict()["max_length"] == 64


def test_model_kinds_and_text_inputs():
    from kbert.tasks import BertClassifier, BertPretrainer, BertQuestionAnswerer, BertTokenClassifier

    backbone = small_backbone()
    assert [model_kind_of(model) for model in (BertClassifier(backbone, 2), BertTokenClassifier(backbone, ["O"]),
                                               BertQuestionAnswerer(backbone), backbone)] == [
        "classifier", "token_classifier", "question_answerer", "backbone"]
    with pytest.raises(ValueError, match="Cannot export a BertPretrainer"):
        model_kind_of(BertPretrainer(backbone))
    assert text_input_names(ExportSpec("classifier")) == ("texts",)
    assert text_input_names(ExportSpec("classifier", num_texts=2)) == ("texts", "pairs")
    assert text_input_names(ExportSpec("question_answerer", num_texts=2)) == ("questions", "contexts")


def test_classifier_graphs_give_the_keras_model_outputs(tokenizer):
    from kbert.tasks import BertClassifier

    model = BertClassifier(small_backbone(), 3, label_names=LABELS)
    functions = serving_functions(model, tokenizer, ExportSpec("classifier", 8, label_names=LABELS))
    batch = tokenizer(TEXTS, max_length=8)
    logits = keras.ops.convert_to_numpy(model(batch))
    expected = numpy_softmax(logits)
    out = {key: value.numpy() for key, value in functions["serving_default"](tf.constant(TEXTS)).items()}
    assert sorted(out) == ["empty", "label", "label_id", "probabilities", "probability", "truncated"]
    assert out["empty"].tolist() == [False] * 3
    np.testing.assert_allclose(out["probabilities"], expected, atol=1e-5)
    np.testing.assert_allclose(out["probability"], expected.max(-1), atol=1e-5)
    assert out["label_id"].tolist() == expected.argmax(-1).tolist()
    assert [label.decode() for label in out["label"]] == [LABELS[i] for i in expected.argmax(-1)]
    assert out["truncated"].tolist() == [False, False, True]
    ids = functions["token_ids"](*(tf.constant(batch[key]) for key in ("token_ids", "segment_ids", "padding_mask")))
    np.testing.assert_allclose(ids["logits"].numpy(), logits, atol=1e-5)
    np.testing.assert_allclose(ids["probabilities"].numpy(), expected, atol=1e-5)


def test_a_multi_label_classifier_serves_a_sigmoid_per_class(tokenizer):
    from kbert.tasks import BertClassifier

    model = BertClassifier(small_backbone(), 3, label_names=LABELS, multi_label=True, threshold=0.6)
    model.get_layer("logits").bias.assign(np.array([4.0, -4.0, 0.0], "float32"))  # clearly chosen, clearly not, near
    spec = ExportSpec("classifier", 8, label_names=LABELS, multi_label=True, threshold=0.6)
    functions = serving_functions(model, tokenizer, spec)
    batch = tokenizer(TEXTS, max_length=8)
    logits = keras.ops.convert_to_numpy(model(batch))
    expected = 1 / (1 + np.exp(-logits))
    out = {key: value.numpy() for key, value in functions["serving_default"](tf.constant([*TEXTS, ""])).items()}
    assert sorted(out) == ["chosen", "empty", "probabilities", "truncated"]
    np.testing.assert_allclose(out["probabilities"][:3], expected, atol=1e-5)
    assert out["chosen"][:3].tolist() == (expected >= 0.6).tolist() and out["chosen"][:3, 0].all()
    assert not out["chosen"][:3, 1].any() and out["empty"].tolist() == [False] * 3 + [True]
    assert not out["chosen"][3].any() and not out["probabilities"][3].any()  # an empty text: no class
    ids = functions["token_ids"](*(tf.constant(batch[key]) for key in ("token_ids", "segment_ids", "padding_mask")))
    np.testing.assert_allclose(ids["probabilities"].numpy(), expected, atol=1e-5)


def test_a_classifier_reading_windows_combines_them_by_the_max(tokenizer):
    """The serving graph of a classifier reading windows with window_pooling "max" (the export of "mean":
    tests/export/test_classifier_export.py) gives BertClassifier.predict's probabilities."""
    from kbert.tasks import BertClassifier, BertTextClassifierPreprocessor

    preprocessor = BertTextClassifierPreprocessor(tokenizer, 8, doc_stride=3)
    model = BertClassifier(small_backbone(), 3, label_names=LABELS, preprocessor=preprocessor, window_pooling="max")
    spec = ExportSpec("classifier", 8, label_names=LABELS, window_pooling="max", doc_stride=3)
    out = serving_functions(model, tokenizer, spec)["serving_default"](tf.constant([*TEXTS, ""]))
    assert out["windows"].numpy().tolist() == [1, 1, 2, 1]  # 9 tokens: windows of 6 starting 3 apart
    np.testing.assert_allclose(out["probabilities"].numpy()[:3], model.predict(TEXTS, verbose=0), atol=1e-5)
    assert out["empty"].numpy().tolist() == [False] * 3 + [True]


def test_a_regressor_serves_its_score(tokenizer):
    from kbert.tasks import BertClassifier

    model = BertClassifier(small_backbone(), 1)
    functions = serving_functions(model, tokenizer, ExportSpec("classifier", 8, num_texts=2))
    out = functions["serving_default"](tf.constant([*TEXTS[:2], "the film"]), tf.constant([*TEXTS[1:], " \u200b"]))
    expected = keras.ops.convert_to_numpy(model(tokenizer(TEXTS[:2], TEXTS[1:], max_length=8)))[:, 0]
    assert sorted(out) == ["empty", "score", "truncated"]
    np.testing.assert_allclose(out["score"].numpy()[:2], expected, atol=1e-5)
    assert np.isnan(out["score"].numpy()[2]) and out["empty"].numpy().tolist() == [False, False, True]  # no pair
    assert out["truncated"].numpy().tolist() == [False, True, False]  # 2 + 3 + 3 tokens fit in 8; 3 + 9 + 3 do not


def test_backbone_graphs_give_mean_pooled_embeddings(tokenizer):
    backbone = small_backbone()
    functions = serving_functions(backbone, tokenizer, ExportSpec("backbone", 12, padding="longest"))
    batch = tokenizer(TEXTS, max_length=12, padding="longest")
    expected = numpy_mean_pool(keras.ops.convert_to_numpy(backbone(batch)["sequence_output"]), batch["padding_mask"])
    out = functions["serving_default"](tf.constant(TEXTS))
    np.testing.assert_allclose(out["embeddings"].numpy(), expected, atol=1e-5)
    assert out["truncated"].numpy().tolist() == [False, False, False]
    signature = functions["token_ids"].input_signature
    assert [(spec.name, spec.shape.as_list()) for spec in signature] == [
        ("token_ids", [None, None]), ("segment_ids", [None, None]), ("padding_mask", [None, None])]
