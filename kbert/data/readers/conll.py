"""Reads CoNLL NER files: `token ... TAG` per line, a blank line between sentences."""

import pathlib

from kbert.data.readers.tagged_sentences import TaggedSentences
from kbert.data.readers.text_file import DataFormatError, open_text, utf8_error

DOCUMENT_START = "-DOCSTART-"


class ConllFormatError(DataFormatError):
    """A line of a CoNLL file that cannot be read; the message starts with `path:line:`."""


def read_conll(path, label_names=None, labeled=True):
    """Reads a UTF-8 CoNLL file into `TaggedSentences`, converting IOB1 tags to BIO (IOB2).

    Each line holds a token and its tag separated by blanks; with more columns (the
    original CoNLL-2003 files: token, POS, chunk, tag) the first is the token and the last
    the tag. A blank (or whitespace-only) line ends a sentence; runs of blank lines, blank
    lines at the start or end and a missing final blank line are all fine. `-DOCSTART-`
    lines are document separators and are skipped. Tags are `O`, `B-X` or `I-X`; an `I-X`
    that does not continue an X entity (IOB1, or sloppy BIO) becomes `B-X`, as conlleval
    reads it. A line with bytes that are not UTF-8, a single column, a tag of another scheme
    (`E-X`, `S-X`, `PER`) or, with `label_names`, a tag outside them raises `ConllFormatError`
    naming the file and line (`path:line: ...`).

    Args:
        path: str or path. The file.
        label_names: list of str or None. The allowed BIO tags (e.g. a trained model's).
        labeled: bool. False reads one token per line (a further column, if any, is ignored).

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "eng.txt"
    >>> _ = path.write_text("-DOCSTART- -X- O O\\n\\nEU NNP I-NP I-ORG\\nrejects VBZ I-VP O\\n\\n\\n")
    >>> data = read_conll(path)
    >>> data.words, data.tags, data.lines
    ([['EU', 'rejects']], [['B-ORG', 'O']], [3])
    """
    path = pathlib.Path(path)
    allowed = None if label_names is None else set(label_names)
    sentences, tags, lines = [], [], []
    words, sentence_tags, first_line = [], [], None
    with open_text(path) as file:
        for number, line in enumerate(file, start=1):
            if utf8_error(line):
                raise ConllFormatError(f"{path}:{number}: {utf8_error(line)}")
            fields = line.split()
            if fields and fields[0] == DOCUMENT_START:
                fields = []
            if not fields:
                if words:
                    sentences.append(words)
                    tags.append(to_iob2(sentence_tags))
                    lines.append(first_line)
                words, sentence_tags = [], []
                continue
            if labeled:
                if len(fields) < 2:
                    raise ConllFormatError(f"{path}:{number}: expected 'token TAG', found "
                                           f"one column {line.strip()!r}")
                tag = fields[-1]
                problem = tag_problem(tag, allowed)
                if problem:
                    raise ConllFormatError(f"{path}:{number}: {problem}")
                sentence_tags.append(tag)
            first_line = first_line if words else number
            words.append(fields[0])
    if words:
        sentences.append(words)
        tags.append(to_iob2(sentence_tags))
        lines.append(first_line)
    if not sentences:
        raise ConllFormatError(f"{path}: no sentences.")
    return TaggedSentences(sentences, tags if labeled else None, lines, str(path))


def tag_problem(tag, allowed=None):
    """None, or why `tag` cannot be read: not O, B-TYPE or I-TYPE, or not among `allowed` (a set, or None).

    Example:
    >>> tag_problem("B-PER"), tag_problem("PER")
    (None, "tag 'PER' is not O, B-TYPE or I-TYPE (BIO or IOB1)")
    """
    if tag != "O" and (tag[:2] not in ("B-", "I-") or len(tag) < 3):
        return f"tag {tag!r} is not O, B-TYPE or I-TYPE (BIO or IOB1)"
    if allowed is not None and tag not in allowed:
        return f"tag {tag!r} is not among the model's labels {sorted(allowed)}"
    return None


def to_iob2(tags):
    """IOB1 (or sloppy BIO) to BIO: an `I-X` not following `B-X` or `I-X` becomes `B-X`.

    Example:
    >>> to_iob2(["I-ORG", "I-ORG", "O", "I-PER"])
    ['B-ORG', 'I-ORG', 'O', 'B-PER']
    """
    converted = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-") and (i == 0 or tags[i - 1] == "O" or tags[i - 1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        converted.append(tag)
    return converted
