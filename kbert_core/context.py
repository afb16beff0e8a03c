"""Whether a question-answering `--context` names a file or is the text itself: one rule for apps/qa.py
and apps/edge_predict.py (which imports nothing of Keras)."""

import pathlib
import re

# A value that looks like a file name: a path separator, or a text file's ending.
FILE_NAME = re.compile(r"\S*(/|\\)\S*|\S+\.(txt|text|md|json|html?|tsv|csv)", re.IGNORECASE)


def context_file(value, what="--context"):
    """The file `value` names, or None when `value` is the context text itself.

    Raises ValueError, naming `value`, for an empty context, a folder, and a value that looks like
    a file name (a path separator, an ending such as .txt) but names no file: a mistyped file name
    would otherwise be answered from as if it were the context.

    Example:
    >>> context_file("Ann sings and Bob plays.") is None
    True
    >>> context_file("notes/article.txt")
    Traceback (most recent call last):
    ...
    ValueError: --context notes/article.txt: no such file. Give an existing text file, or the context text itself.
    """
    if not value.strip():
        raise ValueError(f"{what} is empty: give a text file, or the context text itself.")
    path = pathlib.Path(value)
    try:
        is_file, exists = path.is_file(), path.exists()
    except (OSError, ValueError):  # too long for a file name, or a NUL byte: the text itself
        is_file = exists = False
    if is_file:
        return path
    if exists:
        raise ValueError(f"{what} {path} is a folder, not a text file.")
    if FILE_NAME.fullmatch(value.strip()):
        raise ValueError(f"{what} {value}: no such file. Give an existing text file, or the context text itself.")
    return None
