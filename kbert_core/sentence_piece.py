"""ALBERT's SentencePiece (unigram) tokenizer in pure Python: Hugging Face's ids and character offsets without
TensorFlow or the `sentencepiece` package.

`read_model` parses a SentencePiece `.model` file (a small protobuf) by hand; `SentencePiece` runs the pipeline
of Hugging Face's `AlbertTokenizerFast` over it: ALBERT's normalization, the model's own character map
(`Charsmap`), a split at whitespace with "▁" before each word, and the unigram model's best segmentation
(Viterbi over the pieces' log probabilities).
"""

import functools
import base64
import json
import pathlib
import re
import struct
import unicodedata

from kbert_core.packing import Layout, pack

SPACE = "▁"  # U+2581: SentencePiece's mark of a word's start
NORMAL, UNKNOWN, CONTROL, USER_DEFINED = 1, 2, 3, 4  # SentencePiece's piece types
UNIGRAM = 1
UNKNOWN_PENALTY = 10.0  # an unknown character costs the lowest piece score minus this
CACHE_SIZE = 10_000
# Rust's `char::is_whitespace` (the White_Space property), where Hugging Face's `WhitespaceSplit` cuts.
WHITE_SPACE = frozenset([*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000])


def _code_points(ranges):
    """The code points of hexadecimal ranges such as "7FD 898-89F"."""
    return frozenset(code for item in ranges.split() for code in range(int(item.split("-")[0], 16),
                                                                         int(item.split("-")[-1], 16) + 1))


# Hugging Face's `NFKD` and `StripAccents` use the Unicode 9.0 tables of the crate unicode-normalization-alignments,
# Python's `unicodedata` newer ones (14.0 in Python 3.11). Where they differ, found by comparing every code point
# with `tokenizers` 0.23: the combining marks of Unicode 10-14, which Hugging Face keeps; two marks of Unicode 9.0
# that are letters since; and compatibility characters of Unicode 12-14 that its NFKD leaves as they are.
_NEWER_MARKS = _code_points("7FD 898-89F 8CA-8D3 9FE AFA-AFF B55 C04 C3C D00 D3B-D3C D81 EBA 1715 180F 1ABF-1ACE "
                            "1CF7 1DF6-1DFA A82C A8FF 10D24-10D27 10EAB-10EAC 10F46-10F50 10F82-10F85 11070 "
                            "11073-11074 110C2 11145-11146 111C9 111CE-111CF 1133B 1145E 1182C-1183A 11930-11935 "
                            "11937-11938 1193B-1193E 11940 11942-11943 119D1-119D7 119DA-119E0 119E4 11A01-11A0A "
                            "11A33-11A39 11A3B-11A3E 11A47 11A51-11A5B 11A8A-11A99 11D31-11D36 11D3A 11D3C-11D3D "
                            "11D3F-11D45 11D47 11D8A-11D8E 11D90-11D91 11D93-11D97 11EF3-11EF6 16F4F 16F7F-16F87 "
                            "16FE4 16FF0-16FF1 1CF00-1CF2D 1CF30-1CF46 1E130-1E136 1E2AE 1E2EC-1E2EF")
_OLDER_MARKS = frozenset([0x1CF2, 0x1CF3])
_NEWER_COMPATIBILITY = frozenset([0xA7F2, 0xA7F3, 0xA7F4, 0x1F16C])
# Grapheme cluster classes (Unicode's UAX #29) that `unicodedata` does not give: the few that decide which
# clusters Hugging Face's `Precompiled` normalizer reads whole.
_PREPEND = frozenset([*range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0xD4E, 0x110BD, 0x110CD, 0x111C2,
                      0x111C3, 0x1193F, 0x11941, 0x11A3A, *range(0x11A84, 0x11A8A), 0x11D46])
_EXTEND_OTHER = frozenset([0x200C, 0x9BE, 0x9D7, 0xB3E, 0xB57, 0xBBE, 0xBD7, 0xCC2, 0xCD5, 0xCD6, 0xD3E, 0xD57,
                           0xDCF, 0xDDF, 0x1B35, 0x302E, 0x302F, 0xFF9E, 0xFF9F, 0x1D165, *range(0x1D16E, 0x1D173),
                           *range(0x1F3FB, 0x1F400), *range(0xE0020, 0xE0080)])
