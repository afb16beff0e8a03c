"""NER, QA and backbone exports: the same tags, entities, spans and embeddings as the Keras model."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.data.squad_example import SquadExample
from kbert.data.squad_windows import SquadWindows
from kbert.data.token_rows import word_spans_of
from kbert.export import export_saved_model, export_tflite, load_exportable
from kbert.export.tflite import interpreter
from kbert.layers import mean_pool
from kbert.metrics.entity_f1 import get_entities
from kbert.tasks import BertQuestionAnswerer, BertTokenClassifier
from kbert.training import ner_task, qa_task
from kbert.training import write_run_folder
from kbert_edge import entity_spans
from tests.export.conftest import EMPTY_BATCHES, TENSORFLOW_ONLY, TEXTS, edge_module, run_edge_predict, tiny_backbone

pytestmark = TENSORFLOW_ONLY

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def export_both(tmp_path_factory, model, tokenizer, metrics, name):
    root = tmp_path_factory.mktemp(name)
    write_run_folder(root / "run", model, tokenizer, metrics, {"loss": [1.0]})
    model, tokenizer, spec = load_exportable(root / "run")
    export_saved_model(model, tokenizer, spec, root / "saved")
    export_tflite(model, tokenizer, spec, root / "tflite")
    return model, tokenizer, spec, root


@pytest.fixture(scope="module")
def ner(tmp_path_factory, tokenizer):
    model = BertTokenClassifier(tiny_backbone(), TAGS)
    model.get_layer("logits").bias.assign(np.array([0.0, 0.3, 0.3, 0.3, 0.3], "float32"))  # entities appear
    return export_both(tmp_path_factory, model, tokenizer, {"task": "ner", "max_length": 24}, "ner")


def keras_entities(model, tokenizer, texts, max_length):
    batch = tokenizer(texts, max_length=max_length, return_offsets=True)
    logits = keras.ops.convert_to_numpy(model({k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask")}))
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    results = []
    for i, text in enumerate(texts):
        first = [t for t in range(max_length) if batch["word_ids"][i, t] >= 0
                 and (t == 0 or batch["word_ids"][i, t] != batch["word_ids"][i, t - 1])]
        tags = [TAGS[int(probabilities[i, t].argmax())] for t in first]
        ends = {w: batch["offsets"][i, t, 1] for t, w in enumerate(batch["word_ids"][i]) if w >= 0}
        entities = []
        for kind, a, b in get_entities(tags):
            start, end = int(batch["offsets"][i, first[a], 0]), int(ends[batch["word_ids"][i, first[b]]])
            score = float(np.mean([probabilities[i, first[w]].max() for w in range(a, b + 1)]))
            entities.append((kind, start, end, text[start:end], round(score, 4)))
        results.append((probabilities[i].argmax(-1), entities))
    return results


def served_entities(out, texts, with_text):
    results = []
    for i, text in enumerate(texts):
        entities = []
        for e in range(int(out["entity_count"][i])):
            start, end = int(out["entity_starts"][i, e]), int(out["entity_ends"][i, e])
            entities.append((out["entity_types"][i, e].decode(), start, end,
                             out["entity_texts"][i, e].decode() if with_text else text[start:end],
                             round(float(out["entity_scores"][i, e]), 4)))
        results.append((np.asarray(out["tag_ids"][i]), entities))
    return results


def test_ner_saved_model_and_tflite_match_keras(ner):
    model, tokenizer, spec, root = ner
    expected = keras_entities(model, tokenizer, TEXTS, spec.max_length)
    assert any(entities for _, entities in expected)
    saved = tf.saved_model.load(str(root / "saved")).signatures["serving_default"](texts=tf.constant(TEXTS))
    lite = interpreter(root / "tflite" / "text.tflite").get_signature_runner()(texts=np.array(TEXTS, dtype=object))
    for out, with_text in ((({k: v.numpy() for k, v in saved.items()}), True), (lite, False)):
        got = served_entities(out, TEXTS, with_text)
        for (tags, entities), (want_tags, want_entities) in zip(got, expected):
            np.testing.assert_array_equal(tags, want_tags)
            assert [e[:4] for e in entities] == [e[:4] for e in want_entities]
            np.testing.assert_allclose([e[4] for e in entities], [e[4] for e in want_entities], atol=2e-4)


def test_ner_batches_without_a_wordpiece_give_the_keras_tags_of_cls_sep(ner):
    model, tokenizer, spec, root = ner
    saved = tf.saved_model.load(str(root / "saved")).signatures["serving_default"]
    lite = interpreter(root / "tflite" / "text.tflite").get_signature_runner()
    for texts in EMPTY_BATCHES:
        logits = model(tokenizer(texts, max_length=spec.max_length))
        expected = keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))
        for out in ({k: v.numpy() for k, v in saved(texts=tf.constant(texts)).items()},
                    lite(texts=np.array(texts, dtype=object))):
            np.testing.assert_array_equal(out["tag_ids"], expected.argmax(-1))
            assert np.isfinite(out["tag_probabilities"]).all()
            np.testing.assert_allclose(out["tag_probabilities"], expected.max(-1), atol=1e-4)
            assert out["entity_count"].tolist() == [0] * len(texts)


def test_ner_evaluation_gets_the_same_tags_from_the_tflite_model(ner):
    """ner_task's evaluation with the token-id TFLite model (apps/edge_predict.py's `EdgeModel`,
    windows padded to its fixed length) in place of the Keras model: the same tags."""
    model, tokenizer, spec, root = ner
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    spans = word_spans_of(tokenizer, TEXTS)
    expected = ner_task.predict_tags(model, tokenizer, TEXTS, spans, spec.max_length, batch_size=3)
    tags, probabilities = ner_task.predict_tags(edge, tokenizer, TEXTS, spans, spec.max_length, batch_size=3)
    assert sum(tag != "O" for text_tags in expected[0] for tag in text_tags) > 5
    assert tags == expected[0]
    np.testing.assert_allclose(np.concatenate(probabilities), np.concatenate(expected[1]), atol=1e-4)


def test_ner_edge_runner_reads_long_texts_through_windows(ner):
    """EdgeModel.predict on token_ids.tflite (pure-Python WordPiece, word-aligned windows) finds the
    entities of the Keras model read through NerWindows, beyond the first window too."""
    model, tokenizer, spec, root = ner
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    texts = ["Angela Merkel visited Paris, the film was good. " * 8, TEXTS[4], ""]
    spans = word_spans_of(tokenizer, texts)
    tags, probabilities = ner_task.predict_tags(model, tokenizer, texts, spans, spec.max_length)
    results = edge.predict(texts)
    for text, result, *word in zip(texts, results, spans, tags, probabilities):
        expected = entity_spans(text, *word)
        assert [{**e, "score": 0} for e in result["entities"]] == [{**e, "score": 0} for e in expected]
        np.testing.assert_allclose([e["score"] for e in result["entities"]], [e["score"] for e in expected],
                                   atol=2e-4)
    assert [result["windows"] for result in results] == [4, 1, 1]
    assert max(e["end"] for e in results[0]["entities"]) > 300  # past the first window


@pytest.fixture(scope="module")
def qa(tmp_path_factory, tokenizer):
    model = BertQuestionAnswerer(tiny_backbone())
    metrics = {"task": "qa", "max_length": 32, "doc_stride": 8, "max_question_length": 6}
    return export_both(tmp_path_factory, model, tokenizer, metrics, "qa")


QUESTIONS = ["Who visited Paris?", "What is good?", "", "who " * 20]
CONTEXTS = ["Angela Merkel visited Paris.", "The film was good, the cafe was bad.", "Paris.", "Merkel!"]


def decode_best(model, tokenizer, questions, contexts, windowing):
    examples = [SquadExample(f"q{i}", q, c) for i, (q, c) in enumerate(zip(questions, contexts))]
    windows = SquadWindows(tokenizer, examples, **windowing)
    logits = model(windows.inputs)
    best = windows.decode(keras.ops.convert_to_numpy(logits["start_logits"]),
                          keras.ops.convert_to_numpy(logits["end_logits"]))
    return [b[0] if b else None for b in best]


def test_qa_saved_model_and_tflite_match_keras(qa):
    model, tokenizer, spec, root = qa
    windowing = {"max_length": 32, "doc_stride": 8, "max_question_length": 6}
    expected = decode_best(model, tokenizer, QUESTIONS, CONTEXTS, windowing)
    inputs = {"questions": QUESTIONS, "contexts": CONTEXTS}
    saved = tf.saved_model.load(str(root / "saved")).signatures["serving_default"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    lite = interpreter(root / "tflite" / "text.tflite").get_signature_runner()(
        **{k: np.array(v, dtype=object) for k, v in inputs.items()})
    for i, want in enumerate(expected):
        for out in ({k: np.asarray(v) for k, v in saved.items()}, lite):
            assert (int(out["answer_start"][i]), int(out["answer_end"][i])) == (want["start"], want["end"])
            np.testing.assert_allclose(out["score"][i], want["score"], atol=1e-4)
            np.testing.assert_allclose(out["probability"][i], want["probability"], atol=1e-4)
        assert saved["answer_text"].numpy()[i].decode() == want["text"]


def test_qa_batches_without_a_wordpiece_give_the_keras_logits_of_cls_sep_sep(qa):
    model, tokenizer, spec, root = qa
    saved = tf.saved_model.load(str(root / "saved")).signatures["serving_default"]
    lite = interpreter(root / "tflite" / "text.tflite").get_signature_runner()
    for texts in EMPTY_BATCHES:
        expected = model(tokenizer(texts, texts, max_length=spec.max_length, truncation="only_second"))
        for out in ({k: v.numpy() for k, v in saved(questions=tf.constant(texts), contexts=tf.constant(texts)).items()},
                    lite(questions=np.array(texts, dtype=object), contexts=np.array(texts, dtype=object))):
            for key in ("start_logits", "end_logits"):
                assert np.isfinite(out[key]).all()
                np.testing.assert_allclose(out[key], keras.ops.convert_to_numpy(expected[key]), atol=1e-4)
            assert out["found"].tolist() == [False] * len(texts)
            assert out["answer_start"].tolist() == [-1] * len(texts)


def test_qa_edge_runner_reads_long_contexts_through_windows(qa, tmp_path):
    """The LiteRT-only runner (token ids + pure-Python WordPiece + windows) equals SquadWindows.decode."""
    model, tokenizer, spec, root = qa
    context = "Angela Merkel visited Paris. " * 6 + "The film was good, the cafe was bad. " * 4
    expected = decode_best(model, tokenizer, ["Who visited Paris?"], [context], {
        "max_length": 32, "doc_stride": 8, "max_question_length": 6})[0]
    result = run_edge_predict(root / "tflite" / "token_ids.tflite", "--question", "Who visited Paris?",
                              "--context", context, "--json")
    answer = json.loads(result.stdout.splitlines()[-1])
    assert (answer["start"], answer["end"], answer["text"]) == (expected["start"], expected["end"], expected["text"])
    assert answer["windows"] > 3
    np.testing.assert_allclose(answer["score"], expected["score"], atol=1e-4)


def test_qa_evaluation_gets_the_same_answers_from_the_tflite_model(qa):
    """qa_task's evaluation (SQuAD EM/F1 over strided windows) with the token-id TFLite model in
    place of the Keras model: the same answers, so the same scores."""
    model, tokenizer, spec, root = qa
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    windowing = {"max_length": 32, "doc_stride": 8, "max_question_length": 6}
    context = "Angela Merkel visited Paris. " * 6 + "The film was good, the cafe was bad. " * 4
    examples = [SquadExample(f"q{i}", q, c, ["Paris"]) for i, (q, c) in enumerate(
        zip(QUESTIONS + ["Who visited Paris?"], CONTEXTS + [context]))]
    scores, predictions = qa_task.evaluate_examples(model, tokenizer, examples, windowing, batch_size=3)
    assert all(predictions.values())
    assert qa_task.evaluate_examples(edge, tokenizer, examples, windowing, batch_size=3) == (scores, predictions)
    expected = qa_task.answer_examples(model, tokenizer, examples, windowing, batch_size=3)
    for best, want in zip(qa_task.answer_examples(edge, tokenizer, examples, windowing, batch_size=3), expected):
        np.testing.assert_allclose([b["score"] for b in best[:3]], [w["score"] for w in want[:3]], atol=1e-4)


def test_backbone_embeddings_match_keras(tmp_path, tokenizer):
    from kbert.saving import save_backbone

    backbone = tiny_backbone()
    (tmp_path / "backbone").mkdir()
    save_backbone(tmp_path / "backbone", backbone, tokenizer)
    model, tokenizer, spec = load_exportable(tmp_path / "backbone", max_length=24, padding="longest")
    assert spec.task == "backbone"
    export_saved_model(model, tokenizer, spec, tmp_path / "saved")
    batch = tokenizer(TEXTS, max_length=24, padding="longest")
    expected = keras.ops.convert_to_numpy(mean_pool(model(batch)["sequence_output"], batch["padding_mask"]))
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"]
    np.testing.assert_allclose(served(texts=tf.constant(TEXTS))["embeddings"].numpy(), expected, atol=1e-5)
    for texts in EMPTY_BATCHES:  # [CLS] [SEP] rows
        batch = tokenizer(texts, max_length=24, padding="longest")
        expected = keras.ops.convert_to_numpy(mean_pool(model(batch)["sequence_output"], batch["padding_mask"]))
        got = served(texts=tf.constant(texts))["embeddings"].numpy()
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, expected, atol=1e-5)
