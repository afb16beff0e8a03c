"""SavedModel and TFLite exports of a sentence classifier give the Keras model's answers on raw text."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.export import export_saved_model, export_tflite, load_exportable
from kbert.export.tflite import interpreter
from kbert.tasks import BertClassifier
from kbert.training import write_run_folder
from tests.export.conftest import EMPTY_BATCHES, TENSORFLOW_ONLY, TEXTS, tiny_backbone

pytestmark = TENSORFLOW_ONLY

LABELS = ["negative", "neutral", "positive"]
MAX_LENGTH = 24


@pytest.fixture(scope="module")
def run(tmp_path_factory, tokenizer):
    folder = tmp_path_factory.mktemp("runs") / "sst"
    model = BertClassifier(tiny_backbone(), 3, label_names=LABELS)
    write_run_folder(folder, model, tokenizer, {"task": "sentiment", "max_length": MAX_LENGTH}, {"loss": [1.0]})
    return folder


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    model, tokenizer, spec = load_exportable(run)
    export_saved_model(model, tokenizer, spec, root / "saved")
    export_tflite(model, tokenizer, spec, root / "tflite")
    return model, tokenizer, root


def keras_probabilities(model, tokenizer, texts, pairs=None):
    batch = tokenizer(texts, pairs, max_length=MAX_LENGTH)
    return keras.ops.convert_to_numpy(keras.ops.softmax(model(batch), axis=-1))


def text_signature_probabilities(model, tokenizer, texts):
    """What the text signatures give: the Keras model's probabilities, and 0 for a text without tokens."""
    from kbert_core.classification import is_blank

    return keras_probabilities(model, tokenizer, texts) * ~np.array([[is_blank(text)] for text in texts])


def test_saved_model_matches_keras(exported):
    model, tokenizer, root = exported
    served = tf.saved_model.load(str(root / "saved")).signatures["serving_default"]
    out = served(texts=tf.constant(TEXTS))
    expected = text_signature_probabilities(model, tokenizer, TEXTS)
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-4)
    assert [label.decode() for label in out["label"].numpy()] == [
        LABELS[i] if p.any() else "" for i, p in zip(expected.argmax(-1), expected)]
    expected = keras_probabilities(model, tokenizer, TEXTS)  # the token-id signature: the model's outputs
    assert out["truncated"].numpy().tolist() == [False] * 5 + [True, False, False]
    ids = tf.saved_model.load(str(root / "saved")).signatures["token_ids"]
    batch = {k: tf.constant(v) for k, v in tokenizer(TEXTS, max_length=MAX_LENGTH).items()}
    np.testing.assert_allclose(ids(**batch)["probabilities"].numpy(), expected, atol=1e-5)
    assert json.loads((root / "saved" / "export.json").read_text())["label_names"] == LABELS


def test_tflite_fp32_matches_keras(exported):
    model, tokenizer, root = exported
    expected = text_signature_probabilities(model, tokenizer, TEXTS)
    text = interpreter(root / "tflite" / "text.tflite").get_signature_runner()
    out = text(texts=np.array(TEXTS, dtype=object))
    np.testing.assert_allclose(out["probabilities"], expected, atol=1e-4)
    assert [label.decode() for label in out["label"]] == [
        LABELS[i] if p.any() else "" for i, p in zip(expected.argmax(-1), expected)]
    expected = keras_probabilities(model, tokenizer, TEXTS)
    ids = interpreter(root / "tflite" / "token_ids.tflite").get_signature_runner()
    batch = tokenizer(TEXTS, max_length=MAX_LENGTH)
    np.testing.assert_allclose(ids(**batch)["probabilities"], expected, atol=1e-4)
    assert (root / "tflite" / "vocab.txt").is_file()