_ZWJ = 0x200D
_CODE_POINTS = (*range(0xD800), *range(0xE000, 0x110000))  # surrogates aside
_WORD = re.compile("[^" + "".join(re.escape(chr(c)) for c in sorted(WHITE_SPACE)) + "]+")


def read_model(path):
    """The fields of a SentencePiece `.model` file that tokenizing needs, read from its protobuf by hand.

    Returns dict `pieces` (list of (piece, score, type)), `model_type` (1: unigram), `unk_id` and
    `charsmap` (the normalizer's precompiled character map, bytes; b"" for none).

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "spiece.model"
    >>> piece = b"\\n\\x03\\xe2\\x96\\x81" + b"\\x15\\x00\\x00\\x00\\xc0" + b"\\x18\\x01"  # "▁", score -2.0, type 1
    >>> _ = path.write_bytes(b"\\n\\x0c" + piece)
    >>> read_model(path)["pieces"]
    [('▁', -2.0, 1)]
    """
    path = pathlib.Path(path)
    model = {"pieces": [], "model_type": UNIGRAM, "unk_id": 0, "charsmap": b""}
    try:
        for field, value in _fields(path.read_bytes()):
            if field in (1, 2, 3) and not isinstance(value, bytes):
                raise ValueError(f"field {field} is not a message")
            if field == 1:
                piece = {1: b"", 2: bytes(4), 3: NORMAL}
                piece.update(_fields(value))
                model["pieces"].append((piece[1].decode("utf-8"), struct.unpack("<f", piece[2])[0], piece[3]))
            elif field == 2:
                for key, item in _fields(value):
                    if key in (3, 40):
                        model["model_type" if key == 3 else "unk_id"] = item
            elif field == 3:
                model["charsmap"] = dict(_fields(value)).get(2, b"")
    except (ValueError, IndexError, UnicodeDecodeError, struct.error, AttributeError, TypeError) as error:
        raise ValueError(f"{path} is not a SentencePiece model ({error}).") from None
    if not model["pieces"]:
        raise ValueError(f"{path} is not a SentencePiece model: it holds no pieces.")
    return model


