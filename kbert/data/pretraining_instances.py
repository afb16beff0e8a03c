"""Raw text to BERT pretraining pairs, as google-research/bert's create_pretraining_data.py."""

import re

import numpy as np

from kbert.data.text_file import DataFormatError, open_text, utf8_error

# A sentence ends at . ! or ? (plus closing quotes or brackets) before a capitalized word;
# common English titles are not ends.
_SENTENCE_END = re.compile(
    r"(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bMessrs)[.!?]+[\"'”’)\]]*(\s+)"
    r"(?=[\"'“‘(\[]?[A-Z])")
TASKS = ("nsp", "sop", "mlm")


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


def read_documents(paths):
    """Yields documents (lists of sentences) from text files; blank lines separate documents.

    Each line is a sentence or a paragraph (split into sentences). Files are read line by
    line, so a corpus larger than memory streams. Bytes that are not UTF-8 raise
    `kbert.data.text_file.DataFormatError` naming the file and line (`path:line: ...`).

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_bytes(b"One. Two.\\nThree\\n\\n\\nOther doc.\\n")
    >>> list(read_documents([path]))
    [['One.', 'Two.', 'Three'], ['Other doc.']]
    """
    for path in paths:
        document = []
        with open_text(path) as lines:
            for number, line in enumerate(lines, start=1):
                if utf8_error(line):
                    raise DataFormatError(f"{path}:{number}: {utf8_error(line)}")
                line = line.strip()
                if line:
                    document.extend(split_sentences(line))
                elif document:
                    yield document
                    document = []
        if document:
            yield document


def document_instances(document, others, rng, max_seq_length=128, short_seq_prob=0.1,
                       task="nsp"):
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
        task: str. "nsp", "sop" or "mlm".

    Example:
    >>> rng = np.random.default_rng(0)
    >>> doc = [np.array([5, 6]), np.array([7]), np.array([8, 9])]
    >>> [(a.tolist(), b.tolist(), label) for a, b, label in document_instances(doc, [], rng, 9, task="sop")]
    [([8, 9], [5, 6, 7], 1)]
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}.")
    max_tokens = max_seq_length - (2 if task == "mlm" else 3)
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
            if task == "mlm":
                yield np.concatenate(chunk)[:max_tokens], None, 0
            else:
                pair = _pair(chunk, segments, i, others, rng, target, task)
                if pair is not None:
                    first, second, label, put_back = pair
                    i -= put_back
                    first, second = _truncate_pair(first, second, max_tokens, rng)
                    yield first, second, label
            target, chunk, length = target_length(), [], 0
        i += 1


def _pair(chunk, segments, i, others, rng, target, task):
    """A, B, label and the number of segments to put back, or None if no pair can be made."""
    a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
    if task == "nsp" and rng.random() < 0.5:
        first = np.concatenate(chunk[:a_end])
        if not others:
            raise ValueError("Next-sentence prediction needs a second document for random "
                             "pairs; separate documents with a blank line, or use task='mlm' "
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
    if task == "sop" and rng.random() < 0.5:
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
