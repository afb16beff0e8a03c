"""Bad input in every runtime that runs kbert's TFLite files: LiteRT through kbert_edge (token_ids.tflite,
text.tflite), the TFLite Task Library and MediaPipe (token_ids_metadata.tflite, in .venv-edge-clients).

Empty strings, a 1 MB string, invalid UTF-8 bytes where the API takes bytes (else lone surrogates),
control characters, a question longer than the window, a context with nothing to answer from. Each
runtime runs in its own process, one input at a time (`bad_input_runner.py`), so a crash would
show as the input that caused it. What a runtime does wrong is asserted as observed, and written
up in docs/robustness.md ("Bad input in the edge runtimes"), so that a change is noticed.
"""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.export import ExportSpec, export_tflite
from kbert.export import runtimes
from kbert.tasks import BertClassifier, BertQuestionAnswerer
from tests.conftest import TESTS
from tests.export.conftest import TENSORFLOW_ONLY, VOCAB, tiny_backbone

pytestmark = TENSORFLOW_ONLY
NEEDS_CLIENTS = pytest.mark.skipif(runtimes.clients_python() is None, reason=(
    "the TFLite Task Library and MediaPipe are not installed: tools/edge_clients_venv.sh creates .venv-edge-clients"))
RUNNER = TESTS / "export" / "bad_input_runner.py"
MEGABYTE = "a bad film " * 95326  # 1,048,586 characters
SURROGATES = "\ud800 good film \udfff"
CONTROL = "good\x07 film\x00 bad\x1b"  # a NUL inside
INVALID_UTF8 = b"\xff\xfe good \xc3\x28 film\x80"
NO_ANSWER = "\u200b \u200b"  # zero-width spaces: no token to answer from
LONG_QUESTION = "who " * 200
LABELS = ("negative", "positive")


def encoded(item):
    if isinstance(item, (list, tuple)):
        return [encoded(part) for part in item]
    return {"bytes": item.hex()} if isinstance(item, bytes) else item


def run_each(runtime, path, inputs):
    """Per input, `{"output": ...}`, `{"error": "Type: message"}` or `{"crash": returncode}` of `runtime`."""
    python = sys.executable if runtime == "litert" else str(runtimes.clients_python())
    results, todo = [], list(inputs)
    while todo:
        process = subprocess.run([python, str(RUNNER), runtime, str(path)], input=json.dumps(encoded(todo)),
                                 capture_output=True, text=True)
        lines = [json.loads(line) for line in process.stdout.splitlines() if line.startswith("{")]
        done = [line for line in lines if "start" not in line]
        results += done
        todo = todo[len(done):]
        if todo:  # the process died on todo[0]: record it, go on with the rest
            assert process.returncode, process.stderr[-2000:]
            results.append({"crash": process.returncode, "stderr": process.stderr[-500:]})
            todo = todo[1:]
    return results


def probabilities(result):
    """The probabilities of LABELS in their order (the clients list categories by score)."""
    out = result["output"]
    named = out["probabilities"] if "probabilities" in out else out
    scores = np.array([named[label] for label in LABELS])
    np.testing.assert_allclose(scores.sum(), 1.0, atol=1e-5)
    return scores


@pytest.fixture(scope="module")
def classifier(tmp_path_factory, tokenizer):
    """A tiny two-class classifier: token_ids.tflite, text.tflite and (with the clients) token_ids_metadata.tflite."""
    model = BertClassifier(tiny_backbone(), 2, label_names=list(LABELS))
    # A random encoder's first token hardly changes from text to text: the head, 400 times its initial weights,
    # is centred on a few texts, so that the probabilities differ from text to text.
    head = model.get_layer("logits")
    head.kernel.assign(head.kernel * 400.0)
    encoded_texts = tokenizer.encode(["a bad film " * 20, "good film bad", "\u2603 good film \u2603"], max_length=24)
    head.bias.assign(-keras.ops.mean(model({k: encoded_texts[k] for k in model.input}), axis=0))
    out = tmp_path_factory.mktemp("bad_inputs") / "classifier"
    export_tflite(model, tokenizer, ExportSpec("classifier", 24, label_names=LABELS), out,
                  metadata=runtimes.clients_python() is not None)
    return out


