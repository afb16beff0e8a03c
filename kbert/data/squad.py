"""Reads SQuAD v1.1 JSON: `{"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}`."""

import json
import pathlib

from kbert.data.squad_example import SquadExample
from kbert.data.text_file import DataFormatError, read_text


class SquadFormatError(DataFormatError):
    """An entry of a SQuAD file that cannot be read; the message names the file and the entry (or line)."""


def read_squad(path, articles=None, verbose=True):
    """Reads a SQuAD v1.1 JSON file into a list of `SquadExample`, one per question.

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
    try:
        document = json.loads(read_text(path))
    except DataFormatError as error:
        raise SquadFormatError(str(error)) from None
    except json.JSONDecodeError as error:
        raise SquadFormatError(f"{path}:{error.lineno}: not JSON: {error.msg} (column {error.colno}).") from None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise SquadFormatError(f"{path}: not SQuAD JSON: no 'data' list.")
    examples, moved, missing, places = [], 0, 0, {}
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
                entry = f"{where}, question {question_id}"
                if question_id in places:
                    raise SquadFormatError(f"{path}, {entry}: the question id {question_id!r} is also the id of the "
                                           f"question in {places[question_id]}: ids must be unique.")
                places[question_id] = where
                question = _field(qa, "question", path, entry)
                if not isinstance(question, str) or not question.strip():
                    raise SquadFormatError(f"{path}, {entry}: the question is empty.")
                answers = qa.get("answers", [])
                texts = [str(_field(answer, "text", path, entry)) for answer in answers]
                starts = [_answer_start(answer, context, path, entry) for answer in answers]
                start = None
                if answers:
                    start, status = _locate(context, texts[0], starts[0])
                    moved += status == "moved"
                    missing += status == "missing"
                examples.append(SquadExample(question_id, question, context, texts, start, title))
    if not examples:
        raise SquadFormatError(f"{path}: no questions.")
    read_squad.last_report = {"questions": len(examples), "answers_moved": moved, "answers_not_found": missing}
    if verbose and (moved or missing):
        print(f"{path}: {moved + missing} answer(s) not at their answer_start: {moved} moved to the "
              f"nearest occurrence, {missing} not found.")
    return examples


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
