"""Reading the data sets' text files: UTF-8 with a named line for every byte that is not."""

import re

_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # the bytes that are not UTF-8, as `surrogateescape` keeps them


class DataFormatError(ValueError):
    """A data file that cannot be read; the message starts with `path:line:` (or `path:`)."""


def open_text(path):
    """Opens a UTF-8 text file to read line by line; a BOM and any line end are accepted.

    A byte that is not UTF-8 does not stop the reading: it comes through as a lone
    surrogate that `utf8_error` finds, so that a reader names the line (or skips it).
    """
    return open(path, encoding="utf-8-sig", errors="surrogateescape", newline=None)


def utf8_error(line):
    """None, or what is wrong with a `line` read by `open_text`: its first byte that is not UTF-8.

    Example:
    >>> utf8_error(b"caf\\xe9 noir".decode("utf-8", "surrogateescape"))
    'invalid UTF-8: byte 0xe9 at column 4'
    >>> utf8_error("café noir") is None
    True
    """
    found = _NOT_UTF8.search(line)
    if found is None:
        return None
    return f"invalid UTF-8: byte 0x{ord(found.group()) - 0xDC00:02x} at column {found.start() + 1}"


def read_text(path):
    """The text of a UTF-8 file (a BOM dropped, line ends as "\\n"); a byte that is not UTF-8
    raises `DataFormatError` naming its line: `path:line: invalid UTF-8: byte 0xff at column 9`."""
    with open_text(path) as file:
        text = file.read()
    found = _NOT_UTF8.search(text)
    if found is not None:
        start = text.rfind("\n", 0, found.start()) + 1  # of the line
        number = text.count("\n", 0, start) + 1
        raise DataFormatError(f"{path}:{number}: {utf8_error(text[start:found.end()])}")
    return text


def check_utf8(path):
    """Raises `DataFormatError` naming the first line of the file `path` that is not UTF-8.

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_bytes(b"fine\\nnot \\xff fine\\n")
    >>> check_utf8(path)
    Traceback (most recent call last):
    ...
    kbert.data.readers.text_file.DataFormatError: .../corpus.txt:2: invalid UTF-8: byte 0xff at column 5
    """
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            problem = utf8_error(line)
            if problem:
                raise DataFormatError(f"{path}:{number}: {problem}")
