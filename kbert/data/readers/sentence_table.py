"""Reads sentences (or pairs) and their labels from a file of any format kbert reads (`kbert.data.readers.tables`), its
columns picked by name: Hugging Face's layouts of GLUE read without naming any."""

import numpy as np

from kbert.data.readers.sentence_tsv import labelled_examples, read_sentence_tsv
from kbert.data.readers.tables import Layout, read_table, table_format
from kbert.data.readers.text_file import DataFormatError

# The columns read when none is named: the first of each tuple that the table has (GLUE's, IMDB's and SNLI's).
TEXT_COLUMNS = ("sentence", "text")
PAIR_TEXT_COLUMNS = ("sentence1", "premise", "question1", "question", "text")
PAIR_COLUMNS = ("sentence2", "hypothesis", "question2", "sentence", "text_pair")
LABEL_COLUMNS = ("label", "labels", "score", "gold_label")


def read_sentences(path, num_texts=1, label_names=None, regression=False, labeled=True, skip_bad_rows=False,
                   multi_label=False, score_range=None, layout=None):
    """Reads texts (or pairs) and labels from the file `path` into `SentenceExamples`, by its format.

    A TSV file whose layout names no column is read as `read_sentence_tsv` reads it (columns in
    order: text, pair, label; the header optional). Any other file (CSV, JSON Lines, JSON, Parquet:
    see `kbert.data.readers.tables.read_table`), or a TSV whose layout names columns, is read by column
    names: the text column is the first of `TEXT_COLUMNS` (pairs: `PAIR_TEXT_COLUMNS` and
    `PAIR_COLUMNS`) and the label column the first of `LABEL_COLUMNS` that the file has, unless the
    layout names them. Labels
    may be class names, ids (ints, or their text), scores, or for multi-label a list of names or ids
    (or a comma-separated cell); where a Parquet file written by `datasets` records the label
    column's class names, they are the classes when `label_names` is None. A row that cannot be read
    raises `DataFormatError` naming the file and line (or row), or with `skip_bad_rows` is skipped.

    Args:
        path: str or path. The file.
        num_texts, label_names, regression, labeled, skip_bad_rows, multi_label, score_range: as
            `read_sentence_tsv`'s.
        layout: `kbert.data.readers.tables.Layout` or None. The file's format (None: by its suffix), and the
            columns of the uses "text", "pair" and "label" by name (any of them; the others by default).

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "reviews.csv"
    >>> _ = path.write_text('review,sentiment\\n"Long, slow; fun",pos\\ndull,neg\\n')
    >>> data = read_sentences(path, layout=Layout(columns={"text": "review", "label": "sentiment"}))
    >>> data.texts, data.labels.tolist(), data.label_names
    (['Long, slow; fun', 'dull'], [1, 0], ['neg', 'pos'])
    """
    layout = layout or Layout()
    layout.check_uses(("text", "pair", "label"), "sentence")
    columns = {key: value for key, value in (layout.columns or {}).items() if value}
    data_format = table_format(path, layout.data_format)
    read = dict(num_texts=num_texts, label_names=label_names or layout.class_names, regression=regression,
                labeled=labeled, skip_bad_rows=skip_bad_rows, multi_label=multi_label, score_range=score_range)
    if data_format == "tsv" and not columns:
        return read_sentence_tsv(path, **read)
    return sentences_of_table(read_table(path, data_format, layout.delimiter), columns=columns, **read)


def sentences_of_table(table, num_texts=1, label_names=None, regression=False, labeled=True, skip_bad_rows=False,
                       multi_label=False, score_range=None, columns=None):
    """`SentenceExamples` of the columns of a `kbert.data.readers.tables.Table` (see `read_sentences`)."""
    columns = columns or {}
    names = [table.column_for("text", columns.get("text"), PAIR_TEXT_COLUMNS if num_texts == 2 else TEXT_COLUMNS)]
    if num_texts == 2:
        names.append(table.column_for("pair", columns.get("pair"), PAIR_COLUMNS, exclude=names[0]))
    label_column = table.column_for("label", columns.get("label"), LABEL_COLUMNS) if labeled else None
    rows, raw_labels, skipped = [], [], []
    for index, row in enumerate(table.rows):
        try:
            texts = [_text(row.get(name), name) for name in names]
            label = _label_cell(row.get(label_column), multi_label) if labeled else None
        except DataFormatError as error:
            if not skip_bad_rows:
                raise DataFormatError(f"{table.where(index)}: {error}") from None
            skipped.append((index, str(error)))
            continue
        rows.append(texts)
        raw_labels.append((index, label))
    return labelled_examples(rows, raw_labels if labeled else None, skipped, table.source, table.places.__getitem__,
                             label_names or table.class_names.get(label_column), regression, multi_label, score_range,
                             skip_bad_rows)


def _text(value, column):
    if not isinstance(value, str):
        raise DataFormatError(f"column {column!r} is {'missing' if value is None else 'not a text: ' + repr(value)}")
    if not value.strip():
        raise DataFormatError(f"column {column!r} (a text) is empty")
    return value.strip()


def _label_cell(value, multi_label):
    """A label as the cell of a TSV would hold it: a name, an id, a score (multi-label: names joined by commas)."""
    if multi_label and isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(_label_cell(item, False) for item in value)
    if value is None or isinstance(value, (bool, list, tuple, dict)):
        problem = "missing" if value is None else f"not a name, id or score: {value!r}"
        raise DataFormatError(f"the label is {problem}")
    if isinstance(value, float) and value.is_integer():  # an id a table of floats holds (pandas, with gaps)
        return str(int(value))
    text = str(value).strip()
    if not text and not multi_label:
        raise DataFormatError("the label is empty")
    return text
