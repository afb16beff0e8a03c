"""Reads the sentence TSV formats: `sentence<TAB>label` and `sentence1<TAB>sentence2<TAB>label` (multi-label:
`sentence<TAB>label1,label2`)."""

import collections
import pathlib

import numpy as np

from kbert.data.readers.sentence_examples import SentenceExamples
from kbert.data.readers.tables import located
from kbert.data.readers.text_file import DataFormatError, open_text, utf8_error

# A first row is the header when a cell names its column: a label column's name, or a text column's.
HEADER_LABELS = ("label", "labels", "score", "gold_label", "similarity", "sentiment", "category", "class", "target")
HEADER_TEXTS = ("sentence", "sentence1", "sentence2", "text", "text_pair", "premise", "hypothesis", "question",
                "question1", "question2", "review", "document")
LARGEST_SCORE = 1e18  # the squared errors of a batch of scores stay finite in float32 (up to 3.4e38)


class TsvFormatError(DataFormatError):
    """A row of a TSV file that cannot be read; the message starts with `path:line:`."""


def read_sentence_tsv(path, num_texts=1, label_names=None, regression=False, labeled=True,
                      skip_bad_rows=False, multi_label=False, score_range=None):
    """Reads a UTF-8 TSV file of sentences (or pairs) and labels into `SentenceExamples`.

    The first row is the header, and is skipped, when a cell names its column (the label cell reads
    one of `HEADER_LABELS`, or a text cell one of `HEADER_TEXTS`), or when its label does not read as
    the other rows' do (a word above scores or class ids, a name that is not among `label_names`, or
    class names that no other row uses above classes each used twice or more): the latter is printed,
    naming the line, so that a lost first example is seen. A BOM and CRLF line ends are accepted.
    Labels may be class names or integer ids: with `label_names` given, a label must be one of them or an id below
    their count; without, ids 0..K-1 (all integers) or sorted names (words) define the
    classes. A bad row (bytes that are not UTF-8, a wrong number of columns, an empty text,
    an unknown label, a score that is not a finite number of at most `LARGEST_SCORE`, or outside `score_range`)
    raises `TsvFormatError` naming the file and line (`path:line: ...`), or, with
    `skip_bad_rows`, is skipped; the count and the first reason are then printed.

    Args:
        path: str or path. The TSV file.
        num_texts: int. 1 for `sentence<TAB>label`, 2 for pairs.
        label_names: list of str or None. The classes, in id order (e.g. a model's).
        regression: bool. Labels are float scores (STS-B) rather than classes.
        score_range: (low, high) or None. With `regression`, the scores a row may have (STS-B's (0, 5)).
        labeled: bool. False reads text columns only (a label column, if any, is ignored).
        skip_bad_rows: bool. Skip bad rows instead of raising.
        multi_label: bool. A label cell holds any number of comma-separated class names (or ids;
            empty: none of the classes); labels become a float32 0/1 matrix (examples, classes).
            Without `label_names`, the classes are the sorted names the file uses.

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.tsv"
    >>> _ = path.write_text("sentence\\tlabel\\r\\ngreat fun\\tpositive\\r\\ndull\\tnegative\\r\\n")
    >>> data = read_sentence_tsv(path)
    >>> data.texts, data.labels.tolist(), data.label_names
    (['great fun', 'dull'], [1, 0], ['negative', 'positive'])
    """
    path = pathlib.Path(path)
    rows, raw_labels, skipped = [], [], []
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\n")
            fields = line.split("\t")
            if number == 1 and _names_columns(fields, num_texts, labeled):
                continue
            try:
                if not line.strip():
                    raise TsvFormatError("blank line")
                if utf8_error(line):
                    raise TsvFormatError(utf8_error(line))
                rows.append(_texts(fields, num_texts, labeled, empty_label=multi_label))
                raw_labels.append((number, fields[num_texts].strip()) if labeled else None)
            except TsvFormatError as error:
                if not skip_bad_rows:
                    raise TsvFormatError(f"{path}:{number}: {error}") from None
                skipped.append((number, str(error)))
    if labeled and raw_labels and raw_labels[0][0] == 1 and _is_header(
            raw_labels, label_names, regression, multi_label):
        print(f"{path}: read line 1 as the header: its label {raw_labels[0][1]!r} does not read as the other "
              "rows' do.")
        rows, raw_labels = rows[1:], raw_labels[1:]
    return labelled_examples(rows, raw_labels if labeled else None, skipped, str(path), lambda number: f"line {number}",
                             label_names, regression, multi_label, score_range, skip_bad_rows, TsvFormatError)


