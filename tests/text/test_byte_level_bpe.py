"""kbert.text.byte_level_bpe: RoBERTa's tokenizer with BertTokenizer's interface gives kbert_core.ByteLevelBPE's ids
and offsets (held to Hugging Face's by tests/core/test_byte_level_bpe.py, and through a task by
tests/tasks/test_family_tasks.py), in its call and in tf.data, and saves, configures and pickles to itself."""

import itertools
import json
import pickle

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.text import ByteLevelBPETokenizer
from kbert_core import ByteLevelBPE

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

TEXTS = ["A gripping film.", "It's  naïve, 東京 😀!", "", "  ", "x" * 90, "don't stop"]
PAIRS = ["yes", "no no no", "", "a", "b", "It's"]


@pytest.fixture(scope="module")
def tokenizer(data_dir, tmp_path_factory):
    """A byte-level BPE of 400 tokens trained by `tokenizers` on SST-2 lines, read from its files."""
    tokenizers = pytest.importorskip("tokenizers")
    lines = [line.split("\t")[0] for line in itertools.islice(open(data_dir / "sst2" / "train.tsv"), 1, 400)]
    trainer = tokenizers.ByteLevelBPETokenizer()
    trainer.train_from_iterator(lines, vocab_size=400, min_frequency=2, show_progress=False,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    folder = tmp_path_factory.mktemp("roberta_tokenizer")
    trainer.save_model(str(folder))
    return ByteLevelBPETokenizer.from_hf(folder)


def test_call_packs_the_core_tokenizers_rows(tokenizer):
    core = tokenizer.byte_level_bpe
    out = tokenizer(TEXTS, PAIRS, max_length=16, return_offsets=True, return_lengths=True)
    expected = core.encode(TEXTS, PAIRS, max_length=16)
    for key in ("token_ids", "segment_ids", "padding_mask", "offsets", "word_ids"):
        np.testing.assert_array_equal(out[key], expected[key], err_msg=key)
    assert not out["segment_ids"].any()  # RoBERTa: no token types
    assert out["token_ids"][2, :4].tolist() == [0, 2, 2, 2]  # <s> </s></s> </s> around two empty texts
    lengths = [[len(core.tokenize(a)[0]), len(core.tokenize(b)[0])] for a, b in zip(TEXTS, PAIRS)]
    assert out["segment_lengths"].tolist() == lengths
    assert out["lengths"].tolist() == [a + b + 4 for a, b in lengths]


def test_longest_padding_and_multiples(tokenizer):
    out = tokenizer(TEXTS[:2], max_length=64, padding="longest")
    assert out["token_ids"].shape[1] == out["padding_mask"].sum(axis=1).max()
    assert (out["token_ids"][out["padding_mask"] == 0] == tokenizer.pad_token_id).all()
    rounded = tokenizer(TEXTS[:2], max_length=64, padding="longest", pad_to_multiple_of=8)
    assert rounded["token_ids"].shape[1] % 8 == 0
    np.testing.assert_array_equal(rounded["token_ids"][:, :out["token_ids"].shape[1]], out["token_ids"])
    assert tokenizer(["x" * 90], max_length=10, padding="longest")["token_ids"].shape == (1, 10)


def test_tf_data_encode_gives_the_call(tokenizer):
    data = tf.data.Dataset.from_tensor_slices((TEXTS, PAIRS)).batch(3)
    batches = list(data.map(lambda a, b: tokenizer.encode(a, b, max_length=24, padding="longest",
                                                          return_offsets=True, pad_to_multiple_of=8)))
    for i, batch in enumerate(batches):
        expected = tokenizer(TEXTS[3 * i:3 * i + 3], PAIRS[3 * i:3 * i + 3], max_length=24, padding="longest",
                             return_offsets=True, pad_to_multiple_of=8)
        assert set(batch) == set(expected)
        for key, value in expected.items():
            np.testing.assert_array_equal(batch[key].numpy(), value, err_msg=key)
    single = tokenizer.encode(tf.constant("A gripping film."), max_length=8)
    assert single["token_ids"].numpy().tolist() == tokenizer("A gripping film.", max_length=8)["token_ids"][0].tolist()


def test_save_config_and_pickle_give_the_same_tokenizer(tokenizer, tmp_path):
    tokenizer.save(tmp_path)
    again = [ByteLevelBPETokenizer.from_hf(tmp_path), ByteLevelBPETokenizer.from_config(tokenizer.get_config()),
             pickle.loads(pickle.dumps(tokenizer))]
    expected = tokenizer(TEXTS, PAIRS, max_length=32, return_offsets=True)
    for other in again:
        assert other.get_config() == tokenizer.get_config()
        for key, value in other(TEXTS, PAIRS, max_length=32, return_offsets=True).items():
            np.testing.assert_array_equal(value, expected[key])
    assert json.loads(json.dumps(tokenizer.get_config()))["kind"] == "byte_level_bpe"
    assert (tokenizer.vocabulary_size, tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id,
            tokenizer.mask_token_id) == (400, 1, 0, 2, 4)


def test_bad_input():
    with pytest.raises(ValueError, match="lacks 260 tokens of byte-level BPE"):
        ByteLevelBPETokenizer(ByteLevelBPE({"<s>": 0}, []))
    with pytest.raises(FileNotFoundError, match="holds neither vocab.json and merges.txt nor tokenizer.json"):
        ByteLevelBPETokenizer("no/such/folder")
