"""Reads SQuAD v1.1 and v2.0 JSON: `{"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}`."""

import json
import pathlib

from kbert.data.readers.squad_example import SquadExample
from kbert.data.readers.tables import Layout, read_table, table_format
from kbert.data.readers.text_file import DataFormatError, read_text

# A table of questions (Hugging Face's squad, as JSON Lines, Parquet or CSV): a column for each; the layout
# may name others.
TABLE_COLUMNS = ("id", "title", "context", "question", "answers")


class SquadFormatError(DataFormatError):
    """An entry of a SQuAD file that cannot be read; the message names the file and the entry (or line)."""


def read_squad(path, articles=None, verbose=True, layout=None):
    """Reads a SQuAD v1.1 or v2.0 JSON file into a list of `SquadExample`, one per question.

    A question of SQuAD 2.0 marked `"is_impossible": true` has no answers (its `plausible_answers` are
    not read), as one with an empty `answers` list.

    A table of a question per row (JSON Lines, a JSON list, Parquet, CSV: Hugging Face's squad
    layout, `TABLE_COLUMNS`, or the columns `layout` names) is read the same way: its articles are
    its titles, in order of first appearance.

    Bytes that are not UTF-8 or text that is not JSON raise `SquadFormatError` naming the
    file and line (`path:line: ...`). A question or context that is empty or not a string,
    an entry missing a field, or an `answer_start` that is not an int offset inside the
    context raises it naming the file, article, paragraph and question id; so does a question id
    that appears twice (its scores would count one question for two). A question without an
    id gets its place as one (`#article.paragraph.question`). An
    answer whose text is not at its `answer_start` is counted and, when the text occurs
    elsewhere in the context, moved to the nearest occurrence; when it does not occur at
    all the example keeps no `answer_start` (training skips it; evaluation still scores
    against its answer texts). The counts are printed (with `verbose`) and kept in
    `read_squad.last_report`.

    Args:
        path: str or path. The JSON file.
        articles: slice or None. Read only these articles (e.g. `slice(0, 80)`).
        verbose: bool. Print how many answers were moved or not found.
        layout: `kbert.data.readers.tables.Layout` or None. The format ("squad" or a table's; None: by the
            suffix and the content) and the columns of `TABLE_COLUMNS` by name.

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "squad.json"
    >>> qa = {"id": "q1", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 0}]}
    >>> _ = path.write_text(json.dumps({"data": [{"title": "T", "paragraphs": [
    ...     {"context": "In Paris.", "qas": [qa]}]}]}))
    >>> examples = read_squad(path, verbose=False)
    >>> examples[0].answer_span, read_squad.last_report["answers_moved"]
    ((3, 8), 1)
    """
    path = pathlib.Path(path)
    layout = layout or Layout()
    data_format = layout.data_format or table_format(path)
    if data_format not in ("squad", "json"):
        return _read_table(path, articles, verbose, layout)
    try:
        document = json.loads(read_text(path))
    except DataFormatError as error:
        raise SquadFormatError(str(error)) from None
    except json.JSONDecodeError as error:
        if error.msg == "Extra data" and data_format == "json":  # JSON Lines, as datasets' to_json writes
            return _read_table(path, articles, verbose, Layout("jsonl", columns=layout.columns))
        raise SquadFormatError(f"{path}:{error.lineno}: not JSON: {error.msg} (column {error.colno}).") from None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        if isinstance(document, list) and document and all(isinstance(record, dict) for record in document) and (
                data_format == "json"):  # a list of records, one per question
            return _read_table(path, articles, verbose, Layout("json", columns=layout.columns))
        raise SquadFormatError(f"{path}: not SQuAD JSON: no 'data' list.")
    located = _Located()
    for a, article in enumerate(data[articles] if articles is not None else data):
        title = article.get("title", f"#{a}") if isinstance(article, dict) else f"#{a}"
        for p, paragraph in enumerate(_field(article, "paragraphs", path, f"article {title!r}")):
            where = f"article {title!r}, paragraph {p}"
            context = _field(paragraph, "context", path, where)
            if not isinstance(context, str) or not context.strip():
                raise SquadFormatError(f"{path}, {where}: the context is empty.")
            for q, qa in enumerate(_field(paragraph, "qas", path, where)):
                place = f"#{a}.{p}.{q}"
                question_id = str(qa.get("id", place)) if isinstance(qa, dict) else place
                question = _field(qa, "question", path, f"{where}, question {question_id}")
                answers = [] if qa.get("is_impossible") is True else qa.get("answers", [])
                located.add(path, where, question_id, question, context, answers, title)
    return located.examples_of(path, verbose)