def labelled_examples(rows, raw_labels, skipped, source, place_of, label_names=None, regression=False,
                      multi_label=False, score_range=None, skip_bad_rows=False, error=DataFormatError):
    """`SentenceExamples` of the text `rows` (a list of texts each) read from `source`, with their labels read from
    `raw_labels` (a (key, label cell) pair each; None: unlabeled): scores, classes (`class_labels`) or multi-label
    rows (`multi_labels`). A label that cannot be read raises `error` naming its place (`place_of(key)`: "line 3",
    "row 3"), or with `skip_bad_rows` is skipped with the rows in `skipped` ((key, reason) pairs), and the count is
    printed."""
    where = lambda key: located(source, place_of(key))  # noqa: E731
    if not rows:
        raise error(f"{source}: no examples.")
    labels = None
    if raw_labels is not None:
        if multi_label:
            labels, label_names, bad = multi_labels(raw_labels, label_names)
        else:
            labels, label_names, bad = class_labels(raw_labels, label_names, regression, score_range, where=where)
        if bad and not skip_bad_rows:
            place, reason = min(bad.items())
            raise error(f"{where(place)}: {reason}")
        keep = [i for i, (place, _) in enumerate(raw_labels) if place not in bad]
        rows, labels = [rows[i] for i in keep], labels[keep]
        skipped = skipped + sorted(bad.items())
    if skipped:
        place, reason = min(skipped)
        print(f"{source}: skipped {len(skipped)} bad row(s); the first, {place_of(place)}: {reason}")
    if not rows:
        raise error(f"{source}: no examples.")
    pairs = [row[1] for row in rows] if len(rows[0]) == 2 else None
    return SentenceExamples([row[0] for row in rows], pairs, labels, label_names, source)


def _texts(fields, num_texts, labeled, empty_label=False):
    expected = num_texts + int(labeled)
    if len(fields) < expected or (labeled and len(fields) > expected):
        raise TsvFormatError(f"expected {expected} tab-separated columns, found {len(fields)}")
    texts = [field.strip() for field in fields[:num_texts]]
    for i, text in enumerate(texts):
        if not text:
            raise TsvFormatError(f"column {i + 1} (a text) is empty")
    if labeled and not empty_label and not fields[num_texts].strip():
        raise TsvFormatError("the label is empty")
    return texts


MAX_LEARNED_CLASSES = 1000  # integer labels read as class ids when no class names are given: ids below this


def _names_columns(fields, num_texts, labeled):
    """Whether a first row's cells name its columns (a header)."""
    cells = [field.strip().lower() for field in fields]
    return (labeled and len(cells) > num_texts and cells[num_texts] in HEADER_LABELS) or any(
        cell in HEADER_TEXTS for cell in cells[:num_texts])


def _is_header(raw, label_names, regression, multi_label):
    """Whether the label of the first row (`raw[0]`, a (line, cell) pair) does not read as the others' do."""
    (_, cell), others = raw[0], [field for _, field in raw[1:]]
    if not others:
        return False
    if regression:
        return _score(cell)[1] is not None and any(_score(field)[1] is None for field in others)
    if label_names is not None:
        names = [str(name) for name in label_names]
        known = lambda field: field in names or (field.isdecimal() and int(field) < len(names))  # noqa: E731
        return not known(cell) and any(known(field) for field in others)
    if all(field.isdecimal() for field in others):
        return not cell.isdecimal()
    split = (lambda field: {name.strip() for name in field.split(",") if name.strip()}) if multi_label else (
        lambda field: {field})
    counts = collections.Counter(name for field in others for name in split(field))
    # a name of its own above classes each used at least twice (a lone class of a small file is no header)
    return bool(split(cell)) and not split(cell) & set(counts) and min(counts.values(), default=0) >= 2