def test_bad_input_has_defined_outputs(exported):
    """Empty, huge and invalid UTF-8 inputs: same answers from SavedModel and TFLite, no crash."""
    _, _, root = exported
    texts = [b"", b"good " * 20000, b"\xff\xfe bad \xc3", b"ok \xe2\x82", b"\x80film"]
    served = tf.saved_model.load(str(root / "saved")).signatures["serving_default"]
    saved = served(texts=tf.constant(texts))
    lite = interpreter(root / "tflite" / "text.tflite").get_signature_runner()(texts=np.array(texts, dtype=object))
    np.testing.assert_allclose(lite["probabilities"], saved["probabilities"].numpy(), atol=1e-4)
    assert np.isfinite(lite["probabilities"]).all()
    assert lite["truncated"].tolist() == [False, True, False, False, False]


def test_texts_without_a_wordpiece_get_no_label_as_the_apps_give(exported):
    """Issue 43: a text with no tokens (empty, blank, only characters BERT drops) gets no label from the SavedModel
    and text.tflite, as from the apps and kbert_edge (`is_blank`): `empty`, label "", label_id -1, probabilities 0;
    the texts beside it keep the Keras model's answers."""
    from kbert_core.classification import is_blank

    model, tokenizer, root = exported
    served = tf.saved_model.load(str(root / "saved")).signatures["serving_default"]
    lite = interpreter(root / "tflite" / "text.tflite").get_signature_runner()
    for texts in [*EMPTY_BATCHES, ["a film", "\t \u3000\n", "", "dull"]]:
        empty = [is_blank(text) for text in texts]
        assert empty == [text not in ("a film", "dull") for text in texts]
        expected = keras_probabilities(model, tokenizer, texts)
        for out in ({k: v.numpy() for k, v in served(texts=tf.constant(texts)).items()},
                    lite(texts=np.array(texts, dtype=object))):
            assert out["empty"].tolist() == empty
            assert [label.decode() for label in out["label"][empty]] == [""] * sum(empty)
            assert (out["label_id"][empty] == -1).all() and (out["probabilities"][empty] == 0).all()
            assert (out["probability"][empty] == 0).all()
            kept = ~np.array(empty)
            np.testing.assert_allclose(out["probabilities"][kept], expected[kept], atol=1e-4)
            assert out["label_id"][kept].tolist() == expected[kept].argmax(-1).tolist()


def test_a_multi_label_run_exports_its_sigmoids_and_chosen_classes(tmp_path, tokenizer):
    """A multi-label run folder (issue 42) exports: the SavedModel and text.tflite give each class's sigmoid and the
    classes at or above the model's threshold, token_ids.tflite its logits, and kbert_edge's answers on either file
    are `BertClassifier.labels_of` on Keras's predictions."""
    from kbert_edge.edge_model import EdgeModel

    model = BertClassifier(tiny_backbone(), 3, label_names=LABELS, multi_label=True, threshold=0.4)
    model.get_layer("logits").bias.assign(np.array([3.0, -3.0, 0.0], "float32"))  # chosen, not chosen, it depends
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "multi_label", "max_length": MAX_LENGTH},
                     {"loss": [1.0]})
    exportable, _, spec = load_exportable(tmp_path / "run")
    assert spec.multi_label and spec.threshold == 0.4
    export_saved_model(exportable, tokenizer, spec, tmp_path / "saved")
    export_tflite(exportable, tokenizer, spec, tmp_path / "tflite")
    texts = ["The film was good!", "a bad film " * 30, "x" * 150 + " good"]
    logits = keras.ops.convert_to_numpy(model(tokenizer(texts, max_length=MAX_LENGTH)))
    expected = 1 / (1 + np.exp(-logits))
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"](texts=tf.constant(texts))
    lite = interpreter(tmp_path / "tflite" / "text.tflite").get_signature_runner()(texts=np.array(texts, dtype=object))
    for out in ({k: v.numpy() for k, v in served.items()}, lite):
        np.testing.assert_allclose(out["probabilities"], expected, atol=1e-4)
        assert out["chosen"].tolist() == (expected >= 0.4).tolist()
    labels = model.labels_of(expected)
    assert labels[0][0] == "negative" and all("neutral" not in chosen for chosen in labels)
    for name in ("text.tflite", "token_ids.tflite"):
        answers = EdgeModel(tmp_path / "tflite" / name).predict(texts)
        assert [answer["labels"] for answer in answers] == labels, name
        np.testing.assert_allclose([list(answer["probabilities"].values()) for answer in answers], expected, atol=1e-4)


