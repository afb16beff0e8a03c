"""Raw text to BERT pretraining pairs, as google-research/bert's create_pretraining_data.py."""

import itertools
import os
import pathlib
import re
import zlib

import numpy as np

from kbert.data.readers.text_file import DataFormatError, open_text, utf8_error
from kbert.saving import SETTINGS_FILE, read_json

# A sentence ends at . ! or ? (plus closing quotes or brackets) before a capitalized word;
# common English titles are not ends.
_SENTENCE_END = re.compile(
    r"(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bMessrs)[.!?]+[\"'”’)\]]*(\s+)"
    r"(?=[\"'“‘(\[]?[A-Z])")
OBJECTIVES = ("nsp", "sop", "mlm")
HOLDOUT_PASSAGE_LINES = 20  # a longer document is held out (or not) in passages of this many lines
MAX_SENTENCE_CHARS = 4000  # a longer sentence (or line, in a vocabulary sample) is cut at a space


def split_sentences(line):
    """Splits a paragraph into sentences at `.`, `!` or `?` followed by a capital letter.

    Example:
    >>> split_sentences('Mr. Knightley came. "Is it so?" said Emma.  It was.')
    ['Mr. Knightley came.', '"Is it so?" said Emma.', 'It was.']
    """
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        sentences.append(line[start:match.start(1)])
        start = match.end(1)
    sentences.append(line[start:])
    return [sentence.strip() for sentence in sentences if sentence.strip()]


def read_documents(paths, holdout=0.0, held_out=False, seed=0):
    """Yields documents (lists of sentences) from text files; blank lines separate documents.

    Each line is a sentence or a paragraph (split into sentences; a sentence longer than
    `MAX_SENTENCE_CHARS` characters is cut at a space into pieces no longer). Files are read
    line by line, so a corpus larger than memory streams. Bytes that are not UTF-8 raise
    `kbert.data.readers.text_file.DataFormatError` naming the file and line (`path:line: ...`).
    Several files interleave document by document: each next document comes from a file
    drawn at random (seeded by `seed`) in proportion to its size, so the files run out at
    about the same time (each file is open while the pass lasts); a file with no text gives
    nothing. Text is read as it is: markup
    such as `<br />` is text to the reader (clean the files first if it is not).

    With `holdout` > 0, a fraction of the text is held out for evaluation, the same whatever
    the order of the files or the seed (`is_held_out`): whole documents, or passages of
    `HOLDOUT_PASSAGE_LINES` lines of a longer document (a document of one line per review,
    per paragraph or per sentence is split alike). A document loses its held-out passages
    and is cut in two where it does, so that no pair spans the gap; `held_out=True` yields
    the held-out passages instead (adjacent ones as one document).

    Args:
        paths: list of str or path. The text files.
        holdout: float in [0, 1]. The share of the passages held out.
        held_out: bool. Yield the held-out part instead of the rest.
        seed: int or sequence of int. Seeds the interleaving of several files.

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_bytes(b"One. Two.\\nThree\\n\\n\\nOther doc.\\n")
    >>> list(read_documents([path]))
    [['One.', 'Two.', 'Three'], ['Other doc.']]
    """
    for is_held, lines in _split(_interleave(paths, seed), holdout):
        if is_held == held_out:
            yield [piece for line in lines for sentence in split_sentences(line) for piece in cut_text(sentence)]


def survey_corpus(paths, holdout=0.0, sample_lines=0, seed=0):
    """Reads text files once: their documents and lines on each side of the held-out split, the
    files with no text, and a random sample of the training lines (to learn a vocabulary from).

    Memory stays bounded whatever the corpus: the sample holds at most `sample_lines` lines
    (reservoir sampling, seeded by `seed`), and a line longer than `MAX_SENTENCE_CHARS`
    characters counts as its pieces (`cut_text`).

    Args:
        paths: list of str or path. The text files.
        holdout: float. The share held out, as in `read_documents`.
        sample_lines: int. Training lines to draw (all of them when there are fewer).
        seed: int. Seeds the sample.

    Returns:
        dict: "train" and "held_out" each {"documents": int, "lines": int} (documents as
        `read_documents` yields them), "empty_files" (list of the paths with no text) and
        "sample" (list of str).

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_text("One.\\n\\nTwo.\\nThree.\\n")
    >>> survey = survey_corpus([path], sample_lines=10)
    >>> survey["train"], survey["held_out"], sorted(survey["sample"])
    ({'documents': 2, 'lines': 3}, {'documents': 0, 'lines': 0}, ['One.', 'Three.', 'Two.'])
    """
    rng = np.random.default_rng(seed)
    sides = {side: {"documents": 0, "lines": 0} for side in ("train", "held_out")}
    empty_files, sample, seen = [], [], 0
    for path in paths:
        documents = _split(_file_documents(path), holdout)
        empty = True
        for is_held, lines in documents:
            empty = False
            side = sides["held_out" if is_held else "train"]
            side["documents"] += 1
            side["lines"] += len(lines)
            for piece in () if is_held or not sample_lines else (p for line in lines for p in cut_text(line)):
                seen += 1
                if len(sample) < sample_lines:
                    sample.append(piece)
                elif (index := int(rng.integers(seen))) < sample_lines:
                    sample[index] = piece
        if empty:
            empty_files.append(path)
    return {**sides, "empty_files": empty_files, "sample": sample}