def _fields(data):
    """(field number, value) of each field of one protobuf message: ints for varints, bytes otherwise."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
        elif wire in (1, 2, 5):
            length, position = (8, position) if wire == 1 else (4, position) if wire == 5 else _varint(data, position)
            value, position = bytes(data[position : position + length]), position + length
        else:
            raise ValueError(f"field {field} has wire type {wire}")
        if position > len(data):
            raise ValueError(f"field {field} runs past the end")
        yield field, value


def _varint(data, position):
    result, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


class Charsmap:
    """A SentencePiece model's precompiled normalization rules (`nmt_nfkc`'s, say), as Hugging Face applies them.

    The blob is a little-endian uint32 (the trie's size in bytes), a darts-clone double-array trie over UTF-8
    keys, then the replacement strings, each ended by b"\\0". `transform` gives the replacement of the
    shortest key that starts a chunk (Hugging Face's rule, not SentencePiece's longest match).

    Example:
    >>> Charsmap(b"").transform("a") is None
    True
    """

    def __init__(self, blob):
        self.blob = blob
        self.transform = functools.lru_cache(maxsize=65536)(self._transform)
        self.has_rules = bool(blob)
        if not blob:
            self._units, self._pool = (), b""
            return
        (size,) = struct.unpack("<I", blob[:4])
        if size % 4 or 4 + size > len(blob):
            raise ValueError(f"The precompiled character map is damaged: its trie size {size} does not fit.")
        self._units = struct.unpack(f"<{size // 4}I", blob[4 : 4 + size])
        self._pool = blob[4 + size :]

    def __reduce__(self):
        return type(self), (self.blob,)

    def _transform(self, chunk):
        """The replacement of the shortest rule that `chunk` starts with; None when no rule does."""
        units = self._units
        if not units:
            return None
        position = (units[0] >> 10) << ((units[0] & 0x200) >> 6)
        for byte in chunk.encode("utf-8"):
            position ^= byte
            if not byte or position >= len(units) or units[position] & 0x800000FF != byte:
                return None
            unit = units[position]
            position ^= (unit >> 10) << ((unit & 0x200) >> 6)
            if unit & 0x100 and position < len(units):
                start = units[position] & 0x7FFFFFFF
                return self._pool[start : self._pool.index(b"\0", start)].decode("utf-8")
        return None


@functools.lru_cache(maxsize=65536)
def _cluster_class(char):
    """The grapheme cluster break class of a character, approximated from its general category."""
    code = ord(char)
    if code in (0x0D, 0x0A):
        return "CR" if code == 0x0D else "LF"
    if code == _ZWJ:
        return "ZWJ"
    if code in _EXTEND_OTHER:
        return "Extend"
    if code in _PREPEND:
        return "Prepend"
    if 0x1F1E6 <= code <= 0x1F1FF:
        return "RI"
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    category = unicodedata.category(char)
    if category in ("Mn", "Me"):
        return "Extend"
    if category == "Mc" or code in (0xE33, 0xEB3):
        return "SpacingMark"
    if category in ("Cc", "Cf", "Zl", "Zp", "Cs"):
        return "Control"
    return "Other"


def _joins(before, after):
    """Whether no grapheme cluster boundary falls between two characters of these classes (UAX #29, GB3-GB9b)."""
    if before == "CR":
        return after == "LF"
    if before in ("LF", "Control") or after in ("CR", "LF", "Control"):
        return False
    if before == "L" and after in ("L", "V", "LV", "LVT") or before in ("LV", "V") and after in ("V", "T"):
        return True
    if before in ("LVT", "T") and after == "T":
        return True
    return after in ("Extend", "ZWJ", "SpacingMark") or before == "Prepend"


def graphemes(text):
    """`text` cut into grapheme clusters, as Unicode's rules (UAX #29) do for the classes `unicodedata` gives.

    Emoji ZWJ sequences (rule GB11) and Indic conjuncts (GB9c) are not joined: Hugging Face reads
    clusters of 6 UTF-8 bytes or more character by character, and those are longer.

    Example:
    >>> [len(cluster) for cluster in graphemes("e\\u0301\\r\\nx")]
    [2, 2, 1]
    """
    if text.isascii() and "\r" not in text:
        return list(text)
    clusters, previous, indicators = [], None, 0
    for char in text:
        kind = _cluster_class(char)
        joined = previous is not None and (_joins(previous, kind) or (previous == "RI" == kind and indicators % 2))
        indicators = indicators + 1 if kind == "RI" else 0
        if joined:
            clusters[-1] += char
        else:
            clusters.append(char)
        previous = kind
    return clusters


class _Normalized:
    """Hugging Face's `NormalizedString`, by characters: the text and, per character, its span in the original."""

    def __init__(self, text, start):
        self.chars = list(text)
        self.spans = [(start + i, start + i + 1) for i in range(len(text))]

    def transform(self, changes, skipped=0):
        """Applies (char, change) pairs: change 0 replaces the next character, > 0 inserts one (with the
        previous character's span), -n replaces the next one and removes the n after it."""
        chars, spans, position = [], [], skipped
        for char, change in changes:
            if change > 0:
                span = self.spans[position - 1] if position else (0, 0)
            else:
                span = self.spans[position]
                position += 1 - min(change, 0)
            chars.append(char)
            spans.append(span)
        self.chars, self.spans = chars, spans


def _replace(changes, old, new):
    """Hugging Face's `Precompiled` bookkeeping for replacing the characters `old` by `new`."""
    changes += [(c, 0) for c in new]
    difference = len(new) - len(old)
    if difference > 0:
        for i in range(len(changes) - difference, len(changes)):
            changes[i] = (changes[i][0], 1)
    elif difference < 0 and changes:
        changes[-1] = (changes[-1][0], changes[-1][1] + difference)


class SentencePiece:
    """ALBERT's SentencePiece unigram tokenizer in pure Python: Hugging Face's `AlbertTokenizerFast`'s pipeline.

    Each text is cut at the split pieces (Hugging Face's non-special added tokens, found in the raw
    text), then normalized ("``" and "''" become '"', NFKD without accents unless `keep_accents`,
    lower-cased when `lowercase`, then the model's character map), split at whitespace, "▁" put before
    each word, and each word segmented into the pieces of highest total score (the model's
    user-defined pieces among them, with their scores, as in SentencePiece; unknown characters, each
    scored the lowest piece score minus 10, fused into one `<unk>`). Ids, offsets and word ids equal Hugging
    Face's, even where its offsets shift: after a character that the map deletes at the start of a
    stretch of text, the next ones take the spans of those before them. Special-token text typed in a
    text ("[MASK]") stays plain text, where Hugging Face reads the special token.

    Args:
        pieces: list of (piece, score, type) as `read_model` gives, or the path of a `.model` file.
        charsmap: bytes. The precompiled character map (`read_model(...)["charsmap"]`); b"" for none.
            With a path for `pieces`, None takes the model's own.
        lowercase: bool. Lower-case (ALBERT's `do_lower_case`).
        keep_accents: bool. Keep accents, which ALBERT otherwise strips.
        split_pieces: list of str. The pieces cut out of the raw text first: Hugging Face's non-special
            added tokens (transformers before 5.25 made the model's user-defined pieces such tokens).

    Example:
    >>> pieces = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3),
    ...           ("▁", -2, 1), ("▁hi", -3, 1), ("s", -4, 1), ("!", -5, 4)]
    >>> sp = SentencePiece(pieces, b"")
    >>> sp.tokenize("His hi!")
    ([6, 7, 6, 8], [(0, 2), (2, 3), (4, 6), (6, 7)], [0, 0, 1, 1])
    >>> sp.encode(["His"], ["x"], max_length=8)["token_ids"].tolist()
    [[2, 6, 7, 3, 5, 1, 3, 0]]
    """

    def __init__(self, pieces, charsmap=None, lowercase=True, keep_accents=False, split_pieces=()):
        if isinstance(pieces, (str, pathlib.Path)):
            model = read_model(pieces)
            pieces = model["pieces"]
            charsmap = model["charsmap"] if charsmap is None else charsmap
        self.pieces = [(str(piece), float(score), int(kind)) for piece, score, kind in pieces]
        self.ids = {}
        for i, (piece, _, _) in enumerate(self.pieces):
            self.ids[piece] = i  # a repeated piece takes its last id, as in Hugging Face
        missing = [token for token in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]") if token not in self.ids]
        if missing:
            raise ValueError(f"The SentencePiece model lacks ALBERT's special pieces {missing}.")
        self.cls, self.sep, self.pad, self.unk = (self.ids[t] for t in ("[CLS]", "[SEP]", "<pad>", "<unk>"))
        if self.unk != 1:
            raise ValueError(f"<unk> has id {self.unk}: Hugging Face's ALBERT tokenizer reads unknown characters as "
                             "id 1.")
        self.layout = Layout.bert(self.cls, self.sep, self.pad)
        self.lowercase, self.keep_accents = lowercase, keep_accents
        self.charsmap = Charsmap(charsmap or b"")
        self.split_pieces = list(split_pieces)
        unknown = [piece for piece in self.split_pieces if piece not in self.ids]
        if unknown:
            raise ValueError(f"The added tokens {unknown} are not pieces of the SentencePiece model: kbert reads "
                             "added tokens that the model holds only.")
        self._splitter = re.compile("|".join(re.escape(p) for p in sorted(self.split_pieces, key=len, reverse=True)))
        # The lattice: every piece but the control and unknown ones (typed special tokens stay text).
        self._prefixes = {}
        for piece, score, kind in self.pieces:
            if kind not in (CONTROL, UNKNOWN) and piece:
                self._prefixes.setdefault(piece[0], {})[piece] = score
        self._longest = max(len(piece) for piece, _, _ in self.pieces)
        self._unknown_score = min(score for _, score, _ in self.pieces) - UNKNOWN_PENALTY
        self._cache = {}

    @classmethod
    def from_hf(cls, path):
        """Reads an ALBERT tokenizer folder as Hugging Face's `AlbertTokenizerFast` does.

        spiece.model gives the pieces, or else tokenizer.json (all that `transformers` 5 saves: its
        special added tokens are the control pieces); tokenizer_config.json, if present,
        `do_lower_case`, `keep_accents` and the non-special tokens of `added_tokens_decoder`;
        tokenizer.json, if present, the piece scores, the character map and its non-special added
        tokens (Hugging Face's own conversion of ALBERT's model lowers the scores of pieces like "9,"
        by 100 there). The added tokens are the pieces cut out of raw text (`split_pieces`).

        Example:
        >>> SentencePiece.from_hf("no/such/folder")
        Traceback (most recent call last):
        FileNotFoundError: no/such/folder holds neither spiece.model nor tokenizer.json: an ALBERT tokenizer folder ...
        """
        path = pathlib.Path(path)
        model_file, json_file = path / "spiece.model", path / "tokenizer.json"
        if model_file.is_file():
            model = read_model(model_file)
            if model["model_type"] != UNIGRAM:
                raise ValueError(f"{model_file}: model type {model['model_type']} is not unigram (1).")
            pieces, charsmap, split_pieces = model["pieces"], model["charsmap"], []
            if json_file.is_file():
                pieces, charsmap, split_pieces = _from_tokenizer_json(json_file, pieces)
        elif json_file.is_file():
            pieces, charsmap, split_pieces = _from_tokenizer_json(json_file)
        else:
            raise FileNotFoundError(f"{path} holds neither spiece.model nor tokenizer.json: an ALBERT tokenizer "
                                    "folder needs one of them.")
        config_file = path / "tokenizer_config.json"
        config = _read_json(config_file) if config_file.is_file() else {}
        if not config.get("add_prefix_space", True):
            raise ValueError(f"{config_file}: add_prefix_space=false is not supported.")
        added = _non_special_added_tokens(config.get("added_tokens_decoder", {}).values(), config_file)
        split_pieces += [token for token in added if token not in split_pieces]
        return cls(pieces, charsmap, lowercase=config.get("do_lower_case", True),
                   keep_accents=config.get("keep_accents", False), split_pieces=split_pieces)

    def changed_characters(self):
        """{character: what the normalizer makes of it alone} for each code point that it changes (surrogates
        aside), for tokenizers that normalize by a table of characters (kbert.text.sentence_piece's).

        Example:
        >>> sp = SentencePiece([("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3)],
        ...                    b"")
        >>> changed = sp.changed_characters()
        >>> changed["É"], changed["ﬁ"], "e" in changed
        ('e', 'fi', False)
        """
        candidates = set(_unicode_changes(self.keep_accents, self.lowercase))
        if self.charsmap.has_rules:
            rule = self.charsmap._transform  # uncached: each code point is asked once
            candidates.update(chr(code) for code in _CODE_POINTS if rule(chr(code)) is not None)
        changed = {char: self.normalize(char)[0] for char in sorted(candidates)}
        return {char: normalized for char, normalized in changed.items() if normalized != char}

    def normalize(self, text, start=0):
        """(normalized text, [start, end) span in `text` of each of its characters), as Hugging Face's normalizer.

        Example:
        >>> SentencePiece([("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3)],
        ...               b"").normalize("``Ça''")
        ('"ca"', [(1, 2), (2, 3), (3, 4), (5, 6)])
        """
        normalized = _Normalized(text, start)
        for quotes in ("``", "''"):
            if quotes in "".join(normalized.chars):
                self._replace_quotes(normalized, quotes)
        chars, spans = [], []
        for char, span in zip(normalized.chars, normalized.spans):
            mapped = _normalize_char(char, self.keep_accents, self.lowercase)
            chars += mapped
            spans += [span] * len(mapped)
        normalized.chars, normalized.spans = chars, spans
        self._apply_charsmap(normalized)
        return "".join(normalized.chars), normalized.spans

    @staticmethod
    def _replace_quotes(normalized, quotes):
        """Hugging Face's `Replace`: '"' for each match, with the span of the match's last character."""
        text, chars, spans, position = "".join(normalized.chars), [], [], 0
        while (found := text.find(quotes, position)) >= 0:
            chars += normalized.chars[position:found] + ['"']
            spans += normalized.spans[position:found] + [normalized.spans[found + 1]]
            position = found + 2
        normalized.chars, normalized.spans = chars + normalized.chars[position:], spans + normalized.spans[position:]

    def _apply_charsmap(self, normalized):
        changes, modified = [], False
        for cluster in graphemes("".join(normalized.chars)):
            if len(cluster) > 1 and len(cluster.encode("utf-8")) < 6:
                replacement = self.charsmap.transform(cluster)
                if replacement is not None:
                    _replace(changes, cluster, replacement)
                    modified = True
                    continue
            for char in cluster:
                replacement = self.charsmap.transform(char)
                if replacement is None:
                    changes.append((char, 0))
                else:
                    _replace(changes, char, replacement)
                    modified = True
        if modified:
            normalized.transform(changes)

    def tokenize(self, text):
        """(ids, [start, end) char spans, word indices) of one text's pieces, no special tokens.

        A word is a user-defined piece cut out of the raw text, or "▁" and what follows it up to
        the next "▁" in a whitespace-separated part of the normalized text. A lone surrogate counts as "?".
        """
        if not text.isascii():
            text = text.encode("utf-8", "replace").decode("utf-8")
        words = []  # (normalized word or None for a split piece, spans or (start, end), id)
        position = 0
        for match in self._splitter.finditer(text) if self.split_pieces else ():
            words += self._words(text[position : match.start()], position)
            words.append((None, (match.start(), match.end()), self.ids[match.group()]))
            position = match.end()
        words += self._words(text[position:], position)
        ids, spans, word_ids = [], [], []
        for w, (word, word_spans, piece_id) in enumerate(words):
            if word is None:
                ids.append(piece_id)
                spans.append(word_spans)
                word_ids.append(w)
                continue
            for piece_id, first, last in self._segment(word):
                ids.append(piece_id)
                spans.append((word_spans[first][0], word_spans[last - 1][1]))
                word_ids.append(w)
        return ids, spans, word_ids

    def _words(self, text, start):
        """The words of a stretch of raw text: whitespace-separated, "▁" before each, cut before each "▁"."""
        if not text:
            return []
        normalized, spans = self.normalize(text, start)
        words = []
        for match in _WORD.finditer(normalized):
            word, word_spans = match.group(), spans[match.start() : match.end()]
            if not word.startswith(SPACE):
                word, word_spans = SPACE + word, [word_spans[0], *word_spans]
            if SPACE not in word[1:]:
                words.append((word, word_spans, None))
                continue
            cuts = [i for i, char in enumerate(word) if char == SPACE] + [len(word)]
            words += [(word[a:b], word_spans[a:b], None) for a, b in zip(cuts, cuts[1:])]
        return words

    def _segment(self, word):
        """[(id, first char, end char)] of the best segmentation of one word (Hugging Face's Viterbi)."""
        if word in self._cache:
            return self._cache[word]
        best = [(0.0, None, None)] + [(None, None, None)] * len(word)  # (score, start, piece id) ending here
        for start in range(len(word)):
            score_here = best[start][0]
            candidates = self._prefixes.get(word[start], {})
            single = False
            for end in range(start + 1, min(len(word), start + self._longest) + 1):
                piece = word[start:end]
                if piece not in candidates:
                    continue
                score = candidates[piece] + score_here
                if best[end][0] is None or score > best[end][0]:
                    best[end] = (score, start, self.ids[piece])
                single = single or end == start + 1
            if not single:
                score = self._unknown_score + score_here
                if best[start + 1][0] is None or score > best[start + 1][0]:
                    best[start + 1] = (score, start, self.unk)
        pieces, end = [], len(word)
        while end > 0:
            _, start, piece_id = best[end]
            if piece_id == self.unk and pieces and pieces[-1][0] == self.unk and pieces[-1][3]:
                pieces[-1] = (self.unk, start, pieces[-1][2], True)  # consecutive unknowns fuse
            else:
                pieces.append((piece_id, start, end, piece_id == self.unk))
            end = start
        result = [(self.ids.get(word[a:b], i) if unknown else i, a, b) for i, a, b, unknown in reversed(pieces)]
        if len(self._cache) < CACHE_SIZE:
            self._cache[word] = result
        return result

    def encode(self, texts, pairs=None, max_length=128, truncation="longest_first", max_first_length=None):
        """Packs `[CLS] A [SEP] (B [SEP])`, padded with `<pad>` to `max_length`, as ALBERT does.

        Returns int32 arrays like `kbert_core.WordPiece.encode`: `token_ids`, `segment_ids` (1 on
        B and its [SEP]), `padding_mask`, `word_ids` (-1 on special tokens and padding), `offsets`
        (rows, max_length, 2) and `truncated` (bool per row).
        """
        second = None if pairs is None else [self.tokenize(pair) for pair in pairs]
        return pack([self.tokenize(text) for text in texts], self.layout, max_length, second, truncation,
                    max_first_length)


@functools.lru_cache(maxsize=65536)
def _normalize_char(char, keep_accents, lowercase):
    """Unless `keep_accents`, NFKD without combining marks (Hugging Face's `StripAccents` drops categories Mn, Mc
    and Me); then each character lower-cased when `lowercase`.

    Hugging Face applies these one after another to the whole text; each output character keeps the
    span of the character it comes from, so applying them character by character is the same.
    """
    chars = char
    if not keep_accents:
        chars = char if ord(char) in _NEWER_COMPATIBILITY else unicodedata.normalize("NFKD", char)
        chars = [c for c in chars if not _is_mark(c)]
    return "".join(c.lower() for c in chars) if lowercase else "".join(chars)


@functools.lru_cache(maxsize=4)
def _unicode_changes(keep_accents, lowercase):
    """The code points that `_normalize_char` changes (computed once: about a second)."""
    alone = _normalize_char.__wrapped__
    return tuple(chr(code) for code in _CODE_POINTS if alone(chr(code), keep_accents, lowercase) != chr(code))


def _is_mark(char):
    """A combining mark in Unicode 9.0 (what Hugging Face's `StripAccents` removes)."""
    code = ord(char)
    return code in _OLDER_MARKS or code not in _NEWER_MARKS and unicodedata.category(char)[0] == "M"


def _read_json(path):
    try:
        return json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error}).") from None


