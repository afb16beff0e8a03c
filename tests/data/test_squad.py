import json
import re

import keras
import numpy as np
import pytest

from kbert.data.squad import SquadFormatError, read_squad
from kbert.data.squad_example import SquadExample
from kbert.data.squad_windows import SquadWindows
from kbert.text import BertTokenizer

WORDS = ["who", "is", "the", "king", "of", "france", "paris", "river", "city", "a", "?", "."]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])


def write(tmp_path, paragraphs):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "France", "paragraphs": paragraphs}]}))
    return path


def qa(question, text, start, id="q1"):
    return {"id": id, "question": question, "answers": [{"text": text, "answer_start": start}]}


def test_misplaced_answers_are_counted_not_fatal(tmp_path, capsys):
    context = "Paris is a city. Paris is the king."
    path = write(tmp_path, [{"context": context, "qas": [
        qa("Which city?", "Paris", 0, "ok"), qa("Who?", "Paris", 20, "moved"), qa("What?", "Lyon", 3, "lost")]}])
    examples = read_squad(path)
    assert [e.answer_start for e in examples] == [0, 17, None]
    assert read_squad.last_report == {"questions": 3, "answers_moved": 1, "answers_not_found": 1}
    assert "2 answer(s) not at their answer_start: 1 moved" in capsys.readouterr().out
    assert examples[2].answers == ["Lyon"]  # still scored at evaluation


def test_empty_entries_are_named(tmp_path):
    with pytest.raises(SquadFormatError, match=r"article 'France', paragraph 0, question q7: the question is empty"):
        read_squad(write(tmp_path, [{"context": "Paris.", "qas": [qa(" ", "Paris", 0, "q7")]}]))
    with pytest.raises(SquadFormatError, match=r"article 'France', paragraph 1: the context is empty"):
        read_squad(write(tmp_path, [{"context": "Paris.", "qas": []}, {"context": "", "qas": []}]))
    with pytest.raises(SquadFormatError, match="missing field 'question'"):
        read_squad(write(tmp_path, [{"context": "Paris.", "qas": [{"id": "x", "answers": []}]}]))
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(SquadFormatError, match="not SQuAD JSON"):
        read_squad(tmp_path / "bad.json")


once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
@pytest.mark.parametrize("start", [-6, 40, "3", 3.0, True, None])
def test_answer_start_is_an_int_inside_the_context(tmp_path, start):
    path = write(tmp_path, [{"context": "In Paris.", "qas": [qa("Where?", "Paris", start)]}])
    if start is None:  # no offset given: the answer is looked up in the context
        assert read_squad(path, verbose=False)[0].answer_start == 3
        return
    message = f"question q1: answer_start {start!r} is not a character offset in the context (an int from 0 to 8)"
    with pytest.raises(SquadFormatError, match=re.escape(message)):
        read_squad(path)


@once
def test_invalid_utf8_and_json_errors_name_the_line(tmp_path):
    path = tmp_path / "squad.json"
    path.write_bytes(b'{"data": [\n{"title": "T", "paragraphs": [{"context": "Caf\xe9", "qas": []}]}]}')
    with pytest.raises(SquadFormatError, match="squad.json:2: invalid UTF-8: byte 0xe9 at column 47"):
        read_squad(path)
    path.write_text('{"data": [\n  {"title": "T",}\n]}')
    with pytest.raises(SquadFormatError, match=r"squad.json:2: not JSON: Expecting property name .* \(column 17\)"):
        read_squad(path)


def test_windows_answer_positions_and_cls(tokenizer):
    context = " ".join(["river"] * 20 + ["Paris", "."] + ["city"] * 20)
    example = SquadExample("q", "Who is the king?", context, ["Paris"], context.index("Paris"))
    windows = SquadWindows(tokenizer, [example], max_length=16, doc_stride=4, training=True)
    budget = 16 - 5 - 3
    assert len(windows) == 1 + -(-(42 - budget) // 4)
    for r in range(len(windows)):
        ids = windows.inputs["token_ids"][r]
        start, end = windows.start_positions[r], windows.end_positions[r]
        if start:
            assert ids[start] == tokenizer.token_to_id("paris") and start == end
        else:  # windows without the answer point at [CLS]
            assert tokenizer.token_to_id("paris") not in ids.tolist()
    assert (windows.start_positions > 0).sum() == 2  # "paris" sits in two overlapping windows
    assert windows.inputs["segment_ids"][0].tolist() == [0] * 7 + [1] * 9


def test_decode_across_windows_maps_back_to_the_original_text(tokenizer):
    context = "A river. " * 10 + "The King of FRANCE is a city. " + "A river. " * 10
    example = SquadExample("q", "Who?", context)
    windows = SquadWindows(tokenizer, [example], max_length=16, doc_stride=5)
    start_logits = np.zeros(windows.inputs["token_ids"].shape)
    end_logits = np.zeros_like(start_logits)
    start_logits[:, 0] = end_logits[:, 0] = 100.0  # [CLS] and the question never win
    start_logits[:, 2] = end_logits[:, 2] = 100.0
    for r in range(len(windows)):
        for position, (a, b) in enumerate(windows.offsets[r]):
            if context[a:b] == "King":
                start_logits[r, position] = 5.0
            if context[a:b] == "FRANCE":
                end_logits[r, position] = 4.0
            if context[a:b] == "city":
                end_logits[r, position] = 9.0  # 6 tokens from "King": beyond max_answer_length
    best = windows.decode(start_logits, end_logits, n_best=20, max_answer_length=3)[0]
    assert best[0]["text"] == "King of FRANCE" and best[0]["score"] == pytest.approx(9.0)
    assert context[best[0]["start"] : best[0]["end"]] == "King of FRANCE"
    short = windows.decode(start_logits, end_logits, max_answer_length=2)[0]
    assert short and all(len(b["text"].split()) <= 2 for b in short)
    assert sum(b["probability"] for b in best) == pytest.approx(1.0)


def test_ten_thousand_word_context(tokenizer):
    context = " ".join(["river city"] * 5000)
    windows = SquadWindows(tokenizer, [SquadExample("q", "who?", context)], max_length=384, doc_stride=128)
    covered = windows.offsets[:, :, 1].max()
    assert covered == len(context) and windows.inputs["token_ids"].shape[1] == 384