def run_corpus(folder):
    """The corpus files and held-out share of an `apps/pretrain.py` run folder (from its
    settings.json; the run reads its corpus where it is): `(paths, holdout)`, for
    `read_documents` and `kbert.data.pretraining.dataset.pretraining_dataset`.

    Example:
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "settings.json").write_text(json.dumps(
    ...     {"corpus": [{"path": "/data/a.txt", "bytes": 10, "sha256": "..."}], "holdout_fraction": 0.02}))
    >>> run_corpus(folder)
    (['/data/a.txt'], 0.02)
    """
    settings = read_json(pathlib.Path(folder) / SETTINGS_FILE)
    return [file["path"] for file in settings["corpus"]], settings["holdout_fraction"]


def is_held_out(lines, holdout):
    """Whether the passage `lines` (list of str) is held out: the CRC-32 of its text, as a share
    of 2**32, is below `holdout`. It depends on the text alone, so a passage that occurs twice
    is held out twice or not at all.

    Example:
    >>> is_held_out(["A review."], 0.0), is_held_out(["A review."], 1.0)
    (False, True)
    """
    return zlib.crc32("\n".join(lines).encode("utf-8", "surrogateescape")) < holdout * 2**32


def cut_text(text, limit=None):
    """`text` in pieces of at most `limit` (default `MAX_SENTENCE_CHARS`) characters, cut at the
    last space before the limit (or at the limit, in a run of that many characters without one).

    Tokens do not change where the cut is at a space, which WordPiece splits at anyway: the
    cut bounds the memory a 100 KB line takes when it is tokenized.

    Example:
    >>> list(cut_text("one two three", limit=8))
    ['one two', 'three']
    """
    limit = limit or MAX_SENTENCE_CHARS
    while len(text) > limit:
        cut = text.rfind(" ", 1, limit + 1)
        cut = cut if cut > 0 else limit
        yield text[:cut].rstrip()
        text = text[cut:].lstrip()
    if text:
        yield text


def _file_documents(path):
    """The documents of one file, each the list of its stripped lines; a byte that is not UTF-8
    raises `DataFormatError` naming the line."""
    document = []
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            if utf8_error(line):
                raise DataFormatError(f"{path}:{number}: {utf8_error(line)}")
            line = line.strip()
            if line:
                document.append(line)
            elif document:
                yield document
                document = []
    if document:
        yield document


def _interleave(paths, seed):
    """The documents of the files `paths`, each next one from a file drawn in proportion to its size."""
    readers = [_file_documents(path) for path in paths]
    if len(readers) == 1:
        yield from readers[0]
        return
    rng = np.random.default_rng(seed)
    weights = np.array([os.path.getsize(path) for path in paths], float)
    while weights.any():
        index = int(rng.choice(len(readers), p=weights / weights.sum()))
        document = next(readers[index], None)
        if document is None:
            weights[index] = 0.0
        else:
            yield document


def _split(documents, holdout):
    """(held out, lines) for each run of passages of each document on one side of the split."""
    for lines in documents:
        if not holdout:
            yield False, lines
            continue
        starts = range(0, len(lines), HOLDOUT_PASSAGE_LINES)
        flags = [is_held_out(lines[start:start + HOLDOUT_PASSAGE_LINES], holdout) for start in starts]
        start = 0
        for is_held, run in itertools.groupby(flags):
            end = start + len(list(run)) * HOLDOUT_PASSAGE_LINES
            yield is_held, lines[start:end]
            start = end


