"""Reads NER sentences (words and their tags) from a file of any format: CoNLL text, or a table (JSON Lines,
JSON, Parquet, CSV) of word lists and tag lists, as Hugging Face's conll2003 lays them out (tag ids whose
names the file's features, a file or a flag give)."""

import json
import pathlib

from kbert.data.readers.conll import read_conll, tag_problem, to_iob2
from kbert.data.readers.tables import SUFFIX_FORMATS, Layout, read_table
from kbert.data.readers.tagged_sentences import TaggedSentences
from kbert.data.readers.text_file import DataFormatError

# The columns read when none is named: the first of each tuple that the table has (conll2003's first).
TOKENS_COLUMNS = ("tokens", "words")
TAGS_COLUMNS = ("ner_tags", "tags", "labels")


def read_tagged_sentences(path, label_names=None, labeled=True, layout=None):
    """Reads words and BIO tags from the file `path` into `TaggedSentences`, by its format.

    A file whose suffix is not a table's (`.txt`, `.conll`, anything but .csv, .tsv, .jsonl, .json,
    .parquet), or a layout of format "conll", is CoNLL text (`read_conll`). A table holds a sentence
    per row: its words in the first of `TOKENS_COLUMNS` and its tags in the first of `TAGS_COLUMNS`
    it has (or the columns the layout names for "tokens" and "tags"), each a list (in CSV or TSV, a
    JSON list or words separated by spaces). Tags are BIO or IOB1 names (converted to BIO, as CoNLL's
    are), or ids of the layout's `class_names`, or of the names a Parquet file written by `datasets`
    records. A row that cannot be read raises `DataFormatError` naming the file and line (or row).

    Args:
        path: str or path. The file.
        label_names: list of str or None. The allowed BIO tags (e.g. a trained model's).
        labeled: bool. False reads the words only.
        layout: `kbert.data.readers.tables.Layout` or None. The format (None: by the suffix), the columns of
            "tokens" and "tags", and the tag names of the ids a tags column holds.

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "conll.jsonl"
    >>> _ = path.write_text('{"tokens": ["EU", "rejects", "German"], "ner_tags": [3, 0, 7]}\\n')
    >>> names = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
    >>> data = read_tagged_sentences(path, layout=Layout(class_names=names))
    >>> data.words, data.tags
    ([['EU', 'rejects', 'German']], [['B-ORG', 'O', 'B-MISC']])
    """
    layout = layout or Layout()
    layout.check_uses(("tokens", "tags"), "NER")
    data_format = layout.data_format
    if data_format == "conll" or (data_format is None and pathlib.Path(path).suffix.lower() not in (
            set(SUFFIX_FORMATS) - {".txt"})):
        return read_conll(path, label_names=label_names, labeled=labeled)
    table = read_table(path, data_format, layout.delimiter)
    tokens_column = table.column_for("tokens", layout.column("tokens"), TOKENS_COLUMNS)
    tags_column = table.column_for("tags", layout.column("tags"), TAGS_COLUMNS) if labeled else None
    names = list(layout.class_names or table.class_names.get(tags_column) or []) or None
    allowed = None if label_names is None else set(label_names)
    sentences, tags, places = [], [], []
    for index, row in enumerate(table.rows):
        where = table.where(index)
        words = _strings(row.get(tokens_column), tokens_column, where)
        if not words:
            continue  # an empty sentence, as CoNLL's blank lines
        sentences.append(words)
        places.append(index + 1)
        if labeled:
            row_tags = [_tag_name(tag, names, tags_column, where)
                        for tag in _strings(row.get(tags_column), tags_column, where, ids=True)]
            if len(row_tags) != len(words):
                raise DataFormatError(f"{where}: {len(words)} words but {len(row_tags)} tags.")
            for tag in row_tags:
                problem = tag_problem(tag, allowed)
                if problem:
                    raise DataFormatError(f"{where}: {problem}")
            tags.append(to_iob2(row_tags))
    if not sentences:
        raise DataFormatError(f"{table.source}: no sentences.")
    return TaggedSentences(sentences, tags if labeled else None, places, table.source)


def _strings(value, column, where, ids=False):
    """A cell's list: a list, or in a CSV or TSV cell a JSON list or words separated by spaces."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                raise DataFormatError(f"{where}: column {column!r} is not a JSON list: {error.msg}.") from None
        else:
            value = text.split()
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(item, str) or (ids and isinstance(item, int) and not isinstance(item, bool)) for item in value):
        raise DataFormatError(f"{where}: column {column!r} is not a list of {'tags' if ids else 'words'}: "
                              f"{value!r:.80}")
    return list(value)


def _tag_name(tag, names, column, where):
    """A tag's name: itself, or the name of its id (an int, or the digits of a CSV cell)."""
    if isinstance(tag, str) and not tag.isdecimal():
        return tag
    if names is None:
        raise DataFormatError(f"{where}: column {column!r} holds tag ids ({tag}): give the tag names in id order "
                              "(O,B-PER,I-PER,...).")
    if not 0 <= int(tag) < len(names):
        raise DataFormatError(f"{where}: tag id {tag} is not an id of the {len(names)} tag names {names}.")
    return names[int(tag)]
