import pathlib

import keras
import pytest

from kbert.text import SPECIAL_TOKENS, BertTokenizer, train_wordpiece_vocabulary

CORPUS = ["The Quick brown fox jumps over the lazy dog.", "Naïve café owners re-open shops!",
          "Tokenizers split words into pieces; pieces make words."] * 30


def test_special_tokens_first_and_text_covered(tmp_path):
    (tmp_path / "corpus.txt").write_text("\n".join(CORPUS), "utf-8")
    for source in (CORPUS, [pathlib.Path(tmp_path / "corpus.txt")]):
        tokens = train_wordpiece_vocabulary(source, vocabulary_size=120)
        assert tuple(tokens[: len(SPECIAL_TOKENS)]) == SPECIAL_TOKENS
        assert len(tokens) <= 120 and len(set(tokens)) == len(tokens)
        assert "naive" in tokens or "##ive" in tokens  # accents stripped, lower-cased
        tokenizer = BertTokenizer(tokens)
        ids = tokenizer(CORPUS[:3], max_length=32)["token_ids"]
        assert not (ids == tokenizer.unk_token_id).any()


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
def test_no_text_is_a_clear_error_not_a_bare_stop_iteration(tmp_path):
    """Issue 26: an empty training split reached tensorflow-text's learner, which raised StopIteration."""
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    for source, message in (([], "No lines"), (["", "  "], "2 blank lines"), ([blank], "blank.txt")):
        with pytest.raises(ValueError, match=message):
            train_wordpiece_vocabulary(source, vocabulary_size=50)
