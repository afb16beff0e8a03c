"""Tables read by their format, not by their task: CSV (quoted fields, any delimiter), TSV, JSON Lines (or a
JSON list of records) and Parquet. The readers of a task (sentences, tagged words, questions) pick their columns
out of a `Table` by name."""

import csv
import dataclasses
import json
import pathlib

from kbert.data.readers.text_file import DataFormatError, open_text, utf8_error

# a file's suffix -> its format
SUFFIX_FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                  ".json": "json", ".parquet": "parquet", ".pq": "parquet"}
FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a data file is laid out: its format, CSV's delimiter, and the column of each use by name.

    Args:
        data_format: str or None. One of `FORMATS` (a task may read more: "conll", "squad"); None: by the
            file's suffix.
        delimiter: str or None. CSV's field delimiter (default ",").
        columns: dict or None. Use -> column name ({"text": "review", "label": "sentiment"}); the uses a task
            reads and their default columns are the task reader's.
        class_names: tuple of str or None. The names of the class ids a label (or tag) column holds, in id
            order, where the file has ids (conll2003's ner_tags).

    Example:
    >>> Layout("csv", columns={"text": "review"}).settings()
    {'format': 'csv', 'text_column': 'review'}
    """

    data_format: str = None
    delimiter: str = None
    columns: dict = None
    class_names: tuple = None

    @classmethod
    def from_settings(cls, settings, names_key="class_names"):
        """The layout a run's `settings` (a dict with more keys, e.g. its metrics) recorded (`settings`).

        Example:
        >>> Layout.from_settings({"format": "csv", "text_column": "review", "epochs": 3}).columns
        {'text': 'review'}
        """
        columns = {key[: -len("_column")]: value for key, value in settings.items() if key.endswith("_column")}
        names = settings.get(names_key)
        return cls(settings.get("format"), settings.get("delimiter"), columns or None, tuple(names) if names else None)

    def column(self, use):
        """The column named for `use`, or None (the reader's default)."""
        return (self.columns or {}).get(use)

    def check_uses(self, uses, kind):
        """Raises ValueError when the layout names a column for a use that a `kind` file does not have.

        Example:
        >>> Layout(columns={"txt": "review"}).check_uses(("text", "label"), "sentence")
        Traceback (most recent call last):
        ...
        ValueError: A sentence file's columns are for text, label, not ['txt'].
        """
        unknown = set(self.columns or {}) - set(uses)
        if unknown:
            raise ValueError(f"A {kind} file's columns are for {', '.join(uses)}, not {sorted(unknown)}.")

    def settings(self, names_key="class_names"):
        """What was given, as a run's settings record it (named as the apps' flags are: `text_column`, ...;
        the class names under `names_key`)."""
        given = {"format": self.data_format, "delimiter": self.delimiter,
                 **{f"{use}_column": column for use, column in (self.columns or {}).items()},
                 names_key: list(self.class_names) if self.class_names else None}
        return {key: value for key, value in given.items() if value}


class Table:
    """Rows with named columns, each row with its place in the source ("line 3", "row 3") for messages.

    Args:
        columns: list of str. The column names, in the source's order.
        rows: list of dict. One dict per row (a column missing from a JSON record is absent).
        places: list of str. Where each row is in the source.
        source: str. The file (or object) the rows come from.
        class_names: dict. Column -> class names, where the source records them (Hugging Face `datasets`'
            ClassLabel features, kept in the metadata of the Parquet files it writes).

    Example:
    >>> table = Table(["review", "stars"], [{"review": "fun", "stars": 5}], ["line 2"], "r.csv")
    >>> table.column("review", "the texts"), table.where(0)
    (['fun'], 'r.csv:2')
    >>> table.column("text", "the texts")
    Traceback (most recent call last):
    ...
    kbert.data.readers.text_file.DataFormatError: r.csv: no column 'text' (the texts); its columns are
    ['review', 'stars'].
    """

    def __init__(self, columns, rows, places, source, class_names=None):
        self.columns, self.rows, self.places, self.source = list(columns), rows, places, str(source)
        self.class_names = class_names or {}

    def __len__(self):
        return len(self.rows)

    def column(self, name, what):
        """The values of column `name` (None where a record lacks it); `what` names its use in the message
        when the table has no such column."""
        if name not in self.columns:
            raise DataFormatError(f"{self.source}: no column {name!r} ({what}); its columns are {self.columns}.")
        return [row.get(name) for row in self.rows]

    def first_of(self, names):
        """The first of `names` that is a column, or None."""
        return next((name for name in names if name in self.columns), None)

    def column_for(self, use, given, defaults, exclude=None):
        """The column a reader reads for `use`: `given` (which must be a column), else the first of `defaults` the
        table has (other than `exclude`); a DataFormatError names the columns there are when there is none."""
        if given:
            self.column(given, f"the {use} column")  # raises naming the columns there are
            return given
        found = self.first_of([name for name in defaults if name != exclude])
        if found is None:
            raise DataFormatError(f"{self.source}: no {use} column: none of {list(defaults)} is a column; its columns "
                                  f"are {self.columns}. Name the {use} column.")
        return found

    def where(self, index):
        """`source:line` (or `source, row N`) of the row at `index`, for messages."""
        return located(self.source, self.places[index])


def located(source, place):
    """A place in `source` for messages: `source:3` for "line 3", else `source, row 3`.

    Example:
    >>> located("a.csv", "line 3"), located("a.parquet", "row 3")
    ('a.csv:3', 'a.parquet, row 3')
    """
    return f"{source}:{place[len('line '):]}" if place.startswith("line ") else f"{source}, {place}"


def table_format(path, data_format=None):
    """The format of the file `path`: `data_format` if given, else by its suffix; a suffix kbert does not
    read raises `DataFormatError` naming the formats.

    Example:
    >>> table_format("train.csv"), table_format("dev.jsonl"), table_format("x.data", "tsv")
    ('csv', 'jsonl', 'tsv')
    """
    if data_format is not None:
        if data_format not in FORMATS:
            raise DataFormatError(f"{path}: unknown format {data_format!r}; kbert reads {', '.join(FORMATS)}.")
        return data_format
    suffix = pathlib.Path(path).suffix.lower()
    if suffix not in SUFFIX_FORMATS:
        raise DataFormatError(f"{path}: unknown format {suffix or '(no suffix)'!r}: name the file .csv, .tsv, "
                              f".jsonl, .json or .parquet, or give the format ({', '.join(FORMATS)}).")
    return SUFFIX_FORMATS[suffix]


def read_table(path, data_format=None, delimiter=None):
    """Reads the file `path` into a `Table`; its first row names the columns (CSV, TSV).

    CSV goes through the standard `csv` module (quoted fields may hold the delimiter, quotes and line
    breaks); TSV is split on tabs, unquoted, as GLUE writes it. JSON Lines holds an object per line; a
    `.json` file is a list of objects, or JSON Lines (as `datasets`' `to_json` writes it). Parquet needs
    `pyarrow`. Bytes that are not UTF-8, a broken quote, a row with another number of fields than the
    header, or a line that is not a JSON object raise `DataFormatError` naming the file and line.

    Args:
        path: str or path. The file.
        data_format: str or None. One of `FORMATS`; None: by the file's suffix (`table_format`).
        delimiter: str or None. CSV's field delimiter (default ",").

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "reviews.csv"
    >>> _ = path.write_text('review,sentiment\\n"Long, slow, and fun",pos\\n')
    >>> read_table(path).rows
    [{'review': 'Long, slow, and fun', 'sentiment': 'pos'}]
    """
    data_format = table_format(path, data_format)
    if data_format == "parquet":
        return _parquet(path)
    if data_format in ("csv", "tsv"):
        return _delimited(path, "\t" if data_format == "tsv" else delimiter or ",", quoted=data_format == "csv")
    return _json(path, lines=data_format == "jsonl")


def _delimited(path, delimiter, quoted):
    with open_text(path) as file:
        if quoted:
            reader = csv.reader(file, delimiter=delimiter, strict=True)
            records, start = [], 1
            try:
                for fields in reader:
                    records.append((start, fields))
                    start = reader.line_num + 1
            except csv.Error as error:
                raise DataFormatError(f"{path}:{start}: cannot read this row: {error} (a quote not closed, "
                                      "or text after a closing quote?).") from None
        else:
            records = [(number, line.rstrip("\n").split(delimiter)) for number, line in enumerate(file, start=1)]
    records = [(number, fields) for number, fields in records if any(field.strip() for field in fields)]
    if not records:
        raise DataFormatError(f"{path}: empty: expected a header row naming the columns.")
    (_, header), body = records[0], records[1:]
    columns = [name.strip() for name in header]
    rows, places = [], []
    for number, fields in body:
        problem = next(filter(None, map(utf8_error, fields)), None)
        if problem:
            raise DataFormatError(f"{path}:{number}: {problem}")
        if len(fields) != len(columns):
            raise DataFormatError(f"{path}:{number}: expected {len(columns)} fields (the header's "
                                  f"{columns}), found {len(fields)}.")
        rows.append(dict(zip(columns, (field.strip() for field in fields))))
        places.append(f"line {number}")
    return Table(columns, rows, places, path)


def _json(path, lines):
    from kbert.data.readers.text_file import read_text

    text = read_text(path)
    if not lines:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            if error.msg != "Extra data":  # else JSON Lines, as datasets' to_json writes .json files
                raise DataFormatError(f"{path}:{error.lineno}: not JSON: {error.msg} (column {error.colno}).") from None
        else:
            if not isinstance(document, list):
                raise DataFormatError(f"{path}: expected a list of records (objects) or an object per line"
                                      + (" (this is SQuAD's layout: a question answerer reads it)"
                                         if isinstance(document, dict) and "data" in document else "") + ".")
            return _records([(f"record {i}", record) for i, record in enumerate(document)], path)
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as error:
            raise DataFormatError(f"{path}:{number}: not a JSON object: {error.msg} (column {error.colno}).") from None
    return _records(records, path)


def _records(records, path):
    columns = {}
    for place, record in records:
        if not isinstance(record, dict):
            raise DataFormatError(f"{located(path, place)}: expected an object of named fields, found "
                                  f"{type(record).__name__}.")
        columns.update(dict.fromkeys(record))
    return Table(list(columns), [record for _, record in records], [place for place, _ in records], path)


def _parquet(path):
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise DataFormatError(f"{path}: reading Parquet needs pyarrow: pip install pyarrow") from None
    try:
        table = parquet.read_table(path)
    except Exception as error:  # pyarrow's own error types: a file that is not Parquet, truncated
        raise DataFormatError(f"{path}: not a Parquet file pyarrow can read: {error}") from None
    metadata = table.schema.metadata or {}
    features = {}
    if b"huggingface" in metadata:  # written by datasets: its features, ClassLabel names included
        features = json.loads(metadata[b"huggingface"]).get("info", {}).get("features", {})
    rows = table.to_pylist()
    return Table(table.column_names, rows, [f"row {i + 1}" for i in range(len(rows))], path,
                 _feature_names(features))


def _feature_names(features):
    """Column -> class names of `datasets` features (their JSON, as a Parquet file keeps it), for ClassLabel
    columns and sequences of them (conll2003's ner_tags)."""
    names = {}
    for column, feature in features.items():
        found = feature.get("feature", feature).get("names") if isinstance(feature, dict) else None
        if found:
            names[column] = list(found)
    return names
