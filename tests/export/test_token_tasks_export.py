"""NER, QA and backbone exports: the same tags, entities, spans and embeddings as the Keras model."""

import json

import keras
import numpy as np
import tensorflow as tf

from kbert.data.readers.squad_example import SquadExample
from kbert.data.windows.squad import SquadWindows
from kbert.export import export_saved_model, export_tflite, load_exportable
from kbert.layers import mean_pool
from kbert.recipes import qa as qa_recipe
from kbert_core import says_no_answer
from tests.export.conftest import (CONTEXTS, EMPTY_BATCHES, LONG_CONTEXT, LONG_TEXT, QA_WINDOWING, QUESTIONS,
                                   TENSORFLOW_ONLY, TEXTS, edge_module, run_edge_predict, tiny_backbone)

pytestmark = TENSORFLOW_ONLY


def test_ner_evaluation_gets_the_same_tags_from_the_tflite_model(ner):
    """`BertTokenClassifier.predict_with` (what kbert.recipes.ner's evaluation runs) with the token-id TFLite model
    (apps/edge_predict.py's `EdgeModel`, windows padded to its fixed length) in place of the Keras model: the same
    tags and probabilities."""
    model, tokenizer, spec, root = ner
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    expected = model.predict_with(model, TEXTS, batch_size=3)
    results = model.predict_with(edge, TEXTS, batch_size=3)
    assert sum(tag != "O" for result in expected for tag in result["tags"]) > 5
    assert [result["tags"] for result in results] == [result["tags"] for result in expected]
    np.testing.assert_allclose(np.concatenate([result["tag_probabilities"] for result in results]),
                               np.concatenate([result["tag_probabilities"] for result in expected]), atol=1e-4)


def test_ner_edge_runner_reads_long_texts_through_windows(ner):
    """EdgeModel.predict on token_ids.tflite (pure-Python WordPiece, word-aligned windows) finds the
    entities of the Keras model read through NerWindows, beyond the first window too."""
    model, tokenizer, spec, root = ner
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    texts = [LONG_TEXT, TEXTS[4], ""]
    results = edge.predict(texts)
    for result, want in zip(results, model.predict(texts, verbose=0)):
        expected = want["entities"]
        assert [{**e, "score": 0} for e in result["entities"]] == [{**e, "score": 0} for e in expected]
        np.testing.assert_allclose([e["score"] for e in result["entities"]], [e["score"] for e in expected],
                                   atol=2e-4)
    assert [result["windows"] for result in results] == [4, 1, 1]
    assert max(e["end"] for e in results[0]["entities"]) > 300  # past the first window


def decode_best(model, tokenizer, questions, contexts, windowing):
    examples = [SquadExample(f"q{i}", q, c) for i, (q, c) in enumerate(zip(questions, contexts))]
    windows = SquadWindows(tokenizer, examples, **windowing)
    logits = model(windows.inputs)
    best = windows.decode(keras.ops.convert_to_numpy(logits["start_logits"]),
                          keras.ops.convert_to_numpy(logits["end_logits"]))
    return [b[0] if b else None for b in best]


def test_qa_edge_runner_reads_long_contexts_through_windows(qa, tmp_path):
    """The LiteRT-only runner (token ids + pure-Python WordPiece + windows) equals SquadWindows.decode;
    with --max-windows 2 it reads two windows and says `truncated`."""
    model, tokenizer, spec, root = qa
    expected = decode_best(model, tokenizer, ["Who visited Paris?"], [LONG_CONTEXT], QA_WINDOWING)[0]
    result = run_edge_predict(root / "tflite" / "token_ids.tflite", "--question", "Who visited Paris?",
                              "--context", LONG_CONTEXT, "--json")
    answer = json.loads(result.stdout.splitlines()[-1])
    assert (answer["start"], answer["end"], answer["text"]) == (expected["start"], expected["end"], expected["text"])
    assert (answer["windows"], answer["truncated"]) == (7, False)
    np.testing.assert_allclose(answer["score"], expected["score"], atol=1e-4)
    capped = run_edge_predict(root / "tflite" / "token_ids.tflite", "--question", "Who visited Paris?",
                              "--context", LONG_CONTEXT, "--max-windows", "2")  # for people
    assert capped.stdout.rstrip().endswith("[truncated]")
    capped = json.loads(run_edge_predict(root / "tflite" / "token_ids.tflite", "--question", "Who visited Paris?",
                                         "--context", LONG_CONTEXT, "--max-windows", "2", "--json").stdout)
    assert (capped["windows"], capped["truncated"]) == (2, True)