def test_a_classifier_reading_windows_exports_reading_whole_texts(tmp_path, tokenizer, window_pooling="mean"):
    """A run whose preprocessor reads long texts through windows (issue 42): the SavedModel, text.tflite and
    kbert_edge on token_ids.tflite read every window and give `BertClassifier.predict`'s probabilities."""
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert_edge.edge_model import EdgeModel

    preprocessor = BertTextClassifierPreprocessor(tokenizer, MAX_LENGTH, doc_stride=10)
    model = BertClassifier(tiny_backbone(), 3, label_names=LABELS, preprocessor=preprocessor,
                           window_pooling=window_pooling)
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "sentiment", "max_length": MAX_LENGTH},
                     {"loss": [1.0]})
    exportable, _, spec = load_exportable(tmp_path / "run")
    assert (spec.window_pooling, spec.doc_stride) == (window_pooling, 10)
    export_saved_model(exportable, tokenizer, spec, tmp_path / "saved")
    export_tflite(exportable, tokenizer, spec, tmp_path / "tflite")
    texts = ["The film was good!", "the film was bad, " * 40 + "but good in the end", "what a bad film " * 25]
    expected = model.predict(texts, verbose=0)
    windows = np.bincount(preprocessor.prepare(texts).windows).tolist()
    assert windows[0] == 1 and min(windows[1:]) > 5
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"](texts=tf.constant(texts))
    lite = interpreter(tmp_path / "tflite" / "text.tflite").get_signature_runner()(texts=np.array(texts, dtype=object))
    for out in ({k: v.numpy() for k, v in served.items()}, lite):
        np.testing.assert_allclose(out["probabilities"], expected, atol=1e-4)
        assert out["windows"].tolist() == windows and not out["truncated"].any()
    for name in ("text.tflite", "token_ids.tflite"):
        answers = EdgeModel(tmp_path / "tflite" / name).predict(texts)
        np.testing.assert_allclose([list(answer["probabilities"].values()) for answer in answers], expected, atol=1e-4)
        assert [answer["label"] for answer in answers] == model.labels_of(expected)


@pytest.mark.parametrize("name", ["token_ids.tflite", "text.tflite"])
def test_the_edge_runner_answers_as_the_task(run, exported, name):
    """kbert_edge's classifier answers (numpy, no Keras) are `BertClassifier.answers`': labels, probabilities, the
    note of an empty text; the edge's `truncated` where the task notes a text cut to the sequence length."""
    from kbert.saving import load_run
    from kbert_edge import EdgeModel

    texts = [*TEXTS, "", "good " * 40]
    edge = EdgeModel(exported[2] / "tflite" / name).predict(texts)
    for got, wanted in zip(edge, load_run(run).answers(texts), strict=True):
        assert (got["text"], got["label"]) == (wanted["text"], wanted["label"])
        assert got.get("probabilities") == pytest.approx(wanted.get("probabilities"), abs=1e-4)
        assert got.get("probability") == pytest.approx(wanted.get("probability"), abs=1e-4)
        if wanted["label"] is None:
            assert got["note"] == wanted["note"]
        else:
            assert got["truncated"] == ("note" in wanted), (got, wanted)
    assert edge[-1]["truncated"]