def test_litert_classifier_bad_inputs(classifier):
    """kbert_edge on token_ids.tflite and text.tflite: defined, flagged outputs; an empty text no label (as the
    apps' predict: issue 43); a str that is not valid Unicode is refused by text.tflite's input conversion,
    bytes by the Python tokenizer."""
    texts = ["", MEGABYTE, SURROGATES, CONTROL, INVALID_UTF8]
    references = ["good film bad", "\u2603 good film \u2603", "\u2603\u2603 good \u2603( film\u2603"]
    ids = run_each("litert", classifier / "token_ids.tflite", texts + references)
    text = run_each("litert", classifier / "text.tflite", texts + references)
    for got in (ids, text):
        assert got[0]["output"] == {"text": "", "label": None, "note": "empty text: nothing to classify"}
        assert got[1]["output"]["truncated"]
        # Control characters (a NUL too) are deleted, as BERT's normalizer does.
        np.testing.assert_allclose(probabilities(got[3]), probabilities(got[5]), atol=1e-5)
    np.testing.assert_allclose(probabilities(text[1]), probabilities(ids[1]), atol=1e-4)
    assert abs(probabilities(ids[5])[0] - probabilities(ids[1])[0]) > 1e-3  # the texts are told apart
    # Lone surrogates: the Python tokenizer reads each as an unknown character, as it reads a snowman.
    np.testing.assert_allclose(probabilities(ids[2]), probabilities(ids[6]), atol=1e-6)
    assert text[2] == {"error": "ValueError: PyUnicode_AsUTF8AndSize() failed."}
    # Invalid UTF-8: the graph reads each bad byte as an unknown character.
    np.testing.assert_allclose(probabilities(text[4]), probabilities(text[7]), atol=1e-6)
    assert ids[4]["error"].startswith("TypeError")  # WordPiece.tokenize takes str


@NEEDS_CLIENTS
@pytest.mark.parametrize("client", ["task_library_classifier", "mediapipe_classifier"])
def test_client_classifier_bad_inputs(classifier, client):
    """The Task Library and MediaPipe on the same inputs, against LiteRT on kbert's token ids.

    Observed: both read a text only up to its first NUL and read other control characters (here
    BEL) as unknown characters inside a word (kbert deletes both, as BERT's normalizer does); a
    1 MB text gives the first window's probabilities with no flag that it was cut; a str with
    lone surrogates raises (TypeError in the Task Library's binding, UnicodeEncodeError in
    MediaPipe); the Task Library takes bytes and decodes invalid UTF-8 as text.tflite does,
    MediaPipe takes str only (AttributeError on bytes). Both label an empty text, where kbert_edge gives none
    (issue 43)."""
    texts = ["", MEGABYTE, SURROGATES, CONTROL, INVALID_UTF8]
    got = run_each(client, classifier / runtimes.FILE, texts)
    ids = run_each("litert", classifier / "token_ids.tflite", ["", MEGABYTE, "good\u2603 film", CONTROL])
    lite_invalid = run_each("litert", classifier / "text.tflite", [INVALID_UTF8])[0]
    assert not any("crash" in r for r in got)
    probabilities(got[0])  # defined: they sum to 1
    assert ids[0]["output"]["label"] is None
    np.testing.assert_allclose(probabilities(got[1]), probabilities(ids[1]), atol=1e-4)
    assert "truncated" not in got[1]["output"]
    # Cut at the NUL, the BEL read as an unknown character in the word (as a snowman is), not deleted.
    np.testing.assert_allclose(probabilities(got[3]), probabilities(ids[2]), atol=1e-4)
    assert np.abs(probabilities(got[3]) - probabilities(ids[3])).max() > 1e-3
    if client == "task_library_classifier":
        assert got[2]["error"].startswith("TypeError: classify(): incompatible function arguments")
        np.testing.assert_allclose(probabilities(got[4]), probabilities(lite_invalid), atol=1e-4)
    else:
        assert got[2]["error"].startswith("UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800'")
        assert got[4] == {"error": "AttributeError: 'bytes' object has no attribute 'encode'"}


