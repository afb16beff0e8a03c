"""kbert/export/long_inputs.py: the string-in NER and QA exports read whole inputs through windows in
the graph, and give what the Keras task model's own `predict` gives on the same raw strings."""

import functools
import json

import keras
import numpy as np
import tensorflow as tf

from kbert.data.readers.squad_example import SquadExample
from kbert.data.windows.ner import NerWindows
from kbert.data.windows.squad import SquadWindows
from kbert.data.windows.token_rows import word_spans_of
from kbert.export.tflite import interpreter
from kbert_core import says_no_answer
from tests.conftest import app_module
from tests.export.conftest import (CONTEXTS, EMPTY_BATCHES, LONG_CONTEXT, LONG_TEXT, NER_TAGS, QA_WINDOWING, QUESTIONS,
                                   TENSORFLOW_ONLY, TEXTS, export_both, run_edge_predict, tiny_backbone)

pytestmark = TENSORFLOW_ONLY

HUGE = LONG_TEXT * 4200  # 201,600 characters: more windows than an export reads


@functools.cache
def runners(root):
    saved = tf.saved_model.load(str(root / "saved")).signatures["serving_default"]
    return saved, interpreter(root / "tflite" / "text.tflite").get_signature_runner()


def served(root, **inputs):
    """`(name, outputs)` of the SavedModel and of text.tflite on the same strings."""
    saved, lite = runners(root)
    yield "saved_model", {k: v.numpy() for k, v in saved(**{k: tf.constant(v) for k, v in inputs.items()}).items()}
    yield "tflite", lite(**{k: np.array(v, dtype=object) for k, v in inputs.items()})


def served_entities(out, i, text):
    spans = zip(out["entity_starts"][i].tolist(), out["entity_ends"][i].tolist())
    return [{"type": kind.decode(), "text": text[start:end], "start": start, "end": end, "score": float(score)}
            for kind, (start, end), score in zip(out["entity_types"][i], spans, out["entity_scores"][i])
            ][: int(out["entity_count"][i])]


def assert_same_entities(got, want):
    assert [{**e, "score": 0} for e in got] == [{**e, "score": 0} for e in want]
    np.testing.assert_allclose([e["score"] for e in got], [e["score"] for e in want], atol=2e-4)


def test_ner_exports_equal_predict_over_windows(ner):
    """Tags of every word and entities with their character spans as `BertTokenClassifier.predict`,
    over the same windows (NerWindows counts them), an entity across a window boundary included."""
    model, tokenizer, spec, root = ner
    texts = [LONG_TEXT, *TEXTS]
    expected = model.predict(texts, verbose=0)
    spans = word_spans_of(tokenizer, texts)
    windows = NerWindows(tokenizer, texts, spans, spec.max_length)
    counts = np.bincount(windows.window_texts, minlength=len(texts))
    assert counts[0] == 4 and counts[6] == 5  # LONG_TEXT and "a bad film " * 30 need several windows
    # The first word of each later window of LONG_TEXT, and an entity over it and the word before.
    firsts = [min(words[words >= 0]) for words in windows.token_words[windows.window_texts == 0][1:]]
    assert any(e["start"] <= spans[0][w - 1][0] and e["end"] >= spans[0][w][1]
               for e in expected[0]["entities"] for w in firsts)
    assert max(e["end"] for e in expected[0]["entities"]) > 300
    for name, out in served(root, texts=texts):
        assert out["windows"].tolist() == counts.tolist(), name
        assert not out["truncated"].any()
        for i, (text, want) in enumerate(zip(texts, expected)):
            assert [tag.decode() for tag in out["tags"][i, : out["word_count"][i]]] == want["tags"], (name, text)
            assert_same_entities(served_entities(out, i, text), want["entities"])
            if name == "saved_model":
                assert [t.decode() for t in out["entity_texts"][i, : out["entity_count"][i]]] == [
                    e["text"] for e in want["entities"]]
            assert out["word_starts"][i, : out["word_count"][i]].tolist() == spans[i][:, 0].tolist()


def test_ner_bad_inputs_give_flagged_outputs(ner):
    """Empty and blank texts: no words, no entities. A 200 KB text: the first `max_windows` windows
    are read, the same tags there as `predict`, and the output says `truncated`."""
    model, tokenizer, spec, root = ner
    texts = [*EMPTY_BATCHES[1], HUGE]
    for name, out in served(root, texts=texts):
        assert out["word_count"][:3].tolist() == [0, 0, 0] and out["entity_count"][:3].tolist() == [0, 0, 0]
        assert out["windows"].tolist() == [1, 1, 1, spec.max_windows]
        assert out["truncated"].tolist() == [False, False, False, True], name
        words = int(out["word_count"][3])
        read_to = int(out["word_ends"][3, words - 1])
        assert 5000 < read_to < 20000
        prefix = HUGE[: read_to + 500]  # the windows read are those of any text that starts so
        want = model.predict([prefix], verbose=0)[0]
        assert [tag.decode() for tag in out["tags"][3, :words]] == want["tags"][:words]
        # Tags agree on every word read; an entity on the last word read may go on past it in `want`'s longer text.
        complete = int(out["word_ends"][3, words - 2])
        assert_same_entities([e for e in served_entities(out, 3, HUGE) if e["end"] <= complete],
                             [e for e in want["entities"] if e["end"] <= complete])


