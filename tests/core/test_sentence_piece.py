"""kbert_core.sentence_piece: ALBERT's SentencePiece unigram tokenizer gives the ids, offsets and word ids of
Hugging Face's AlbertTokenizerFast, on models `sentencepiece` trains here on real text with ALBERT's options."""

import json
import pickle

import keras
import numpy as np
import pytest

from kbert_core.sentence_piece import Charsmap, SentencePiece, graphemes, read_model
from tests.core.family_reference import (EXTRA, assert_same_as_hf, assert_tokenize_matches, calls, code_point_texts,
                                         hf_outputs, parity_texts)
from tests.text.test_parity import HARD_STRINGS

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
SPECIALS = [("<pad>", 0.0, 3), ("<unk>", 0.0, 2), ("[CLS]", 0.0, 3), ("[SEP]", 0.0, 3), ("[MASK]", 0.0, 3)]


@pytest.fixture(scope="module")
def albert(data_dir, tmp_path_factory):
    """family -> (folder of spiece.model and the rest, the calls, Hugging Face's rows for each)."""
    pytest.importorskip("transformers", reason="transformers is a test-only dependency")
    pytest.importorskip("sentencepiece", reason="sentencepiece trains the test's model")
    texts = parity_texts(data_dir)
    cases = {"albert": calls(texts), "albert_hub": calls(texts)[:2], "albert_added": calls(texts)[:2],
             "albert_json": calls(texts)[:2], "albert_cased": calls(HARD_STRINGS + EXTRA)[:1]}
    folder = tmp_path_factory.mktemp("albert")
    outputs = hf_outputs("albert", data_dir, folder, cases)
    return {name: (folder / name, cases[name], outputs[name]) for name in cases}


@pytest.mark.parametrize("family", ["albert", "albert_hub", "albert_added", "albert_json", "albert_cased"])
def test_matches_hugging_face(albert, family):
    """Plain spiece.model (ALBERT's user-defined symbols are pieces like the others); with the scores and added
    tokens of a tokenizer.json; with the symbols as added tokens in tokenizer_config.json, cut out of the raw text
    first; that tokenizer saved by `transformers` 5 (tokenizer.json alone); with accents and case kept
    (tokenizer_config.json)."""
    folder, cases, expected = albert[family]
    tokenizer = SentencePiece.from_hf(folder)
    assert len(tokenizer.pieces) == 800 and (tokenizer.pad, tokenizer.unk, tokenizer.cls) == (0, 1, 2)
    for call, rows in zip(cases, expected):
        assert_same_as_hf(tokenizer, call, rows)


@pytest.mark.parametrize("family", ["albert", "albert_cased"])
def test_code_points(albert, family):
    """Every code point of the WordPiece sweep, inside and between words."""
    tokenizers = pytest.importorskip("tokenizers")
    folder, _, _ = albert[family]
    reference = tokenizers.Tokenizer.from_file(str(folder / "hf_tokenizer.json"))
    assert_tokenize_matches(SentencePiece.from_hf(folder), reference, code_point_texts())


def test_special_token_text_is_plain_text(albert):
    """The one known difference, as for WordPiece: Hugging Face reads "[MASK]" typed in a text as the token."""
    tokenizers = pytest.importorskip("tokenizers")
    folder, _, _ = albert["albert"]
    ids = SentencePiece.from_hf(folder).tokenize("a [MASK] <pad> b")[0]
    assert not {0, 2, 3, 4} & set(ids)  # (1 is <unk>: "<" and ">" are unknown)
    reference = tokenizers.Tokenizer.from_file(str(folder / "hf_tokenizer.json"))
    assert {"[MASK]", "<pad>"} <= set(reference.encode("a [MASK] <pad> b").tokens)


def test_read_model_by_hand(albert):
    """The hand-written protobuf reader agrees with the `sentencepiece` package."""
    sentencepiece = pytest.importorskip("sentencepiece")
    folder, _, _ = albert["albert"]
    model = read_model(folder / "spiece.model")
    processor = sentencepiece.SentencePieceProcessor(model_file=str(folder / "spiece.model"))
    assert [piece for piece, _, _ in model["pieces"]] == [processor.id_to_piece(i) for i in range(800)]
    assert np.allclose([score for _, score, _ in model["pieces"]], [processor.get_score(i) for i in range(800)])
    kinds = [kind for _, _, kind in model["pieces"]]
    assert kinds[:13] == [3, 2, 3, 3, 3] + [4] * 8 and set(kinds[13:]) == {1}
    assert (model["model_type"], model["unk_id"], len(model["charsmap"]) > 1000) == (1, 1, True)