def test_litert_ner_and_qa_bad_inputs(ner, qa):
    """kbert_edge on the NER and QA exports (24- and 32-token windows). token_ids.tflite and text.tflite
    both read at most the export's `max_windows` windows and flag the rest `truncated`, and flag a QA
    question cut to fit the window; what they read, they answer alike."""
    ner_spec, ner_root = ner[2], ner[3] / "tflite"
    long_text = "Angela Merkel visited Paris. " * 600  # 17,400 characters: more windows than max_windows
    texts = ["", CONTROL, SURROGATES, INVALID_UTF8, MEGABYTE, long_text]
    ids = run_each("litert", ner_root / "token_ids.tflite", texts)
    text = run_each("litert", ner_root / "text.tflite", texts)
    for got in (ids, text):
        assert got[0]["output"] == {"text": "", "entities": [], "truncated": False, "windows": 1}
        assert (got[4]["output"]["truncated"], got[4]["output"]["windows"]) == (True, ner_spec.max_windows)
        assert (got[5]["output"]["truncated"], got[5]["output"]["windows"]) == (True, ner_spec.max_windows)
    assert [e["type"] for e in ids[1]["output"]["entities"]] == [e["type"] for e in text[1]["output"]["entities"]]
    assert "entities" in ids[2]["output"] and text[2] == {"error": "ValueError: PyUnicode_AsUTF8AndSize() failed."}
    assert ids[3]["error"].startswith("TypeError") and text[3]["output"]["truncated"] is False
    spans = [[(e["type"], e["start"], e["end"]) for e in got[5]["output"]["entities"]] for got in (ids, text)]
    assert spans[0] == spans[1] and len(spans[0]) > ner_spec.max_windows  # the same windows read

    qa_spec, qa_root = qa[2], qa[3] / "tflite"
    unanswered = {"text": "", "found": False, "truncated": False, "windows": 1}
    pairs = [("", ""), (LONG_QUESTION, "Angela Merkel visited Paris."), ("Who visited Paris?", NO_ANSWER),
             ("Who\x00 visited?", "Angela\x00 Merkel visited Paris."), (SURROGATES, "Paris \udfff."),
             ("Who visited Paris?", long_text), ("Who visited Paris?", MEGABYTE)]
    ids = run_each("litert", qa_root / "token_ids.tflite", pairs)
    text = run_each("litert", qa_root / "text.tflite", pairs + [(b"Who\xff?", INVALID_UTF8)])
    for got in (ids, text):
        assert got[0]["output"] == unanswered and got[2]["output"] == unanswered
        assert got[1]["output"]["found"] and got[3]["output"]["found"]
        assert got[1]["output"]["truncated"] is True  # the question was cut
        for long in got[5:7]:
            assert (long["output"]["found"], long["output"]["truncated"], long["output"]["windows"]) == (
                True, True, qa_spec.max_windows)
    for i in (1, 3, 5, 6):  # the same spans
        assert (ids[i]["output"]["start"], ids[i]["output"]["end"]) == (text[i]["output"]["start"],
                                                                        text[i]["output"]["end"])
    assert ids[4]["output"]["found"] and text[4] == {"error": "ValueError: PyUnicode_AsUTF8AndSize() failed."}
    assert text[7]["output"]["truncated"] is False


def answers_words(result, context, first=6):
    """Whether each of the Task Library's answers is the context's words at positions `start` to `end` of its input,
    whose context starts at `first` (`[CLS] who visited paris ? [SEP]` before it), one token per word."""
    words = context.split()
    return all(a["text"] == " ".join(words[a["start"] - first:a["end"] - first + 1]) for a in result["output"])


@NEEDS_CLIENTS
def test_task_library_question_answerer_bad_inputs(tmp_path, tokenizer):
    """The Task Library's BertQuestionAnswerer (384 tokens) on a random tiny QA model.

    Observed: no crash; empty inputs and a question over its 64 tokens give no answer (an empty
    list, no flag); a 1 MB context is answered from its first window, with no flag that the rest
    was not read; a context of zero-width spaces, which has no token, is answered all the same,
    each an unknown token to its tokenizer (its answers are whitespace-separated words of the
    context); lone surrogates raise TypeError; bytes are taken, but a context of invalid UTF-8
    raises UnicodeDecodeError when an answer holding a bad byte becomes the result's `text`."""
    keras.utils.set_random_seed(1)
    backbone = BertBackbone.from_preset("bert_tiny", vocabulary_size=len(VOCAB), max_sequence_length=384)
    export_tflite(BertQuestionAnswerer(backbone), tokenizer, ExportSpec("question_answerer", 384, num_texts=2),
                  tmp_path / "qa", text_model=False, metadata=True)
    pairs = [("", ""), (LONG_QUESTION, "Angela Merkel visited Paris."), ("Who visited Paris?", NO_ANSWER),
             ("Who visited Paris?", MEGABYTE), (SURROGATES, "Paris."), (b"Who\xff?", INVALID_UTF8),
             ("Who visited Paris?", "Angela Merkel visited Paris.")]
    got = run_each("task_library_question_answerer", tmp_path / "qa" / runtimes.FILE, pairs)
    assert not any("crash" in r for r in got)
    assert [r["output"] for r in got[:2]] == [[], []]
    assert got[3]["output"] and answers_words(got[3], MEGABYTE) and all(a["end"] < 384 for a in got[3]["output"])
    assert all(set(a) == {"text", "start", "end", "logit"} for a in got[3]["output"])  # no flag
    assert got[2]["output"] and answers_words(got[2], NO_ANSWER)  # the zero-width spaces
    assert got[4]["error"].startswith("TypeError: answer(): incompatible function arguments")
    # It takes bytes, but an answer holding an invalid byte cannot become the result's str field.
    assert got[5]["error"].startswith("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff")
    assert got[6]["output"]  # the same model answers an ordinary pair
