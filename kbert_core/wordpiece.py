"""BERT's WordPiece tokenizer in pure Python: kbert's ids and character offsets without TensorFlow."""

import functools
import pathlib
import unicodedata

from kbert_core.packing import Layout, pack

MAX_WORD_CHARS = 100
# Rust's `char::is_whitespace` (the White_Space property) minus the control characters,
# which Hugging Face deletes before it looks for spaces.
WHITESPACE = frozenset([0x09, 0x0A, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                        0x202F, 0x205F, 0x3000])
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


@functools.lru_cache(maxsize=65536)
def normalize_char(char, lowercase=True):
    """What Hugging Face's `BertNormalizer` makes of one character.

    Spaces become " ", control/format/private-use characters, U+0000 and U+FFFD vanish and,
    when `lowercase`, the NFD decomposition loses its accents (category Mn) and is lower-cased.
    `kbert.text.bert_normalizer` writes this rule into the in-graph tokenizer's table.

    Example:
    >>> [normalize_char(c) for c in "É\\u200b\\u00a0"]
    ['e', '', ' ']
    """
    code = ord(char)
    if code in WHITESPACE:
        return " "
    category = unicodedata.category(char)
    if code in (0, 0xFFFD) or category in ("Cc", "Cf", "Co"):
        return ""
    if not lowercase or category == "Cn":
        return char
    return "".join(c for c in unicodedata.normalize("NFD", char) if unicodedata.category(c) != "Mn").lower()


def _splits_alone(char):
    """Punctuation (BERT's ASCII ranges and Unicode P*) and CJK ideographs are words by themselves."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P") or any(lo <= code <= hi for lo, hi in _CJK)


class WordPiece:
    """BERT's WordPiece tokenizer in pure Python, over a `vocab.txt` (one token a line).

    Lower-casing and accent stripping (when `lowercase`), deletion of control characters,
    splitting at spaces, punctuation and CJK ideographs, then greedy longest-match
    WordPiece; words over 100 characters, or with no matching piece, become one [UNK].
    On ordinary text it gives the ids and offsets of `kbert.text.BertTokenizer`.

    Args:
        vocabulary: list of str, or the path of a `vocab.txt`.
        lowercase: bool. Whether to strip accents and lower-case.

    Example:
    >>> wp = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s"])
    >>> wp.encode(["His hi!"], max_length=8)["token_ids"].tolist()
    [[2, 5, 6, 5, 1, 3, 0, 0]]
    >>> wp.tokenize("His hi!")
    ([5, 6, 5, 1], [(0, 2), (2, 3), (4, 6), (6, 7)], [0, 0, 1, 2])
    """

    def __init__(self, vocabulary, lowercase=True):
        if isinstance(vocabulary, (str, pathlib.Path)):
            vocabulary = pathlib.Path(vocabulary).read_text("utf-8").split("\n")
            vocabulary = vocabulary[:-1] if vocabulary[-1] == "" else vocabulary
        self.ids = {token: i for i, token in enumerate(vocabulary)}
        self.lowercase = lowercase
        self.unk, self.cls, self.sep, self.pad = (self.ids[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]"))
        self.layout = Layout.bert(self.cls, self.sep, self.pad)

    def tokenize(self, text):
        """(ids, [start, end) char spans, word indices) of one text's pieces, no special tokens."""
        chars = [(c, i) for i, char in enumerate(text) for c in normalize_char(char, self.lowercase)]
        words, word = [], []
        for char, origin in chars:
            if char == " " or _splits_alone(char):
                if word:
                    words.append(word)
                word = [] if char == " " else [(char, origin)]
                if word:
                    words.append(word)
                    word = []
            else:
                word.append((char, origin))
        if word:
            words.append(word)
        ids, spans, word_ids = [], [], []
        for w, word in enumerate(words):
            for piece_id, first, last in self._pieces("".join(c for c, _ in word)):
                ids.append(piece_id)
                spans.append((word[first][1], word[last][1] + 1))
                word_ids.append(w)
        return ids, spans, word_ids

    def _pieces(self, word):
        if len(word) > MAX_WORD_CHARS:
            return [(self.unk, 0, len(word) - 1)]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    pieces.append((self.ids[piece], start, end - 1))
                    start = end
                    break
            else:
                return [(self.unk, 0, len(word) - 1)]
        return pieces

    def encode(self, texts, pairs=None, max_length=128, truncation="longest_first", max_first_length=None):
        """Packs `[CLS] A [SEP] (B [SEP])`, padded with [PAD] to `max_length`: int32 arrays like kbert's tokenizer.

        Returns dict `token_ids`, `segment_ids`, `padding_mask`, `word_ids` (-1 on special
        tokens and padding), `offsets` (rows, max_length, 2) and `truncated` (bool per row).
        """
        second = None if pairs is None else [self.tokenize(pair) for pair in pairs]
        return pack([self.tokenize(text) for text in texts], self.layout, max_length, second, truncation,
                    max_first_length)