def test_charsmap_takes_the_shortest_rule():
    """Hugging Face's rule (not SentencePiece's longest match): the first key that starts the chunk."""
    from kbert.text.double_array import build_double_array

    pool = b"1\0" + b"2\0"
    units = build_double_array([b"a", b"ab"], [0, 2])
    charsmap = Charsmap(len(units.tobytes()).to_bytes(4, "little") + units.tobytes() + pool)
    assert (charsmap.transform("abc"), charsmap.transform("b"), charsmap.transform("ba")) == ("1", None, None)


def test_graphemes_by_hand():
    assert graphemes("\r\na\u0301b\u200d\U0001F3FD") == ["\r\n", "a\u0301", "b\u200d\U0001F3FD"]
    assert graphemes("\u1100\u1161\u11a8\uac00x") == ["\u1100\u1161\u11a8", "\uac00", "x"]
    assert graphemes("\U0001F1EB\U0001F1F7\U0001F1EB") == ["\U0001F1EB\U0001F1F7", "\U0001F1EB"]
    assert graphemes("\u0600x\x07\u0301") == ["\u0600x", "\x07", "\u0301"]


def test_tokenize_by_hand():
    pieces = SPECIALS + [("▁", -2.0, 1), ("▁hi", -3.0, 1), ("s", -4.0, 1), ("h", -6.0, 1), ("i", -6.0, 1),
                         ("(", 0.0, 4)]
    sp = SentencePiece(pieces, b"")
    assert sp.tokenize("His (hi)") == ([6, 7, 5, 10, 8, 9, 1], [(0, 2), (2, 3), (4, 5), (4, 5), (5, 6), (6, 7),
                                                                (7, 8)], [0, 0, 1, 1, 1, 1, 1])  # "(" in the word
    cut = SentencePiece(pieces, b"", split_pieces=["("])  # an added token: cut out of the raw text first
    assert cut.tokenize("His (hi)") == ([6, 7, 10, 6, 1], [(0, 2), (2, 3), (4, 5), (5, 7), (7, 8)], [0, 0, 1, 2, 2])
    assert sp.tokenize("ΧΨ hi") == ([5, 1, 6], [(0, 1), (0, 2), (3, 5)], [0, 0, 1])  # unknowns fuse
    assert sp.normalize("``Ça''") == ('"ca"', [(1, 2), (2, 3), (3, 4), (5, 6)])
    assert pickle.loads(pickle.dumps(cut)).tokenize("His (hi)") == cut.tokenize("His (hi)")
    out = sp.encode(["hi", ""], ["hi hi", "s"], max_length=6)
    assert out["token_ids"].tolist() == [[2, 6, 3, 6, 6, 3], [2, 3, 5, 7, 3, 0]]
    assert out["segment_ids"].tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 0]]


def test_bad_files(tmp_path, albert):
    with pytest.raises(FileNotFoundError, match="holds neither spiece.model nor tokenizer.json"):
        SentencePiece.from_hf(tmp_path)
    (tmp_path / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {}}}')
    with pytest.raises(ValueError, match="tokenizer.json: model type 'BPE' is not Unigram"):
        SentencePiece.from_hf(tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    (tmp_path / "spiece.model").write_bytes(b"\x0a\x05\x0a\x09")
    with pytest.raises(ValueError, match="spiece.model is not a SentencePiece model"):
        SentencePiece.from_hf(tmp_path)
    (tmp_path / "spiece.model").write_bytes(b"\x0a\x05\x0a\x03<s>\x12\x02\x18\x02")  # one piece, model_type BPE
    with pytest.raises(ValueError, match="model type 2 is not unigram"):
        SentencePiece.from_hf(tmp_path)
    with pytest.raises(ValueError, match=r"lacks ALBERT's special pieces \['<unk>', '\[CLS\]'"):
        SentencePiece([("<pad>", 0.0, 3)], b"")
    with pytest.raises(ValueError, match="<unk> has id 0"):
        SentencePiece([SPECIALS[1], SPECIALS[0], *SPECIALS[2:]], b"")
    with pytest.raises(ValueError, match=r"added tokens \['zz'\] are not pieces of the SentencePiece model"):
        SentencePiece(SPECIALS, b"", split_pieces=["zz"])
    folder, _, _ = albert["albert"]
    (tmp_path / "spiece.model").write_bytes((folder / "spiece.model").read_bytes())
    config = json.loads((folder / "hf_tokenizer.json").read_text("utf-8"))
    config["model"]["vocab"] = config["model"]["vocab"][:-1]
    (tmp_path / "tokenizer.json").write_text(json.dumps(config), "utf-8")
    with pytest.raises(ValueError, match="tokenizer.json: its 799 pieces are not spiece.model's 800"):
        SentencePiece.from_hf(tmp_path)