def document_instances(document, others, rng, max_seq_length=128, short_seq_prob=0.1,
                       objective="nsp"):
    """Yields `(first, second, label)` token-id arrays for one tokenized document.

    As BERT does: sentences accumulate up to a target length (the longest that fits, or with
    probability `short_seq_prob` a random shorter one) and split at a random sentence
    boundary into A and B. For "nsp", B is the true continuation half of the time (label 0)
    and otherwise (label 1) a run of sentences from a random other document (the unused
    sentences of A's chunk are put back); a one-sentence chunk with a true continuation is
    split inside the sentence, so the labels stay 50/50. For "sop", B always follows A and
    half of the pairs are swapped (label 1). For "mlm", the whole chunk is one segment
    (`second` is None, label 0). Pairs too long lose tokens from a random end of the longer
    side; sentences longer than a sequence are cut into sequence-sized pieces first.

    Args:
        document: list of 1-D int arrays, the tokenized sentences.
        others: list of such documents (for "nsp": random second segments; not `document`).
        rng: `numpy.random.Generator`.
        max_seq_length: int. Tokens per sequence, [CLS] and [SEP] included.
        short_seq_prob: float. Probability of a shorter target length.
        objective: str. "nsp", "sop" or "mlm".

    Example:
    >>> rng = np.random.default_rng(0)
    >>> doc = [np.array([5, 6]), np.array([7]), np.array([8, 9])]
    >>> [(a.tolist(), b.tolist(), label) for a, b, label in document_instances(doc, [], rng, 9, objective="sop")]
    [([8, 9], [5, 6, 7], 1)]
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")
    max_tokens = max_seq_length - (2 if objective == "mlm" else 3)
    if max_tokens < 2:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for two segments.")
    segments = [sentence[start:start + max_tokens] for sentence in document
                for start in range(0, len(sentence), max_tokens)]

    def target_length():
        return int(rng.integers(2, max_tokens + 1)) if rng.random() < short_seq_prob else max_tokens

    target, chunk, length, i = target_length(), [], 0, 0
    while i < len(segments):
        chunk.append(segments[i])
        length += len(segments[i])
        if i == len(segments) - 1 or length >= target:
            if objective == "mlm":
                yield np.concatenate(chunk)[:max_tokens], None, 0
            else:
                pair = _pair(chunk, segments, i, others, rng, target, objective)
                if pair is not None:
                    first, second, label, put_back = pair
                    i -= put_back
                    first, second = _truncate_pair(first, second, max_tokens, rng)
                    yield first, second, label
            target, chunk, length = target_length(), [], 0
        i += 1


def _pair(chunk, segments, i, others, rng, target, objective):
    """A, B, label and the number of segments to put back, or None if no pair can be made."""
    a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
    if objective == "nsp" and rng.random() < 0.5:
        first = np.concatenate(chunk[:a_end])
        if not others:
            raise ValueError("Next-sentence prediction needs a second document for random "
                             "pairs; separate documents with a blank line, or use objective='mlm' "
                             "or 'sop'.")
        other = others[int(rng.integers(len(others)))]
        start = int(rng.integers(len(other)))
        second, wanted = [], max(target - len(first), 1)
        for sentence in other[start:]:
            second.append(sentence)
            if sum(map(len, second)) >= wanted:
                break
        return first, np.concatenate(second), 1, len(chunk) - a_end
    if len(chunk) == 1:
        if len(chunk[0]) < 2:
            return None
        cut = int(rng.integers(1, len(chunk[0])))
        first, second = chunk[0][:cut], chunk[0][cut:]
    else:
        first, second = np.concatenate(chunk[:a_end]), np.concatenate(chunk[a_end:])
    if objective == "sop" and rng.random() < 0.5:
        return second, first, 1, 0
    return first, second, 0, 0


def _truncate_pair(first, second, max_tokens, rng):
    """Trims the longer segment, one token at a time from a random end, to fit `max_tokens`."""
    bounds = [[0, len(first)], [0, len(second)]]
    while bounds[0][1] - bounds[0][0] + bounds[1][1] - bounds[1][0] > max_tokens:
        longer = bounds[0] if bounds[0][1] - bounds[0][0] > bounds[1][1] - bounds[1][0] else bounds[1]
        if rng.random() < 0.5:
            longer[0] += 1
        else:
            longer[1] -= 1
    return first[bounds[0][0]:bounds[0][1]], second[bounds[1][0]:bounds[1][1]]