def test_ner_batches_without_entities_or_words(tmp_path_factory, tokenizer):
    """A model that tags every word O: a batch with no entity (or no word) gave zero-width tensors, on
    which text.tflite died of SIGFPE (found on a real CoNLL model: `apps/export.py` crashed in its own
    check run on ["", "A short text."]). Now one blank column, and the counts say 0."""
    from kbert.tasks import BertTokenClassifier, BertTokenClassifierPreprocessor

    model = BertTokenClassifier(tiny_backbone(), NER_TAGS, BertTokenClassifierPreprocessor(tokenizer, 24))
    model.get_layer("logits").bias.assign(np.array([9.0, 0, 0, 0, 0], "float32"))  # O throughout
    *_, root = export_both(tmp_path_factory, model, tokenizer, {"task": "ner", "max_length": 24}, "ner_outside")
    for texts in (["A short text."], ["", " "], ["", LONG_TEXT]):
        for name, out in served(root, texts=texts):
            assert out["entity_count"].tolist() == [0] * len(texts), name
            assert out["word_count"].tolist() == [len(text.split()) + text.count(",") + text.count(".")
                                                  for text in texts], name
            assert (out["entity_starts"] == -1).all() and (out["entity_types"] == b"").all(), name


def nbest_lists(model, tokenizer, questions, contexts):
    """`SquadWindows.decode`'s n best answers per question, the lists `predict` takes the first of."""
    examples = [SquadExample(f"q{i}", q, c) for i, (q, c) in enumerate(zip(questions, contexts))]
    windows = SquadWindows(tokenizer, examples, **QA_WINDOWING)
    logits = model(windows.inputs)
    lists = windows.decode(keras.ops.convert_to_numpy(logits["start_logits"]),
                           keras.ops.convert_to_numpy(logits["end_logits"]), model.n_best, model.max_answer_length)
    return lists, windows


def test_qa_exports_equal_predict_over_windows(qa):
    """The best span over all windows as `BertQuestionAnswerer.predict` (an answer only a late window
    holds among them), and the n best as `SquadWindows.decode`."""
    model, tokenizer, spec, root = qa
    questions, contexts = [*QUESTIONS, "Who visited Paris?"], [*CONTEXTS, LONG_CONTEXT]
    expected = model.predict((questions, contexts), verbose=0)
    lists, windows = nbest_lists(model, tokenizer, questions, contexts)
    counts = np.bincount(windows.window_examples, minlength=len(questions))
    assert counts[-1] == 7
    first_window_end = windows.offsets[windows.window_examples == len(questions) - 1][0, :, 1].max()
    assert expected[-1]["start"] > first_window_end  # the answer lies beyond the first window
    for name, out in served(root, questions=questions, contexts=contexts):
        assert out["windows"].tolist() == counts.tolist()
        assert out["truncated"].tolist() == [False, False, False, True, False]  # "who " * 20: cut to 6 tokens
        for i, (want, listed) in enumerate(zip(expected, lists)):
            assert (int(out["answer_start"][i]), int(out["answer_end"][i])) == (want["start"], want["end"]), name
            assert bool(out["found"][i]) == (want["start"] >= 0)
            np.testing.assert_allclose(out["score"][i], want["score"], atol=1e-4)
            np.testing.assert_allclose(out["probability"][i], want["probability"], atol=1e-4)
            listed_here = out["n_best_starts"][i] >= 0
            assert list(zip(out["n_best_starts"][i][listed_here], out["n_best_ends"][i][listed_here])) == [
                (a["start"], a["end"]) for a in listed]
            np.testing.assert_allclose(out["n_best_probabilities"][i][listed_here], [a["probability"] for a in listed],
                                       atol=1e-4)
            if name == "saved_model":
                assert out["answer_text"][i].decode() == want["text"]