class _Located:
    """The questions read so far, checked (unique ids, non-empty texts, answers located in their context),
    and how many answers were moved or not found."""

    def __init__(self):
        self.examples, self.places, self.moved, self.missing = [], {}, 0, 0

    def add(self, path, where, question_id, question, context, answers, title):
        entry = f"{where}, question {question_id}" if where else f"question {question_id}"
        if question_id in self.places:
            raise SquadFormatError(f"{path}, {entry}: the question id {question_id!r} is also the id of the "
                                   f"question in {self.places[question_id]}: ids must be unique.")
        self.places[question_id] = where or path
        if not isinstance(question, str) or not question.strip():
            raise SquadFormatError(f"{path}, {entry}: the question is empty.")
        if not isinstance(answers, list):
            raise SquadFormatError(f"{path}, {entry}: the answers are not a list.")
        texts = [str(_field(answer, "text", path, entry)) for answer in answers]
        starts = [_answer_start(answer, context, path, entry) for answer in answers]
        start = None
        if answers:
            start, status = _locate(context, texts[0], starts[0])
            self.moved += status == "moved"
            self.missing += status == "missing"
        self.examples.append(SquadExample(question_id, question, context, texts, start, title))

    def examples_of(self, path, verbose):
        if not self.examples:
            raise SquadFormatError(f"{path}: no questions.")
        read_squad.last_report = {"questions": len(self.examples), "answers_moved": self.moved,
                                  "answers_not_found": self.missing}
        if verbose and (self.moved or self.missing):
            print(f"{path}: {self.moved + self.missing} answer(s) not at their answer_start: {self.moved} moved to "
                  f"the nearest occurrence, {self.missing} not found.")
        return self.examples


def _read_table(path, articles, verbose, layout):
    """SQuAD's questions from a table with a question per row, as Hugging Face's squad lays them out: id,
    title, context, question, and answers as {"text": [...], "answer_start": [...]} (in CSV, its JSON)."""
    layout.check_uses(TABLE_COLUMNS, "question")
    table = read_table(path, layout.data_format, layout.delimiter)
    column = {use: layout.column(use) or use for use in TABLE_COLUMNS}
    for use in ("context", "question"):
        table.column(column[use], f"the {use} column")  # raises naming the columns there are
    titles = list(dict.fromkeys(row.get(column["title"]) or "" for row in table.rows))
    kept = set(titles[articles] if articles is not None else titles)
    located = _Located()
    for index, row in enumerate(table.rows):
        title = row.get(column["title"]) or ""
        if title not in kept:
            continue
        where = table.where(index)
        context = row.get(column["context"])
        if not isinstance(context, str) or not context.strip():
            raise SquadFormatError(f"{where}: the context is empty.")
        question_id = str(row.get(column["id"]) or f"#{index}")
        located.add(where, "", question_id, row.get(column["question"]), context,
                    _answers(row.get(column["answers"]), where), title)
    return located.examples_of(path, verbose)


def _answers(value, where):
    """SQuAD's answers of a table cell: {"text": [...], "answer_start": [...]} (or its JSON), or a list of
    {"text", "answer_start"}; None: no answers."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise SquadFormatError(f"{where}: the answers are not JSON: {error.msg}.") from None
    if value is None or isinstance(value, list):
        return value or []
    if isinstance(value, dict) and isinstance(value.get("text"), list):
        starts = value.get("answer_start") or [None] * len(value["text"])
        if len(starts) != len(value["text"]):
            raise SquadFormatError(f"{where}: {len(value['text'])} answer texts but {len(starts)} answer_starts.")
        return [{"text": text, "answer_start": start} for text, start in zip(value["text"], starts)]
    raise SquadFormatError(f"{where}: the answers are not {{'text': [...], 'answer_start': [...]}}: {value!r:.80}")


def _field(entry, key, path, where):
    if not isinstance(entry, dict) or key not in entry:
        raise SquadFormatError(f"{path}, {where}: missing field {key!r}.")
    return entry[key]


def _answer_start(answer, context, path, where):
    """The answer's `answer_start`: None if absent, else an int offset inside the context."""
    start = answer.get("answer_start")
    if start is not None and (not isinstance(start, int) or isinstance(start, bool)
                              or not 0 <= start < len(context)):
        raise SquadFormatError(f"{path}, {where}: answer_start {start!r} is not a character offset "
                               f"in the context (an int from 0 to {len(context) - 1}).")
    return start


def _locate(context, text, start):
    """(start, status): the given start if the text is there, else the nearest occurrence."""
    if start is not None and context[start : start + len(text)] == text and text:
        return start, "ok"
    if not text:
        return None, "missing"
    found, at = [], context.find(text)
    while at >= 0:
        found.append(at)
        at = context.find(text, at + 1)
    if not found:
        return None, "missing"
    return min(found, key=lambda i: abs(i - (start or 0))), "moved"
