"""What the RoBERTa and ALBERT tokenizer tests share: their texts, Hugging Face's outputs on them (computed by
`hf_tokenizers_reference.py` in a process of its own) and the comparison."""

import json

from tests.conftest import TESTS, run_python
from tests.core.test_wordpiece import TRICKY
from tests.text.test_parity import DATASETS, HARD_STRINGS

CORPUS = "imdb/unsup.txt"  # its first 1000 reviews train the tokenizers; texts come from elsewhere in it
EXTRA = [
    "Hello (world). ``Quoted'' and ``` '''", 'She said "no" - twice – for £5 or €6.', "1,000,000 and 9, 10, 11,",
    "don't DON'T we'll I'M they've she'd 'S 's", "  leading and trailing  ", "a  b   c\n\nd\r\ne", "\u2581x a\u2581b",
    "\x07bell first", "\u200bzero width first", "word\u00a0nbsp\u3000ideographic", "x" * 300, "😀" * 5,
]
# The code points of tests/text/test_parity.py's sweep, inside and between words.
BLOCKS = [(0, 0x600), (0x1E00, 0x2E43), (0x3000, 0xA800), (0xAC00, 0xD800), (0xE000, 0x10000), (0x1F000, 0x1FB00),
          (0x20000, 0x2C000), (0xE0000, 0xE0200), (0x10FF00, 0x110000)]


def parity_texts(data_dir):
    """The hard strings of the WordPiece tests and a few of their own, then real lines of each data set."""
    lines = [line.strip() for line in (data_dir / CORPUS).read_text("utf-8").split("\n")[40000:41000] if line.strip()]
    real = lines[:150]
    for name, count in (("sst2", 150), ("squad_questions", 100), ("squad_contexts", 60), ("conll", 100)):
        real += DATASETS[name](data_dir)[:count]
    return HARD_STRINGS + TRICKY + EXTRA + real


def calls(texts):
    """Hugging Face calls: every text alone and in pairs, then truncated pairs (the longer first, or QA's second)."""
    hard = HARD_STRINGS + TRICKY + EXTRA
    short = [text for text in texts[len(hard):] if 0 < len(text) < 40]
    long = [text for text in texts[len(hard):] if len(text) > 200]
    real = [text for text in texts[len(hard):] if len(text) < 400]  # Hugging Face cuts long texts slowly
    pairs = list(zip(real[::2], real[1::2]))
    return [
        {"texts": texts, "pairs": None, "max_length": None, "truncation": None},
        {"texts": hard, "pairs": [text[::-1] for text in hard], "max_length": None, "truncation": None},
        *({"texts": [a for a, _ in pairs], "pairs": [b for _, b in pairs], "max_length": n,
           "truncation": "longest_first"} for n in (16, 64)),
        {"texts": hard, "pairs": None, "max_length": 16, "truncation": "longest_first"},
        {"texts": short[:50], "pairs": long[:50], "max_length": 48, "truncation": "only_second"},
    ]


def hf_outputs(family, data_dir, folder, cases):
    """Trains the family's tokenizers on the corpus into subfolders of `folder` (see hf_tokenizers_reference.py);
    returns Hugging Face's rows for each call of `cases` ({subfolder name: calls})."""
    (folder / "cases.json").write_text(json.dumps(cases), "utf-8")
    run_python(TESTS / "core" / "hf_tokenizers_reference.py", family, data_dir / CORPUS, folder, folder / "cases.json",
               folder / "out.json")
    return json.loads((folder / "out.json").read_text("utf-8"))


def assert_same_as_hf(tokenizer, call, expected):
    """kbert's `encode` on one call gives Hugging Face's ids, offsets, word ids and token types, and pads."""
    longest = max(len(row["ids"]) for row in expected)
    max_length = call["max_length"] or longest + 1
    got = tokenizer.encode(call["texts"], call["pairs"], max_length=max_length,
                           truncation=call["truncation"] or "longest_first")
    lengths = got["padding_mask"].sum(axis=1)
    for i, row in enumerate(expected):
        n = lengths[i]
        where = f"{call['texts'][i][:60]!r} ({call['max_length']}, {call['truncation']})"
        assert got["token_ids"][i, :n].tolist() == row["ids"], where
        assert got["offsets"][i, :n].tolist() == row["offsets"], where
        assert got["word_ids"][i, :n].tolist() == row["word_ids"], where
        assert got["segment_ids"][i, :n].tolist() == row["type_ids"], where
        assert (got["token_ids"][i, n:] == tokenizer.pad).all() and not got["offsets"][i, n:].any()
        segments = [call["texts"][i]] + ([call["pairs"][i]] if call["pairs"] else [])
        specials = tokenizer.encode([""], [""] if call["pairs"] else None, max_length=8)["padding_mask"].sum()
        assert got["truncated"][i] == (sum(len(tokenizer.tokenize(t)[0]) for t in segments) + specials > max_length)


def code_point_texts(keep=lambda code: True):
    """"a{c}b {c}" for each code point of `BLOCKS` that `keep` keeps."""
    return [f"a{chr(c)}b {chr(c)}" for start, end in BLOCKS for c in range(start, end) if keep(c)]


def assert_tokenize_matches(tokenizer, reference, texts):
    """`tokenize` gives the ids, offsets and word ids of Hugging Face's `tokenizers.Tokenizer` on every text."""
    bad = [text for text, expected in zip(texts, reference.encode_batch(texts, add_special_tokens=False))
           if tokenizer.tokenize(text) != (expected.ids, expected.offsets, expected.word_ids)]
    assert not bad, f"{len(bad)}/{len(texts)} differ, e.g. {[f'U+{ord(t[1]):04X}' for t in bad[:10]]}"