def test_qa_exports_of_a_model_that_allows_no_answer_answer_as_predict(qa_no_answer):
    """"" (start and end 0, `no_answer`) where predict says so, the span elsewhere, with predict's scores and
    probabilities (the softmax counting the null), in the SavedModel, text.tflite and apps/edge_predict.py."""
    model, tokenizer, spec, root = qa_no_answer
    assert (spec.allow_no_answer, spec.no_answer_threshold) == (True, model.no_answer_threshold)
    questions, contexts = [*QUESTIONS, "Who visited Paris?"], [*CONTEXTS, LONG_CONTEXT]
    expected = model.predict((questions, contexts), verbose=0)
    empty = [says_no_answer(want) for want in expected]
    assert 0 < sum(empty) < len(expected)
    for name, out in served(root, questions=questions, contexts=contexts):
        assert out["no_answer"].tolist() == empty and out["found"].tolist() == [not e for e in empty], name
        for i, want in enumerate(expected):
            assert (int(out["answer_start"][i]), int(out["answer_end"][i])) == (want["start"], want["end"]), name
            np.testing.assert_allclose([out["score"][i], out["probability"][i]], [want["score"], want["probability"]],
                                       atol=1e-4)
        assert min(out["null_score"][empty]) > -1e8
    for question, context, want in zip(questions, contexts, expected):
        if question.strip():
            answer = json.loads(run_edge_predict(root / "tflite" / "text.tflite", "--question", question, "--context",
                                                 context, "--json").stdout)
            assert (answer["text"], answer["start"], answer["end"]) == (want["text"], want["start"], want["end"])
            assert answer.get("no_answer", False) == says_no_answer(want)


def test_qa_batches_without_a_wordpiece_give_the_keras_logits_of_cls_sep_sep(qa):
    model, tokenizer, spec, root = qa
    for texts in EMPTY_BATCHES:
        expected = model(tokenizer(texts, texts, max_length=spec.max_length, truncation="only_second"))
        for _, out in served(root, questions=texts, contexts=texts):
            for key in ("start_logits", "end_logits"):
                assert np.isfinite(out[key]).all()
                np.testing.assert_allclose(out[key], keras.ops.convert_to_numpy(expected[key]), atol=1e-4)
            assert out["found"].tolist() == [False] * len(texts)
            assert out["answer_start"].tolist() == [-1] * len(texts)
            assert out["windows"].tolist() == [1] * len(texts)


def test_qa_bad_inputs_give_flagged_outputs(qa):
    """An empty question and context, a question longer than the window, a context with nothing
    to answer from, a 200 KB context: the answer `predict` gives (where it can run), flagged."""
    model, tokenizer, spec, root = qa
    questions = ["", "who " * 40, "Who visited Paris?", "Who visited Paris?"]
    contexts = ["", LONG_CONTEXT, "\u200b \u200b", HUGE]
    expected = model.predict((questions[:3], contexts[:3]), verbose=0)
    for name, out in served(root, questions=questions, contexts=contexts):
        assert out["truncated"].tolist() == [False, True, False, True], name
        assert out["windows"][3] == spec.max_windows
        assert out["found"].tolist() == [False, True, False, True]
        for i, want in enumerate(expected):
            assert (int(out["answer_start"][i]), int(out["answer_end"][i])) == (want["start"], want["end"])
            np.testing.assert_allclose([out["score"][i], out["probability"][i]], [want["score"], want["probability"]],
                                       atol=1e-4)
        read = spec.max_windows * spec.doc_stride * 5  # characters: over 5 per token in HUGE
        assert 0 <= out["answer_start"][3] < out["answer_end"][3] < read


def test_edge_predict_on_text_tflite_reads_every_window(ner, qa):
    """apps/edge_predict.py (LiteRT, no Keras) on text.tflite: a long text's entities and a long
    context's answer as `predict` gives them."""
    (ner_model, *_, ner_root), (qa_model, *_, qa_root) = ner, qa
    line = json.loads(run_edge_predict(ner_root / "tflite" / "text.tflite", LONG_TEXT, "--json").stdout)
    assert (line["windows"], line["truncated"]) == (4, False)
    assert_same_entities(line["entities"], ner_model.predict([LONG_TEXT], verbose=0)[0]["entities"])
    answer = json.loads(run_edge_predict(qa_root / "tflite" / "text.tflite", "--question", "Who visited Paris?",
                                         "--context", LONG_CONTEXT, "--json").stdout)
    want = qa_model.predict((["Who visited Paris?"], [LONG_CONTEXT]), verbose=0)[0]
    assert (answer["start"], answer["end"], answer["text"], answer["windows"]) == (want["start"], want["end"],
                                                                                   want["text"], 7)
    np.testing.assert_allclose(answer["score"], want["score"], atol=1e-4)


def test_export_app_max_windows(ner, tmp_path):
    """apps/export.py --max-windows 2: the SavedModel reads two windows of a four-window text, says
    `truncated`, and records the setting in export.json."""
    root = ner[-1]
    app_module("export").main(["--model", str(root / "run"), "--format", "saved_model", "--max-windows", "2",
                               "--out", str(tmp_path / "two")])
    assert json.loads((tmp_path / "two" / "export.json").read_text())["max_windows"] == 2
    out = tf.saved_model.load(str(tmp_path / "two")).signatures["serving_default"](texts=tf.constant([LONG_TEXT, ""]))
    assert out["windows"].numpy().tolist() == [2, 1] and out["truncated"].numpy().tolist() == [True, False]
