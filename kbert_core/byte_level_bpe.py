"""RoBERTa's byte-level BPE tokenizer in pure Python: Hugging Face's ids and character offsets without TensorFlow."""

import functools
import heapq
import json
import pathlib
import re
import unicodedata

from kbert_core.packing import Layout, pack

SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
CACHE_SIZE = 10_000  # words kept with their pieces, as Hugging Face's BPE cache
# Oniguruma's \s (the regex engine of Hugging Face's `ByteLevel` pre-tokenizer): these and categories Zs, Zl, Zp.
_ONIG_SPACE = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85)


@functools.lru_cache(maxsize=1)
def bytes_to_unicode():
    """GPT-2's table: each byte as a printable character (the alphabet of byte-level vocabularies).

    Printable Latin-1 bytes stand for themselves; the other 68 (controls, space, U+00A0, U+00AD) take U+0100 on.

    Example:
    >>> table = bytes_to_unicode()
    >>> table[ord("a")], table[ord(" ")], table[0x0A], len(set(table.values()))
    ('a', 'Ġ', 'Ċ', 256)
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return dict(sorted(table.items()))


def _char_class(code_points):
    """A regular-expression class body (`a-z...`) of the sorted code points."""
    ranges, start, last = [], None, None
    for code in code_points:
        if start is None or code != last + 1:
            if start is not None:
                ranges.append((start, last))
            start = code
        last = code
    if start is not None:
        ranges.append((start, last))
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


@functools.lru_cache(maxsize=1)
def gpt2_pattern():
    """GPT-2's pre-tokenizer for Python's `re`:
    `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`.

    Python's `re` has no `\\p{...}`: letters (L*), numbers (N*) and Oniguruma's whitespace (\\t-\\r, U+0085, Z*)
    are written out as classes from `unicodedata` (built once, in about 0.2 s).

    Example:
    >>> gpt2_pattern().findall("It's 2024, naïve  東京!! ")
    ['It', "'s", ' 2024', ',', ' naïve', ' ', ' 東京', '!!', ' ']
    """
    letters, numbers, spaces = [], [], list(_ONIG_SPACE)
    for code in range(0x110000):
        category = unicodedata.category(chr(code))
        if category[0] == "L":
            letters.append(code)
        elif category[0] == "N":
            numbers.append(code)
        elif category in ("Zs", "Zl", "Zp"):
            spaces.append(code)
    letter, number, space = _char_class(letters), _char_class(numbers), _char_class(sorted(spaces))
    return re.compile(f"'s|'t|'re|'ve|'m|'ll|'d| ?[{letter}]+| ?[{number}]+| ?[^{space}{letter}{number}]+"
                      f"|[{space}]+(?![^{space}])|[{space}]+")


class ByteLevelBPE:
    """RoBERTa's byte-level BPE tokenizer in pure Python, over `vocab.json` and `merges.txt`.

    GPT-2's pre-tokenizer splits the text into words (letters, numbers or other symbols, each with
    the space before it); each word's UTF-8 bytes, written with `bytes_to_unicode`, are merged by
    the rank of their pair in `merges.txt`. Ids, offsets and word ids are those of Hugging Face's
    `RobertaTokenizerFast` (add_prefix_space=False, trim_offsets=True): a token's offsets leave out
    its leading and trailing spaces, and a token holding part of a character's bytes spans the
    whole character. Special tokens typed in a text ("<mask>") are plain text here, where Hugging
    Face reads them as the special token.

    Args:
        vocabulary: dict {token: id}, or the path of a `vocab.json`. It holds the 256 byte
            characters and `<s>`, `<pad>`, `</s>`, `<unk>` and `<mask>`.
        merges: list of (str, str) pairs, highest priority first, or the path of a `merges.txt`.

    Example:
    >>> bytes_ = bytes_to_unicode().values()
    >>> bpe = ByteLevelBPE({**{t: i for i, t in enumerate(SPECIAL_TOKENS)}, **{c: 5 + i for i, c in
    ...                     enumerate(bytes_)}, "Ġh": 261, "Ġhi": 262}, [("Ġ", "h"), ("Ġh", "i")])
    >>> bpe.tokenize("hi hi!")
    ([109, 110, 262, 38], [(0, 1), (1, 2), (3, 5), (5, 6)], [0, 0, 1, 2])
    >>> bpe.encode(["hi hi!"], ["hi"], max_length=10)["token_ids"].tolist()
    [[0, 109, 110, 262, 38, 2, 2, 109, 110, 2]]
    """

    def __init__(self, vocabulary, merges):
        vocabulary_name = merges_name = "The"
        if isinstance(vocabulary, (str, pathlib.Path)):
            vocabulary_name, vocabulary = f"{vocabulary}: the", _read_json(pathlib.Path(vocabulary))
        if isinstance(merges, (str, pathlib.Path)):
            merges_name, merges = f"{merges}: the", _read_merges(pathlib.Path(merges))
        self.ids = dict(vocabulary)
        missing = [token for token in (*SPECIAL_TOKENS, *bytes_to_unicode().values()) if token not in self.ids]
        if missing:
            raise ValueError(f"{vocabulary_name} vocabulary lacks {len(missing)} tokens of byte-level BPE, e.g. "
                             f"{missing[:5]}: it needs RoBERTa's special tokens and the 256 byte characters.")
        self.ranks = {}
        for rank, (first, second) in enumerate(merges):
            for token in (first, second, first + second):
                if token not in self.ids:
                    raise ValueError(f"{merges_name} merge {rank + 1} ({first} {second}) uses {token!r}, which is "
                                     "not in the vocabulary.")
            self.ranks[first, second] = rank  # a repeated pair takes its last rank, as in Hugging Face
        self.cls, self.sep, self.pad = (self.ids[t] for t in ("<s>", "</s>", "<pad>"))
        self.layout = Layout.roberta(self.cls, self.sep, self.pad)
        self._byte_chars = bytes_to_unicode()
        self._pattern = gpt2_pattern()
        self._cache = {}

    @classmethod
    def from_hf(cls, path):
        """Reads a Hugging Face RoBERTa tokenizer folder: vocab.json and merges.txt, or else tokenizer.json (all
        that `transformers` 5 saves), and tokenizer_config.json if any.

        Example:
        >>> ByteLevelBPE.from_hf("no/such/folder")
        Traceback (most recent call last):
        FileNotFoundError: no/such/folder holds neither vocab.json and merges.txt nor tokenizer.json: a byte-level ...
        """
        path = pathlib.Path(path)
        config_file = path / "tokenizer_config.json"
        config = _read_json(config_file) if config_file.is_file() else {}
        for key, supported in (("add_prefix_space", False), ("trim_offsets", True)):
            if config.get(key, supported) != supported:
                raise ValueError(f"{config_file}: {key}={config[key]} is not supported (only {supported}).")
        if (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
            return cls(path / "vocab.json", path / "merges.txt")
        if not (path / "tokenizer.json").is_file():
            raise FileNotFoundError(f"{path} holds neither vocab.json and merges.txt nor tokenizer.json: a byte-level "
                                    "BPE tokenizer folder needs them.")
        model = _read_json(path / "tokenizer.json").get("model", {})
        if model.get("type") != "BPE" or not isinstance(model.get("vocab"), dict):
            raise ValueError(f"{path / 'tokenizer.json'}: its model is {model.get('type')!r}, not a byte-level BPE.")
        merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in model["merges"]]
        return cls(model["vocab"], merges)

    def tokenize(self, text):
        """(ids, [start, end) char spans, word indices) of one text's pieces, no special tokens.

        A word is one match of GPT-2's pre-tokenizer. A lone surrogate counts as "?".
        """
        if not text.isascii():
            text = text.encode("utf-8", "replace").decode("utf-8")
        ids, spans, word_ids = [], [], []
        for word_index, match in enumerate(self._pattern.finditer(text)):
            word = match.group()
            start = match.start()
            chars = [start + i for i, char in enumerate(word) for _ in char.encode("utf-8")]  # char of each byte
            for piece_id, first, last, leading, trailing in self._pieces(word):
                begin, end = chars[first], chars[last - 1] + 1
                begin = min(begin + leading, end)
                if trailing:
                    end = max(end - trailing, begin)
                ids.append(piece_id)
                spans.append((begin, end))
                word_ids.append(word_index)
        return ids, spans, word_ids

    def _pieces(self, word):
        """[(id, first byte, end byte, leading spaces, trailing spaces)] of one pre-tokenized word."""
        if word in self._cache:
            return self._cache[word]
        parts = _merge([self._byte_chars[b] for b in word.encode("utf-8")], self.ranks)
        pieces, position = [], 0
        for part in parts:
            leading = len(part) - len(part.lstrip("Ġ"))
            pieces.append((self.ids[part], position, position + len(part), leading, len(part) - len(part.rstrip("Ġ"))))
            position += len(part)
        if len(self._cache) < CACHE_SIZE:
            self._cache[word] = pieces
        return pieces

    def encode(self, texts, pairs=None, max_length=128, truncation="longest_first", max_first_length=None):
        """Packs `<s> A </s>` or `<s> A </s></s> B </s>`, padded with `<pad>` to `max_length`, as RoBERTa does.

        Returns int32 arrays like `kbert_core.WordPiece.encode`: `token_ids`, `segment_ids` (all
        0: RoBERTa has no token types), `padding_mask`, `word_ids` (-1 on special tokens and
        padding), `offsets` (rows, max_length, 2) and `truncated` (bool per row). Truncation
        cuts pairs as Hugging Face does (`kept_lengths`).
        """
        second = None if pairs is None else [self.tokenize(pair) for pair in pairs]
        return pack([self.tokenize(text) for text in texts], self.layout, max_length, second, truncation,
                    max_first_length)


def _merge(parts, ranks):
    """Hugging Face's BPE merging: the pair of lowest rank (the leftmost of equals) merges first, then its new
    pairs with its neighbours join the queue; n log n in the word's length.

    Example:
    >>> _merge(list("aaab"), {("a", "a"): 0, ("aa", "b"): 1, ("a", "b"): 2})
    ['aa', 'ab']
    """
    previous, following = list(range(-1, len(parts) - 1)), [*range(1, len(parts)), -1]
    queue = [(ranks[pair], i, "".join(pair)) for i, pair in enumerate(zip(parts, parts[1:])) if pair in ranks]
    heapq.heapify(queue)
    while queue:
        _, i, merged = heapq.heappop(queue)
        j = following[i]
        if not parts[i] or j < 0 or (parts[i], parts[j]) not in ranks or parts[i] + parts[j] != merged:
            continue  # a pair that an earlier merge changed
        parts[i], parts[j] = merged, ""
        following[i] = following[j]
        if following[j] >= 0:
            previous[following[j]] = i
        for left, right in ((previous[i], i), (i, following[i])):
            if left >= 0 and right >= 0 and (parts[left], parts[right]) in ranks:
                heapq.heappush(queue, (ranks[parts[left], parts[right]], left, parts[left] + parts[right]))
    return [part for part in parts if part]


def _read_json(path):
    try:
        return json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error}).") from None


def _read_merges(path):
    """The pairs of a merges.txt: one `first second` a line, after an optional `#version` line."""
    merges = []
    for number, line in enumerate(path.read_text("utf-8").split("\n"), 1):
        if not line or (number == 1 and line.startswith("#version")):
            continue
        pair = line.split(" ")
        if len(pair) != 2:
            raise ValueError(f"{path}, line {number}: {line!r} is not two tokens separated by one space.")
        merges.append(tuple(pair))
    return merges
