"""The raw inputs a notebook holds, as the lists a task's preprocessor reads: a pandas Series or DataFrame, a
`datasets.Dataset` or one of its columns, a tuple of texts. pandas and `datasets` stay optional: an object is
one of theirs only where its module was imported (`sys.modules`), and neither is imported here.

The shapes, for `fit`, `evaluate` and `predict` of every task:

- a Series, or a `datasets` column (any sequence that is not a list or tuple), is a list of its values;
- a tuple whose items are all strings is a list of texts; any other tuple is a tuple of columns (e.g.
  `(texts, pairs)`), each column converted as above;
- a DataFrame or a `datasets.Dataset` (a table) is read column by column, in its column order: one column is a
  list, several a tuple of columns (the classifier's `(texts, pairs)`, QA's `(questions, contexts)`). Select
  the input columns to choose them (`df[["premise", "hypothesis"]]`, `ds.select_columns([...])`);
- labels `y` are values, by position (a list, a numpy array, a Series, a `datasets` column; a one-column
  DataFrame is its column), or, with a table `x`, the name of its label column, which is then not an input.
"""

import collections.abc
import sys

import numpy as np


def raw_inputs(task, x, y=None, sample_weight=None, call="fit"):
    """`(x, y, sample_weight)` of `task.<call>` as lists, tuples of lists and numpy arrays (see the module's
    docstring); a ValueError, before any step, for a label column that is not there or a table whose
    columns are not the task's inputs.

    Args:
        task: a `BertTask` (its `input_names` name the columns it reads, for messages).
        x: the raw inputs. y: the labels, or a label column's name. sample_weight: None or weights.
        call: str. "fit", "evaluate" or "predict", for messages.

    Example:
    >>> import types
    >>> task = types.SimpleNamespace(input_names=("texts", "pairs"))
    >>> raw_inputs(task, ("good film", "bad film"), (1, 0))
    (['good film', 'bad film'], (1, 0), None)
    >>> raw_inputs(task, {"text": ["fun"], "label": [1]}, "label")  # a dict of columns is no table
    Traceback (most recent call last):
    ...
    ValueError: y='label' names a label column: give x as a pandas DataFrame or a datasets.Dataset ..., not dict.
    """
    name = f"{type(task).__name__}.{call}"
    if isinstance(x, collections.abc.Iterator):
        raise ValueError(f"{name} got a {type(x).__name__}, which it cannot count or read twice: give lists or "
                         "arrays, a table, or batches streamed as a tf.data.Dataset (tf.data.Dataset.from_generator("
                         "batches, output_signature=(tf.TensorSpec([None], tf.string), tf.TensorSpec([None], "
                         "tf.int32))) for (texts, class ids)).")
    if isinstance(y, str):
        if not is_table(x):
            raise ValueError(f"y={y!r} names a label column: give x as a pandas DataFrame or a datasets.Dataset "
                             f"that has it, not {type(x).__name__}.")
        columns = table_columns(x)
        if y not in columns:
            raise ValueError(f"{name}: y={y!r} names no column of the {table_kind(x)}; its columns are "
                             f"{list(columns)}.")
        y = columns.pop(y)
    elif is_table(x):
        columns = table_columns(x)
    else:
        columns = None
    if columns is not None:
        x = table_inputs(task, columns, table_kind(x), name)
    elif isinstance(x, tuple):
        x = list(x) if x and all(isinstance(item, (str, bytes)) for item in x) else tuple(map(as_list, x))
    else:
        x = as_list(x)
    return x, labels(y, name), as_list(sample_weight)


def table_inputs(task, columns, kind, name):
    """The input `columns` (a dict, name -> values) of a table as one list, or a tuple of lists."""
    expected = task.input_names
    if not 1 <= len(columns) <= len(expected):
        counts = "1" if len(expected) == 1 else f"1 to {len(expected)}"
        raise ValueError(f"{name} reads a {kind}'s columns, in order, as ({', '.join(expected)}): {counts} of "
                         f"them; this one has {len(columns)} input columns {list(columns)}. Select the input "
                         "columns (df[[...]], dataset.select_columns([...])) and give the labels as y (values, "
                         "or the label column's name).")
    values = list(columns.values())
    return values[0] if len(values) == 1 else tuple(values)


def labels(y, name):
    """Labels as a list or numpy array: a Series or `datasets` column as a list, a one-column table its
    column, a table of several columns its numpy matrix (multi-label 0/1 rows)."""
    if is_table(y):
        columns = table_columns(y)
        if len(columns) == 1:
            return next(iter(columns.values()))
        if is_dataframe(y):
            return y.to_numpy()
        raise ValueError(f"{name}: y as a datasets.Dataset has {len(columns)} columns {list(columns)}; give one "
                         "column, or its name with the Dataset as x.")
    return as_list(y)


def as_list(values):
    """A pandas Series or any sequence other than a list or tuple (a `datasets` column) as a list; anything
    else as it is.

    Example:
    >>> as_list(range(3)), as_list(np.array([1, 2])).tolist()
    ([0, 1, 2], [1, 2])
    """
    if is_series(values):
        return values.tolist()
    if isinstance(values, collections.abc.Sequence) and not isinstance(values, (str, bytes, list, tuple)):
        return list(values)
    return values


def table_columns(table):
    """A DataFrame's or a `datasets.Dataset`'s columns, as a dict (name -> list), in column order."""
    if is_dataframe(table):
        names = [str(column) for column in table.columns]
        if len(set(names)) < len(names):
            twice = sorted({column for column in names if names.count(column) > 1})
            raise ValueError(f"The DataFrame has columns of the same name {twice}: rename them.")
        return {column: table.iloc[:, i].tolist() for i, column in enumerate(names)}
    return dict(table.to_dict())


def table_kind(table):
    """"DataFrame" or "datasets.Dataset", for messages."""
    return "DataFrame" if is_dataframe(table) else "datasets.Dataset"


def is_table(x):
    """True for a pandas DataFrame or a `datasets.Dataset` (a DatasetDict is refused: pick a split)."""
    datasets = sys.modules.get("datasets")
    if datasets is not None and isinstance(x, datasets.DatasetDict):
        raise ValueError(f"Got a datasets.DatasetDict of the splits {list(x)}: give one split, e.g. "
                         f"data[{next(iter(x), 'train')!r}].")
    return is_dataframe(x) or datasets is not None and isinstance(x, datasets.Dataset)


def is_dataframe(x):
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(x, pandas.DataFrame)


def is_series(x):
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(x, pandas.Series)