def class_labels(raw, label_names, regression, score_range=None, where=str):
    """Label array, label names, and {line: reason} for labels that cannot be read, from `raw`, a list of
    (line, label cell) pairs: scores for `regression`, else class names or ids (of `label_names`, or
    learned from the cells: ids 0..K-1 when every cell is an id, else the sorted names; cells that mix
    ids and names without `label_names` raise `DataFormatError` naming one of each by `where(line)`)."""
    bad = {}
    if regression:
        values = []
        for number, field in raw:
            value, reason = _score(field, score_range)
            values.append(value)
            if reason:
                bad[number] = reason
        return np.array(values, "float32"), None, bad
    fields = [field for _, field in raw]
    learned = label_names is None
    if learned:
        ids = [number for number, field in raw if field.isdecimal()]
        names = [number for number, field in raw if not field.isdecimal()]
        if ids and names:
            cells = dict(raw)
            raise DataFormatError(f"mixed label types: {where(ids[0])} has a class id ({cells[ids[0]]}), "
                                  f"{where(names[0])} a class name ({cells[names[0]]!r}); use one kind, or give the "
                                  "class names in id order.")
        if all(field.isdecimal() for field in fields):  # ids 0..K-1; an id past MAX_LEARNED_CLASSES is refused
            label_names = [str(i) for i in range(max((int(f) for f in fields if int(f) < MAX_LEARNED_CLASSES),
                                                     default=-1) + 1)]
        else:
            label_names = sorted(set(fields))
    label_names = [str(name) for name in label_names]
    ids = {name: i for i, name in enumerate(label_names)}
    values = []
    for number, field in raw:
        if field in ids:
            values.append(ids[field])
        elif field.isdecimal() and int(field) < len(label_names):
            values.append(int(field))
        elif field.isdecimal() and learned:
            bad[number] = (f"label {field} is a class id of {MAX_LEARNED_CLASSES:,} or more: classes learned from "
                           f"the data are ids below {MAX_LEARNED_CLASSES:,} (or give the class names)")
            values.append(-1)
        else:
            bad[number] = _unknown_label(field, label_names)
            values.append(-1)
    return np.array(values, "int32"), label_names, bad


def multi_labels(raw, label_names):
    """0/1 label matrix, label names, and {line: reason} for cells naming an unknown class."""
    cells = [(number, [name.strip() for name in field.split(",") if name.strip()]) for number, field in raw]
    if label_names is None:
        label_names = sorted({name for _, names in cells for name in names})
    label_names = [str(name) for name in label_names]
    ids = {name: i for i, name in enumerate(label_names)}
    matrix, bad = np.zeros((len(cells), len(label_names)), "float32"), {}
    for row, (number, names) in enumerate(cells):
        for name in names:
            if name in ids:
                matrix[row, ids[name]] = 1
            elif name.isdecimal() and int(name) < len(label_names):
                matrix[row, int(name)] = 1
            else:
                bad.setdefault(number, _unknown_label(name, label_names))
    return matrix, label_names, bad


def _unknown_label(label, label_names):
    shown = label_names if len(label_names) <= 20 else [*label_names[:20], "..."]
    return f"unknown label {label!r}; the labels are {shown} (or ids 0..{len(label_names) - 1})"


def _score(field, score_range=None):
    """(score, None), or (nan, why it cannot be trained on)."""
    try:
        value = float(field)
    except ValueError:
        return np.nan, f"the score {field!r} is not a number"
    if not np.isfinite(value):
        return np.nan, f"the score {field!r} is not finite"
    if abs(value) > LARGEST_SCORE:
        return np.nan, (f"the score {field!r} is too large: scores are at most {LARGEST_SCORE:g} in "
                        "magnitude (their squared errors must stay finite in float32)")
    if score_range is not None and not score_range[0] <= value <= score_range[1]:
        return np.nan, f"the score {field!r} is outside the score range ({score_range[0]:g}, {score_range[1]:g})"
    return value, None
