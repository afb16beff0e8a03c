"""Token ids, offsets and word ids identical to Hugging Face on real data and on hard strings."""

import json

import pytest

from tests.text.reference import assert_same_as_hf

HARD_STRINGS = [
    "", " ", "\t\n\r ", "\u00a0\u3000\u2009", "Café naïve façade Ångström Øresund",
    "ÉCOLE ÇA VA? Ünïcödé", "e\u0301 n\u0303 a\u0308\u0323", "ΟΔΟΣ Σίσυφος ς ΣΑΣ", "İstanbul ıi İI",
    "Straße ẞ ﬁ ﬂ ǅ", "日本語のテキスト、中文字符。한국어 텍스트", "𠀋𪚲 𫠠x𫠠 CJK兼容", "emoji 😀👍🏽👨‍👩‍👧 ❤️ 🇫🇷",
    "مرحبا بالعالم، كيف حالك؟", "שלום עולם", "Привет, мир! Ёжик", "नमस्ते दुनिया", "สวัสดีครับ",
    "zero\u200bwidth\u200cjoin\u200dmark\ufeffbom", "ctrl\x00\x01\x07\x1b\x7fchars\x85\x0b\x0c",
    "soft\u00adhyphen lrm\u200e rlm\u200f", "replacement \ufffd char", "private \ue000\U000f0000 use",
    "https://example.com/path?q=1&r=2#frag user@mail.org", "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "é" * 60 + " " + "ж" * 101 + " " + "日" * 150, "supercalifragilisticexpialidocious" * 4,
    "!!!??? ... --- *** ((()))", "$100,000.00 50% #hashtag @mention ~tilde `back` ^caret",
    "don't can't it's O'Neil's", "tab\tseparated\tvalues", "line\nbreaks\r\nhere",
    "x\u2028y\u2029z", "combining\u0300\u0301\u0302 alone \u0301 start", "Ω ω Ꮎ ꭰ ᏸ", "ǈǉǊ ǲ",
    "[CLS [SEP ] ## ##ing [unused1]", "𝐁𝐨𝐥𝐝 𝒮𝒸𝓇𝒾𝓅𝓉 ①②③ ⅫⅢ", "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３",
    "\U0002b820\U0002b91f mid\U0002b830dle",
]


def test_hard_strings(tokenizer, hf_tokenizer):
    assert_same_as_hf(tokenizer, hf_tokenizer, HARD_STRINGS)


def test_special_token_text_is_plain_text(tokenizer, hf_tokenizer):
    """The one known difference: HF reads "[SEP]" typed in a text as the special token."""
    ids = tokenizer("a [SEP] b", padding="longest")["token_ids"][0].tolist()
    assert [tokenizer.id_to_token(i) for i in ids] == [
        "[CLS]", "a", "[", "sep", "]", "b", "[SEP]"]
    assert hf_tokenizer.encode("a [SEP] b").tokens == ["[CLS]", "a", "[SEP]", "b", "[SEP]"]


def test_code_points(tokenizer, hf_tokenizer):
    """Every code point inside and between words, except blocks newer than HF's Unicode data."""
    blocks = [(0, 0x600), (0x1E00, 0x2E43), (0x3000, 0xA800), (0xAC00, 0xD800), (0xE000, 0x10000),
              (0x1F000, 0x1FB00), (0x20000, 0x2C000), (0xE0000, 0xE0200), (0x10FF00, 0x110000)]
    chars = [chr(c) for start, end in blocks for c in range(start, end)]
    assert_same_as_hf(tokenizer, hf_tokenizer, [f"a{c}b {c}" for c in chars])


def _tsv(path, columns):
    lines = path.read_text("utf-8").split("\n")[1:]
    return [line.split("\t")[c] for line in lines if line for c in columns]


def _squad(path, field):
    data = json.loads(path.read_text("utf-8"))["data"]
    paragraphs = [p for article in data for p in article["paragraphs"]]
    if field == "context":
        return [p["context"] for p in paragraphs]
    return [q["question"] for p in paragraphs for q in p["qas"]]


def _conll(path):
    blocks = path.read_text("utf-8").split("\n\n")
    return [" ".join(line.split(" ")[0] for line in b.split("\n") if line) for b in blocks
            if b.strip()]


DATASETS = {
    "sst2": lambda d: _tsv(d / "sst2/train.tsv", [0]),
    "stsb": lambda d: _tsv(d / "stsb/train.tsv", [0, 1]),
    "squad_questions": lambda d: _squad(d / "squad/train-v1.1.json", "question"),
    "squad_contexts": lambda d: _squad(d / "squad/train-v1.1.json", "context"),
    "conll": lambda d: _conll(d / "conll2003/train.txt"),
}


@pytest.mark.parametrize("name", DATASETS)
def test_datasets(tokenizer, hf_tokenizer, data_dir, name):
    texts = DATASETS[name](data_dir)
    assert len(texts) > 1000
    assert_same_as_hf(tokenizer, hf_tokenizer, texts)