def test_qa_evaluation_gets_the_same_answers_from_the_tflite_model(qa):
    """kbert.recipes.qa's evaluation (SQuAD EM/F1 over strided windows) with the token-id TFLite model in
    place of the Keras model: the same answers, so the same scores."""
    model, tokenizer, spec, root = qa
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    examples = [SquadExample(f"q{i}", q, c, ["Paris"]) for i, (q, c) in enumerate(
        zip(QUESTIONS + ["Who visited Paris?"], CONTEXTS + [LONG_CONTEXT]))]
    scores, predictions = qa_recipe.evaluate_examples(model, examples, batch_size=3)
    assert all(predictions.values())
    assert qa_recipe.evaluate_examples(model, examples, batch_size=3, runner=edge) == (scores, predictions)
    inputs = ([e.question for e in examples], [e.context for e in examples])
    expected = model.predict_with(model, inputs, batch_size=3)
    for got, want in zip(model.predict_with(edge, inputs, batch_size=3), expected):
        assert got["alternatives"] == want["alternatives"]
        np.testing.assert_allclose(got["score"], want["score"], atol=1e-4)


def test_qa_no_answer_from_the_token_ids_tflite_as_from_keras(qa_no_answer):
    """A model that allows no answer: evaluation through token_ids.tflite gives the Keras model's answers, "" among
    them, and the edge runner answers each question as predict does."""
    model, tokenizer, spec, root = qa_no_answer
    edge = edge_module().EdgeModel(root / "tflite" / "token_ids.tflite")
    questions, contexts = QUESTIONS + ["Who visited Paris?"], CONTEXTS + [LONG_CONTEXT]
    examples = [SquadExample(f"q{i}", q, c, ["Paris"]) for i, (q, c) in enumerate(zip(questions, contexts))]
    scores, predictions = qa_recipe.evaluate_examples(model, examples, batch_size=3)
    assert "" in predictions.values() and any(predictions.values())
    assert qa_recipe.evaluate_examples(model, examples, batch_size=3, runner=edge) == (scores, predictions)
    for question, context, want in zip(questions, contexts, model.predict((questions, contexts), verbose=0)):
        got = edge.answer_question(question, context)
        assert (got["text"], got["start"], got["end"]) == (want["text"], want["start"], want["end"])
        assert got.get("no_answer", False) == says_no_answer(want)
        np.testing.assert_allclose([got["score"], got["probability"]], [want["score"], want["probability"]], atol=1e-4)


def test_backbone_embeddings_match_keras(tmp_path, tokenizer):
    from kbert.saving import save_backbone

    backbone = tiny_backbone()
    (tmp_path / "backbone").mkdir()
    save_backbone(tmp_path / "backbone", backbone, tokenizer)
    model, tokenizer, spec = load_exportable(tmp_path / "backbone", max_length=24, padding="longest")
    assert spec.model_kind == "backbone"
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


def test_a_trained_sentence_encoder_exports_its_own_embeddings(tmp_path, tokenizer):
    """A bi-encoder run folder (apps/embed.py train, issue 42) exports as an embedding model: the SavedModel,
    text.tflite and kbert_edge on token_ids.tflite give `BertSentenceEncoder.predict`'s vectors, its pooling
    ([CLS], unnormalised here) rather than a backbone's mean."""
    from kbert import BertSentenceEncoder
    from kbert.tasks import BertSentenceEncoderPreprocessor
    from kbert.training import write_run_folder
    from kbert_edge.edge_model import EdgeModel

    model = BertSentenceEncoder(tiny_backbone(), BertSentenceEncoderPreprocessor(tokenizer, 24), pooling="cls",
                                normalize=False)
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "embedding", "max_length": 24}, {"loss": [1.0]})
    exportable, _, spec = load_exportable(tmp_path / "run")
    assert spec.model_kind == "backbone" and spec.max_length == 24
    export_saved_model(exportable, tokenizer, spec, tmp_path / "saved")
    export_tflite(exportable, tokenizer, spec, tmp_path / "tflite")
    texts = TEXTS[:5]
    expected = model.predict(texts, verbose=0)
    assert np.abs(np.linalg.norm(expected, axis=-1) - 1).max() > 1e-2  # not normalised: not the backbone's
    served = tf.saved_model.load(str(tmp_path / "saved")).signatures
    np.testing.assert_allclose(served["serving_default"](texts=tf.constant(texts))["embeddings"].numpy(), expected,
                               atol=1e-4)
    batch = {key: tf.constant(value) for key, value in tokenizer(texts, max_length=24).items()}
    np.testing.assert_allclose(served["token_ids"](**batch)["embeddings"].numpy(), expected, atol=1e-4)
    for name in ("text.tflite", "token_ids.tflite"):
        answers = EdgeModel(tmp_path / "tflite" / name).predict(texts)
        np.testing.assert_allclose([answer["embedding"] for answer in answers], expected, atol=1e-4)
