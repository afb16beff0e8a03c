"""kbert.text.hf_tokenizers: a folder's tokenizer by its files and its family, and a tokenizer by its saved config.
(Against Hugging Face's tokenizers of real family folders: tests/tasks/test_family_tasks.py.)"""

import keras
import pytest

from kbert.text import BertTokenizer, ByteLevelBPETokenizer, SentencePieceTokenizer
from kbert.text.hf_tokenizers import load_hf_tokenizer, tokenizer_files, tokenizer_from_config, tokenizer_kind
from kbert_core import ByteLevelBPE, SentencePiece
from kbert_core.byte_level_bpe import SPECIAL_TOKENS, bytes_to_unicode

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

PIECES = [("<pad>", 0, 3), ("<unk>", 0, 2), ("[CLS]", 0, 3), ("[SEP]", 0, 3), ("[MASK]", 0, 3), ("▁hi", -3, 1),
          ("(", 0, 4)]


@pytest.fixture()
def tokenizers():
    return {"wordpiece": BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"]),
            "sentence_piece": SentencePieceTokenizer(SentencePiece(PIECES, b"")),
            "byte_level_bpe": ByteLevelBPETokenizer(ByteLevelBPE(
                {t: i for i, t in enumerate([*SPECIAL_TOKENS, *bytes_to_unicode().values(), "Ġh", "Ġhi"])},
                [("Ġ", "h"), ("Ġh", "i")]))}


def test_each_tokenizer_saves_to_the_files_its_kind_is_read_from(tokenizers, tmp_path):
    for kind, tokenizer in tokenizers.items():
        tokenizer.save(tmp_path / kind)
        assert tokenizer_kind(tmp_path / kind) == kind
        assert sorted(path.name for path in (tmp_path / kind).iterdir()) == sorted(tokenizer_files(tokenizer))
        again = load_hf_tokenizer(tmp_path / kind)
        assert type(again) is type(tokenizer) and again.get_config() == tokenizer.get_config()
        assert tokenizer_from_config(tokenizer.get_config()).get_config() == tokenizer.get_config()
        texts = ["hi (hi", "Hi"]
        assert again(texts, texts, max_length=12)["token_ids"].tolist() == tokenizer(texts, texts, max_length=12)[
            "token_ids"].tolist()


def test_the_family_decides_and_its_files_must_be_there(tokenizers, tmp_path):
    for kind, tokenizer in tokenizers.items():
        tokenizer.save(tmp_path)  # one folder holding all three
    assert [tokenizer_kind(tmp_path, family) for family in ("roberta", "albert", "electra", "distilbert", "bert")] == [
        "byte_level_bpe", "sentence_piece", "wordpiece", "wordpiece", "wordpiece"]
    tokenizers["wordpiece"].save(tmp_path / "bert")
    with pytest.raises(FileNotFoundError, match=r"bert has no spiece.model: a albert model's tokenizer "
                                                r"\(sentence_piece\) reads spiece.model"):
        tokenizer_kind(tmp_path / "bert", "albert")
    with pytest.raises(FileNotFoundError, match="holds no tokenizer: expected vocab.txt"):
        tokenizer_kind(tmp_path / "none")


def test_a_config_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="Unknown tokenizer kind 'bpe'"):
        tokenizer_from_config({"kind": "bpe"})
