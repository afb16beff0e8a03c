import json
import re

import keras
import pytest

from kbert.data.readers.squad import SquadFormatError, read_squad
from kbert.data.readers.tables import Layout
from kbert.data.readers.text_file import DataFormatError


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


def test_a_question_id_used_twice_is_refused_and_missing_ids_are_places(tmp_path):
    """Issue 43: a duplicate id was scored on one question fewer than reported."""
    context = "Paris is a city."
    path = write(tmp_path, [{"context": context, "qas": [qa("Which city?", "Paris", 0, "q7")]},
                            {"context": context, "qas": [qa("What is Paris?", "a city", 9, "q7")]}])
    with pytest.raises(SquadFormatError, match=re.escape("article 'France', paragraph 1, question q7: the question "
                                                         "id 'q7' is also the id of the question in article "
                                                         "'France', paragraph 0: ids must be unique")):
        read_squad(path)
    no_ids = [{"question": "Which city?", "answers": []}, {"question": "What?", "answers": []}]
    path = write(tmp_path, [{"context": context, "qas": no_ids}, {"context": context, "qas": no_ids[:1]}])
    assert [e.id for e in read_squad(path)] == ["#0.0.0", "#0.0.1", "#0.1.0"]


def squad_rows(document):
    """SQuAD JSON as Hugging Face's squad lays it out: a question a row, its answers {text: [...], answer_start: [...]}."""
    return [{"id": qa["id"], "title": article["title"], "context": paragraph["context"], "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for article in document["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def test_hugging_face_squad_tables_read_as_the_squad_json(tmp_path, data_dir):
    """The shared SQuAD's first three articles as JSON Lines, a JSON list and Parquet (written by pandas): the same
    questions, answers, located spans and articles as the SQuAD JSON; `articles` counts titles."""
    import pandas as pd

    document = json.loads((data_dir / "squad" / "train-v1.1.json").read_text("utf-8"))
    document = {"version": "1.1", "data": document["data"][:3]}
    (tmp_path / "squad.json").write_text(json.dumps(document))
    expected = read_squad(tmp_path / "squad.json", verbose=False)
    frame = pd.DataFrame(squad_rows(document))
    frame.to_json(tmp_path / "squad.jsonl", orient="records", lines=True)
    frame.to_json(tmp_path / "records.json", orient="records")
    frame.to_parquet(tmp_path / "squad.parquet")
    for name in ("squad.jsonl", "records.json", "squad.parquet"):
        assert read_squad(tmp_path / name, verbose=False) == expected, name
    assert read_squad(tmp_path / "squad.jsonl", articles=slice(0, 2), verbose=False) == read_squad(
        tmp_path / "squad.json", articles=slice(0, 2), verbose=False)
    renamed = frame.rename(columns={"context": "passage"})
    renamed.to_json(tmp_path / "renamed.jsonl", orient="records", lines=True)
    assert read_squad(tmp_path / "renamed.jsonl", layout=Layout(columns={"context": "passage"}),
                      verbose=False) == expected
    with pytest.raises(DataFormatError, match=re.escape("renamed.jsonl: no column 'context' (the context column); "
                                                        "its columns are ['id', 'title', 'passage', 'question', "
                                                        "'answers']")):
        read_squad(tmp_path / "renamed.jsonl")


def test_bad_answers_in_a_table_name_the_row(tmp_path):
    row = {"id": "q", "title": "T", "context": "In Paris.", "question": "Where?",
           "answers": {"text": ["Paris", "it"], "answer_start": [3]}}
    (tmp_path / "q.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(DataFormatError, match=re.escape("q.jsonl:1: 2 answer texts but 1 answer_starts")):
        read_squad(tmp_path / "q.jsonl")


def test_squad_2_unanswerable_questions_have_no_answers(tmp_path):
    """SQuAD 2.0 marks them "is_impossible" with no answers (its plausible_answers are not answers)."""
    impossible = {"id": "q2", "question": "Who is the mayor?", "answers": [], "is_impossible": True,
                  "plausible_answers": [{"text": "Paris", "answer_start": 0}]}
    path = write(tmp_path, [{"context": "Paris is a city.", "qas": [
        {**qa("Which city?", "Paris", 0), "is_impossible": False}, impossible]}])
    examples = read_squad(path, verbose=False)
    assert [(e.answers, e.answer_start) for e in examples] == [(["Paris"], 0), ([], None)]
    assert read_squad.last_report["answers_not_found"] == 0
