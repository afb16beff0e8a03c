"""kbert.text.bert_normalizer: BERT's clean-up, accent stripping and lower-casing, code point by code point."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text import bert_normalizer
from kbert.text.bert_normalizer import fast_bert_normalizer_model, normalize_code_point

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

# What BERT's BasicTokenizer (google-research/bert, tokenization.py; Hugging Face's BertNormalizer)
# makes of one character: _clean_text deletes U+0000, U+FFFD and control characters and turns
# whitespace into " "; _run_strip_accents takes the NFD form without its Mn marks; then lower().
UNCASED = {
    "a": "a", "A": "a", "É": "e", "ñ": "n", "Ö": "o", "\u0130": "i",  # İ: NFD I + U+0307
    "\u212b": "a",  # the Angstrom sign: NFD is A + ring above
    "\u01c5": "\u01c6",  # ǅ: only a compatibility decomposition, so NFD keeps it; lower() gives ǆ
    "\u0301": "",  # a combining accent alone (Mn) goes too
    "Σ": "σ", "ß": "ß",
    "\ufb01": "\ufb01", "\u2463": "\u2463",  # ﬁ and ④: NFD leaves them (NFKC would make "fi", "4")
    "\u00bd": "\u00bd",  # ½ likewise
    "\x00": "", "\ufffd": "", "\x01": "", "\x7f": "", "\x9f": "",  # Cc
    "\u200b": "", "\u00ad": "", "\ufeff": "", "\u200d": "",  # Cf: zero-width space, soft hyphen, BOM, ZWJ
    "\ue000": "", "\U000f0000": "",  # Co: private use
    "\t": " ", "\n": " ", "\r": " ", " ": " ", "\u00a0": " ", "\u3000": " ", "\u2003": " ",  # whitespace
    "中": "中", "\u3400": "\u3400", "\U0002b81f": "\U0002b81f",  # CJK ideographs stay (the tokenizer splits them)
}


@once
@pytest.mark.parametrize("char, expected", UNCASED.items(), ids=[f"U+{ord(c):04X}" for c in UNCASED])
def test_uncased_code_points(char, expected):
    assert normalize_code_point(ord(char)) == expected


@once
def test_cased_keeps_accents_and_case_but_still_cleans():
    cased = {"É": "É", "A": "A", "\u0301": "\u0301", "\u212b": "\u212b", "\x00": "", "\u200b": "", "\ue000": "",
             "\u00a0": " ", "\t": " "}
    assert {char: normalize_code_point(ord(char), lowercase=False) for char in cased} == cased


@once
def test_ideographs_hugging_face_does_not_split_become_an_unknown_letter():
    # HF's CJK ranges read 0x2B920 where 0x2B820 is meant: U+2B820..U+2B91F stay inside words there.
    for code_point in (0x2B820, 0x2B8A0, 0x2B91F):
        assert normalize_code_point(code_point) == "\ue000"
        assert normalize_code_point(code_point, lowercase=False) == "\ue000"
    assert normalize_code_point(0x2B920) == chr(0x2B920)


@once
def test_the_op_applies_the_table_with_offsets():
    model = tf.constant(np.frombuffer(fast_bert_normalizer_model(), np.uint8))
    normalizer = tf_text.FastBertNormalizer(model_buffer=model)
    text = "Ça\x00va \ufb01 \u00a0X\u200bY É中\U0002b820"
    expected = "".join(normalize_code_point(ord(c)) for c in text)
    assert expected == "cava \ufb01  xy e中\ue000"  # by hand, from the table above
    normalized, offsets = normalizer.normalize_with_offsets([text, "", "\x00"])
    assert [t.decode() for t in normalized.numpy()] == [expected, "", ""]
    # Each normalized byte maps to the original byte it came from: "c" from "Ç" (2 bytes), "a", then "v"
    # after the deleted U+0000; the end maps to the end.
    assert offsets[0].numpy()[:3].tolist() == [0, 2, 4]
    assert offsets[0].numpy()[-1] == len(text.encode())


@pytest.fixture
def counted_builds(monkeypatch, tmp_path):
    """The lowercase flags the model is built for, with a stand-in builder, the cache in `tmp_path / "cache"`,
    and the process's copies forgotten before and after."""
    builds = []
    monkeypatch.setenv("KBERT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(bert_normalizer, "_built_model", lambda lowercase: builds.append(lowercase) or
                        f"model {lowercase}".encode())
    fast_bert_normalizer_model.cache_clear()
    yield builds
    fast_bert_normalizer_model.cache_clear()


@once
def test_the_model_is_built_once_kept_on_disk_and_rebuilt_when_damaged(counted_builds, tmp_path):
    def again(lowercase=True):
        fast_bert_normalizer_model.cache_clear()  # as a new process would
        return fast_bert_normalizer_model(lowercase)

    assert again() == b"model True" and counted_builds == [True]
    assert again() == b"model True" and counted_builds == [True]  # read back, not built
    assert again(False) == b"model False" and counted_builds == [True, False]
    kept = sorted((tmp_path / "cache").iterdir())
    assert len(kept) == 2 and all(path.name.startswith("bert_normalizer-") for path in kept)  # no temporaries left
    path = bert_normalizer._cache_file(True)
    path.write_bytes(path.read_bytes()[:-1] + b"X")  # damaged
    assert again() == b"model True" and counted_builds == [True, False, True]
    assert again() == b"model True" and len(counted_builds) == 3  # the rebuilt one was kept


@once
def test_the_kept_model_is_not_read_under_other_unicode_tables(counted_builds, monkeypatch):
    fast_bert_normalizer_model()
    monkeypatch.setattr(bert_normalizer.unicodedata, "unidata_version", "0.0.0")
    fast_bert_normalizer_model.cache_clear()
    fast_bert_normalizer_model()
    assert counted_builds == [True, True]


@once
def test_a_cache_folder_that_cannot_be_written_only_costs_the_building(counted_builds, monkeypatch, tmp_path):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("KBERT_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    assert fast_bert_normalizer_model() == b"model True"
