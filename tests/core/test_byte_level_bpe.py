"""kbert_core.byte_level_bpe: RoBERTa's byte-level BPE gives the ids, offsets and word ids of Hugging Face's
RobertaTokenizerFast, on a tokenizer `tokenizers` trains here on real text."""

import pickle
import unicodedata

import keras
import pytest

from kbert_core.byte_level_bpe import SPECIAL_TOKENS, ByteLevelBPE, bytes_to_unicode, gpt2_pattern
from tests.core.family_reference import (assert_same_as_hf, assert_tokenize_matches, calls, code_point_texts,
                                         hf_outputs, parity_texts)

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@pytest.fixture(scope="module")
def roberta(data_dir, tmp_path_factory):
    """(folder of vocab.json and merges.txt, the calls, Hugging Face's rows for each)."""
    pytest.importorskip("transformers", reason="transformers is a test-only dependency")
    cases = calls(parity_texts(data_dir))
    folder = tmp_path_factory.mktemp("roberta")
    return folder / "roberta", cases, hf_outputs("roberta", data_dir, folder, {"roberta": cases})["roberta"]


def test_matches_hugging_face(roberta):
    folder, cases, expected = roberta
    tokenizer = ByteLevelBPE.from_hf(folder)
    assert len(tokenizer.ids) == 1000 and tokenizer.pad == 1
    for call, rows in zip(cases, expected):
        assert_same_as_hf(tokenizer, call, rows)


def test_code_points(roberta):
    """Every code point that Python's Unicode data knows, inside and between words. (Hugging Face's regular
    expressions know newer letters, which `unicodedata` calls unassigned, and group them otherwise.)"""
    tokenizers = pytest.importorskip("tokenizers")
    folder, _, _ = roberta
    reference = tokenizers.Tokenizer.from_file(str(folder / "hf_tokenizer.json"))
    texts = code_point_texts(lambda code: unicodedata.category(chr(code)) != "Cn")
    assert_tokenize_matches(ByteLevelBPE.from_hf(folder), reference, texts)


def test_special_token_text_is_plain_text(roberta):
    """The one known difference, as for WordPiece: Hugging Face reads "<mask>" typed in a text as the token."""
    tokenizers = pytest.importorskip("tokenizers")
    folder, _, _ = roberta
    tokenizer = ByteLevelBPE.from_hf(folder)
    ids = tokenizer.tokenize("a <mask> b")[0]
    assert tokenizer.ids["<mask>"] not in ids and len(ids) > 3
    reference = tokenizers.Tokenizer.from_file(str(folder / "hf_tokenizer.json"))
    assert "<mask>" in reference.encode("a <mask> b").tokens


def tiny(merges=(("Ġ", "h"), ("Ġh", "i"), ("h", "i"))):
    vocabulary = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for token in [*bytes_to_unicode().values(), "Ġh", "Ġhi", "hi"]:
        vocabulary[token] = len(vocabulary)
    return ByteLevelBPE(vocabulary, list(merges))


def test_pre_tokenizer_by_hand():
    """GPT-2's pattern: contractions (lower case only), a space joins the next word, the last of several spaces too."""
    assert gpt2_pattern().findall("I'm we'LL x  y\t\n z 3.5é") == [
        "I", "'m", " we", "'", "LL", " x", " ", " y", "\t\n", " z", " 3", ".", "5", "é"]


def test_merges_by_rank_and_offsets_by_hand():
    bpe = tiny()
    ids, spans, words = bpe.tokenize(" hi hi  é")
    assert [bpe.ids["Ġhi"]] * 2 == ids[:2] and spans[:2] == [(1, 3), (4, 6)]  # spans leave the space out
    assert spans[2:] == [(7, 7), (8, 8), (8, 9), (8, 9)] and words == [0, 1, 2, 3, 3, 3]  # both bytes of é: (8, 9)
    assert tiny([("h", "i"), ("Ġ", "h")]).tokenize(" hi")[0] == [bpe.ids["Ġ"], bpe.ids["hi"]]  # the rank decides


def test_encode_packs_as_roberta():
    bpe = tiny()
    out = bpe.encode(["hi hi", ""], ["hi", "hi"], max_length=9)
    hi, s, e = bpe.ids["hi"], bpe.cls, bpe.sep
    assert out["token_ids"].tolist() == [[s, hi, bpe.ids["Ġhi"], e, e, hi, e, 1, 1], [s, e, e, hi, e, 1, 1, 1, 1]]
    assert not out["segment_ids"].any() and out["word_ids"][0].tolist() == [-1, 0, 1, -1, -1, 0, -1, -1, -1]
    assert bpe.encode(["hi " * 9], max_length=4)["truncated"].tolist() == [True]
    assert pickle.loads(pickle.dumps(bpe)).tokenize(" hi hi") == bpe.tokenize(" hi hi")


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="The vocabulary lacks 256 tokens of byte-level BPE"):
        ByteLevelBPE({token: i for i, token in enumerate(SPECIAL_TOKENS)}, [])
    with pytest.raises(ValueError, match=r"The merge 1 \(Ġ x\) uses 'Ġx', which is not in the vocabulary"):
        tiny([("Ġ", "x")])
    (tmp_path / "vocab.json").write_text("{")
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ h i\n")
    with pytest.raises(ValueError, match="vocab.json: not JSON"):
        ByteLevelBPE.from_hf(tmp_path)
    (tmp_path / "vocab.json").write_text("{}")
    with pytest.raises(ValueError, match="merges.txt, line 2: 'Ġ h i' is not two tokens"):
        ByteLevelBPE.from_hf(tmp_path)
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ h\n")
    with pytest.raises(ValueError, match="vocab.json: the vocabulary lacks 261 tokens"):
        ByteLevelBPE.from_hf(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text('{"add_prefix_space": true}')
    with pytest.raises(ValueError, match="add_prefix_space=True is not supported"):
        ByteLevelBPE.from_hf(tmp_path)
