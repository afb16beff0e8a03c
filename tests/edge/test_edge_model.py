"""kbert_edge.EdgeModel on token ids: the window cap (`max_windows`) and the `truncated` flag, as the
string-in exports give them, with a stand-in interpreter (numpy rules over token ids, no .tflite file)."""

import importlib
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert_core import MAX_WINDOWS
from kbert_edge import EdgeModel
from tests.conftest import TESTS

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
edge_model = importlib.import_module("kbert_edge.edge_model")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "angela", "merkel", "visited", "paris", "who", ".", "?", "##a"]
ANGELA, MERKEL, PARIS = 5, 6, 8
SENTENCE = "Angela Merkel visited Paris. "  # 5 tokens, one a word


class Interpreter:
    """LiteRT's interpreter as EdgeModel uses it: one signature, run on (1, max_length) token ids."""

    def __init__(self, outputs):
        self.outputs, self.calls = outputs, 0

    def get_signature_list(self):
        return {"token_ids": {}}

    def get_signature_runner(self, name):
        return self.run

    def run(self, token_ids, segment_ids, padding_mask):
        self.calls += 1
        return self.outputs(np.asarray(token_ids), np.asarray(segment_ids))


def ner_outputs(token_ids, segment_ids):
    """angela: B-PER, merkel: I-PER, else O (probability 0.9)."""
    tags = np.where(token_ids == ANGELA, 1, np.where(token_ids == MERKEL, 2, 0))
    probabilities = np.full(token_ids.shape + (3,), 0.05, "float32")
    np.put_along_axis(probabilities, tags[..., None], 0.9, axis=-1)
    return {"probabilities": probabilities, "logits": np.log(probabilities)}


def qa_outputs(token_ids, segment_ids):
    """Start and end at every "paris" of the context."""
    logits = np.where((token_ids == PARIS) & (segment_ids == 1), 5.0, 0.0).astype("float32")
    return {"start_logits": logits, "end_logits": logits}


def classifier_outputs(token_ids, segment_ids):
    return {"probabilities": np.tile(np.float32([0.25, 0.75]), (len(token_ids), 1)),
            "logits": np.zeros((len(token_ids), 2), "float32")}


def backbone_outputs(token_ids, segment_ids):
    return {"embeddings": np.ones((len(token_ids), 4), "float32")}


def edge(tmp_path, monkeypatch, spec, outputs, name="token_ids.tflite", **options):
    """An EdgeModel over a folder holding `spec` as export.json and VOCAB, run by `Interpreter(outputs)`."""
    (tmp_path / "export.json").write_text(json.dumps({"label_names": None, **spec}))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    interpreter = Interpreter(outputs)
    monkeypatch.setattr(edge_model, "load_interpreter", lambda path, text_model, num_threads: interpreter)
    return EdgeModel(tmp_path / name, **options), interpreter


NER = {"model_kind": "token_classifier", "max_length": 12, "label_names": ["O", "B-PER", "I-PER"]}
QA = {"model_kind": "question_answerer", "max_length": 16, "max_question_length": 4, "doc_stride": 4, "n_best": 5,
      "max_answer_length": 5}


def test_ner_reads_at_most_max_windows_and_says_truncated(tmp_path, monkeypatch):
    text = SENTENCE * 20  # 100 tokens: 10 windows of 10
    model, interpreter = edge(tmp_path, monkeypatch, {**NER, "max_windows": 3}, ner_outputs)
    [result] = model.predict([text])
    assert (result["windows"], result["truncated"], interpreter.calls) == (3, True, 3)
    read = 6 * len(SENTENCE)  # the 30 tokens of 3 windows
    assert [e["text"] for e in result["entities"]] == ["Angela Merkel"] * 6
    assert max(e["end"] for e in result["entities"]) < read
    model, interpreter = edge(tmp_path, monkeypatch, {**NER, "max_windows": 3}, ner_outputs, max_windows=10)
    [result] = model.predict([text])
    assert (result["windows"], result["truncated"], interpreter.calls) == (10, False, 10)
    assert len(result["entities"]) == 20
    [short] = model.predict([SENTENCE])
    assert (short["windows"], short["truncated"]) == (1, False)


def test_a_word_cut_at_the_last_window_read_ends_where_reading_ends(tmp_path, monkeypatch):
    """A word longer than a window is cut inside it; its entity ends with the last piece read."""
    text = "Angela" + "a" * 13  # angela ##a x 13: 14 pieces, windows of 10 and 4
    model, _ = edge(tmp_path, monkeypatch, {**NER, "max_windows": 1}, ner_outputs)
    [result] = model.predict([text])
    assert (result["windows"], result["truncated"]) == (1, True)
    assert [(e["start"], e["end"]) for e in result["entities"]] == [(0, 15)]  # angela and 9 ##a
    [result] = edge(tmp_path, monkeypatch, NER, ner_outputs)[0].predict([text])
    assert (result["windows"], result["truncated"], result["entities"][0]["end"]) == (2, False, 19)


def test_the_cap_defaults_to_the_exports_and_else_to_max_windows(tmp_path, monkeypatch):
    assert edge(tmp_path, monkeypatch, {**NER, "max_windows": 7}, ner_outputs)[0].max_windows == 7
    old = edge(tmp_path, monkeypatch, NER, ner_outputs)[0]  # an export.json that does not record it
    assert old.max_windows == MAX_WINDOWS
    [result] = old.predict([SENTENCE * (2 * MAX_WINDOWS + 2)])  # 2 sentences per window
    assert (result["windows"], result["truncated"]) == (MAX_WINDOWS, True)
    with pytest.raises(ValueError, match="at least 1"):
        edge(tmp_path, monkeypatch, NER, ner_outputs, max_windows=0)
    # text.tflite holds its cap in its graph: another one is refused, the same one taken.
    with pytest.raises(ValueError, match="fixed when it was exported"):
        edge(tmp_path, monkeypatch, {**NER, "max_windows": 3}, ner_outputs, name="text.tflite", max_windows=5)
    assert edge(tmp_path, monkeypatch, {**NER, "max_windows": 3}, ner_outputs, name="text.tflite",
                max_windows=3)[0].max_windows == 3