def test_an_nli_export_answers_zero_shot_as_the_task(tmp_path, tokenizer):
    """kbert_edge's zero-shot on an NLI classifier's token_ids.tflite (numpy over its logits) is
    `BertClassifier.zero_shot`'s (which tests/tasks/test_zero_shot.py holds against Hugging Face's pipeline), in
    Python, through apps/edge_predict.py --labels without Keras or TensorFlow, and behind the server; text.tflite,
    whose outputs are probabilities, refuses."""
    from starlette.testclient import TestClient

    from kbert.saving import load_run
    from kbert_edge import EdgeModel
    from kbert_serving import make_app
    from kbert_serving.served_model import load_served_model
    from tests.export.conftest import run_edge_predict

    names = ["entailment", "neutral", "contradiction"]
    model = BertClassifier(tiny_backbone(), 3, label_names=names)
    head = model.get_layer("logits")
    head.kernel.assign(5 * np.random.default_rng(0).normal(size=head.kernel.shape).astype("float32"))  # apart
    write_run_folder(tmp_path / "nli", model, tokenizer, {"task": "nli", "max_length": MAX_LENGTH}, {"loss": [1.0]})
    model, exported_tokenizer, spec = load_exportable(tmp_path / "nli")
    export_tflite(model, exported_tokenizer, spec, tmp_path / "tflite")
    texts, labels = ["The film was good!", "Angela Merkel visited Paris.", "a bad film " * 30], ["film", "Paris", "bad"]
    keras_model, edge = load_run(tmp_path / "nli"), EdgeModel(tmp_path / "tflite" / "token_ids.tflite")
    assert not edge.regression
    for multi_label in (False, True):
        want = keras_model.zero_shot(texts, labels, "It is about {}.", multi_label)
        got = edge.zero_shot(texts, labels, "It is about {}.", multi_label)
        assert [answer["labels"] for answer in got] == [answer["labels"] for answer in want]
        np.testing.assert_allclose([a["scores"] for a in got], [a["scores"] for a in want], atol=1e-4)
        assert multi_label or np.ptp([a["scores"] for a in want]) > 0.01  # apart: their equality says something
    printed = run_edge_predict(tmp_path / "tflite" / "token_ids.tflite", "--labels", ",".join(labels), "--json",
                               *texts).stdout.splitlines()
    assert [json.loads(line)["labels"] for line in printed] == [a["labels"] for a in keras_model.zero_shot(texts,
                                                                                                           labels)]
    with TestClient(make_app(load_served_model(tmp_path / "tflite" / "token_ids.tflite"))) as client:
        response = client.post("/v1/zero-shot-classification",
                               json={"inputs": texts, "parameters": {"candidate_labels": labels}})
    assert response.status_code == 200, response.text
    assert [a["labels"] for a in response.json()] == [a["labels"] for a in edge.zero_shot(texts, labels)]
    with pytest.raises(ValueError, match="text.tflite, whose outputs are probabilities"):
        EdgeModel(tmp_path / "tflite" / "text.tflite").zero_shot(texts, labels)


def test_a_regressor_export_reranks_behind_the_server_as_the_task_ranks(tmp_path, tokenizer):
    """A regressor on pairs (a cross-encoder) exported: the edge runner knows it gives a score, not classes, and the
    served token_ids.tflite answers /v1/rerank in the order `BertClassifier.rank` gives (which
    tests/tasks/test_rank.py holds against Sentence Transformers' CrossEncoder)."""
    from starlette.testclient import TestClient

    from kbert.saving import load_run
    from kbert_edge import EdgeModel
    from kbert_serving import make_app
    from kbert_serving.served_model import load_served_model

    model = BertClassifier(tiny_backbone(), 1)
    head = model.get_layer("logits")
    head.kernel.assign(5 * np.random.default_rng(1).normal(size=head.kernel.shape).astype("float32"))  # scores apart
    write_run_folder(tmp_path / "sts", model, tokenizer, {"task": "similarity", "max_length": MAX_LENGTH},
                     {"loss": [1.0]})
    model, exported_tokenizer, spec = load_exportable(tmp_path / "sts")
    export_tflite(model, exported_tokenizer, spec, tmp_path / "tflite")
    documents = ["The film was good!", "Angela Merkel visited Paris.", "a bad film", "unaffable café, naïve"]
    want = load_run(tmp_path / "sts").rank("Was the film good?", documents)
    assert np.diff([hit["score"] for hit in want]).max() < -1e-4
    edge = EdgeModel(tmp_path / "tflite" / "token_ids.tflite")
    assert edge.regression and EdgeModel(tmp_path / "tflite" / "text.tflite").regression
    with TestClient(make_app(load_served_model(tmp_path / "tflite" / "token_ids.tflite"))) as client:
        response = client.post("/v1/rerank", json={"query": "Was the film good?", "documents": documents})
    assert response.status_code == 200, response.text
    assert [result["index"] for result in response.json()["results"]] == [hit["corpus_id"] for hit in want]