def _from_tokenizer_json(path, model_pieces=None):
    """(pieces with tokenizer.json's scores, its character map, its non-special added tokens). The pieces' types
    are `model_pieces`' (spiece.model's); without them, special added tokens are control pieces, the model's unk_id
    the unknown one, the rest normal (user-defined pieces among them: the same in Hugging Face's lattice)."""
    config = _read_json(path)
    model = config.get("model") or {}
    if model.get("type") != "Unigram":
        raise ValueError(f"{path}: model type {model.get('type')!r} is not Unigram.")
    vocab = model.get("vocab") or []
    added = config.get("added_tokens", [])
    if model_pieces is None:
        special = {token["id"] for token in added if token.get("special")}
        kinds = [UNKNOWN if i == model.get("unk_id") else CONTROL if i in special else NORMAL
                 for i in range(len(vocab))]
    else:
        if [piece for piece, _ in vocab] != [piece for piece, _, _ in model_pieces]:
            raise ValueError(f"{path}: its {len(vocab)} pieces are not spiece.model's {len(model_pieces)}, in order.")
        kinds = [kind for _, _, kind in model_pieces]
    pieces = [(piece, float(score), kind) for (piece, score), kind in zip(vocab, kinds)]
    normalizer = config.get("normalizer") or {}
    steps = normalizer.get("normalizers", [normalizer]) if normalizer.get("type") == "Sequence" else [normalizer]
    charsmap = b""
    for step in steps:
        if step.get("type") == "Precompiled" and step.get("precompiled_charsmap"):
            charsmap = base64.b64decode(step["precompiled_charsmap"])
    return pieces, charsmap, _non_special_added_tokens(added, path)


def _non_special_added_tokens(tokens, path):
    """The contents of Hugging Face's added tokens (dicts) that are not special: matched in the raw text."""
    added = [token for token in tokens if not token.get("special")]
    if any(token.get("normalized") for token in added):
        raise ValueError(f"{path}: added tokens matched after normalization are not supported.")
    return [token["content"] for token in added]