def test_qa_reads_at_most_max_windows_and_flags_a_cut_question(tmp_path, monkeypatch):
    model, interpreter = edge(tmp_path, monkeypatch, {**QA, "max_windows": 3}, qa_outputs)
    # 4 question tokens leave 9 per window, starts 4 apart: 10 context tokens, 2 windows.
    answer = model.answer_question("Who visited Paris?", SENTENCE * 2)
    assert (answer["text"], answer["windows"], answer["truncated"], interpreter.calls) == ("Paris", 2, False, 2)
    interpreter.calls = 0
    answer = model.answer_question("Who visited Paris?", SENTENCE * 10)  # 50 tokens: 11 windows
    assert (answer["found"], answer["windows"], answer["truncated"], interpreter.calls) == (True, 3, True, 3)
    assert answer["end"] <= 3 * len(SENTENCE)  # inside the 17 tokens of 3 windows
    cut = model.answer_question("who who who who who", SENTENCE)  # 5 question tokens, 4 kept
    assert (cut["text"], cut["windows"], cut["truncated"]) == ("Paris", 1, True)
    # Unanswered: the flags all the same.
    assert model.answer_question("who", "") == {"text": "", "found": False, "truncated": False, "windows": 1}
    assert model.answer_question("who " * 9, "") == {"text": "", "found": False, "truncated": True, "windows": 1}


def test_qa_questions_are_cut_to_leave_room_for_the_context(tmp_path, monkeypatch):
    """max_question_length over max_length - 4: the question is cut to max_length - 4 tokens, as the
    string-in export cuts it, and answered, not refused."""
    model, _ = edge(tmp_path, monkeypatch, {**QA, "max_question_length": 64}, qa_outputs)
    answer = model.answer_question("who " * 13, SENTENCE)  # 13 tokens, 12 kept: 1 context token a window
    assert (answer["text"], answer["truncated"], answer["windows"]) == ("Paris", True, 5)  # one per context token
    assert model.answer_question("who " * 12, SENTENCE)["truncated"] is False


def test_classifier_and_backbone_say_when_the_text_was_cut(tmp_path, monkeypatch):
    spec = {"model_kind": "classifier", "max_length": 8, "label_names": ["negative", "positive"]}
    model, _ = edge(tmp_path, monkeypatch, spec, classifier_outputs)
    assert [r["truncated"] for r in model.predict(["Paris.", SENTENCE * 2])] == [False, True]
    model, _ = edge(tmp_path, monkeypatch, {"model_kind": "backbone", "max_length": 8}, backbone_outputs)
    assert [r["truncated"] for r in model.predict(["Paris.", SENTENCE * 2])] == [False, True]


def test_a_classifier_gives_an_empty_text_no_label_as_the_apps_do(tmp_path, monkeypatch):
    """Issue 43: edge_predict on '' or blank stdin lines answered "positive 0.75" of nothing."""
    spec = {"model_kind": "classifier", "max_length": 8, "label_names": ["negative", "positive"]}
    model, interpreter = edge(tmp_path, monkeypatch, spec, classifier_outputs)
    results = model.predict(["", "Paris.", "  \t", "Paris."])
    assert [r["label"] for r in results] == [None, "positive", None, "positive"]
    assert results[0] == {"text": "", "label": None, "note": "empty text: nothing to classify"}
    assert interpreter.calls == 1  # the two texts in one batch
    assert [r["label"] for r in model.predict(["a", "b"], pairs=["Paris.", " "])] == ["positive", None]
    assert [r["label"] for r in model.predict([" "])] == [None] and interpreter.calls == 2  # nothing to run


@pytest.mark.parametrize("first", ["tensorflow_text", "kbert_edge"])
def test_text_kernels_load_once_beside_tensorflow_text(first):
    """text.tflite's kernels (tensorflow-text's registrar) beside `import tensorflow_text`, in either order: the
    process exits cleanly (loaded twice, it aborted at exit with "free(): invalid pointer"; TensorFlow imported
    after the kernels segfaulted)."""
    pytest.importorskip("tensorflow_text", reason="tensorflow-text is not installed")
    load = "from kbert_edge.edge_model import _tf_text_registrars; _tf_text_registrars()"
    steps = ["import tensorflow_text", load]
    script = "; ".join(steps if first == "tensorflow_text" else steps[::-1]) + "; print('done')"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=TESTS.parent,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert (result.returncode, result.stdout) == (0, "done\n"), result.stderr[-2000:]


def test_read_tokenizer_reads_each_kind_and_refuses_others(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    wordpiece = edge_model.read_tokenizer(tmp_path, "wordpiece")
    assert type(wordpiece).__name__ == "WordPiece" and not wordpiece.lowercase
    with pytest.raises(FileNotFoundError, match="holds neither vocab.json and merges.txt nor tokenizer.json"):
        edge_model.read_tokenizer(tmp_path, "byte_level_bpe")
    with pytest.raises(ValueError, match=r"export.json: tokenizer kind 'bpe' is not one of wordpiece, sentence_piece"):
        edge_model.read_tokenizer(tmp_path, "bpe")
