import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone, SentenceEncoder
from kbert.layers import mean_pool
from kbert.text import BertTokenizer
from tests.conftest import TINY

WORDS = ["a", "man", "plays", "the", "guitar", "someone", "is", "playing", "music", "."]
TEXTS = ["A man plays the guitar.", "Someone is playing music.", "the man", "music . music"]


@pytest.fixture(scope="module")
def encoder():
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    return SentenceEncoder(BertBackbone(**TINY, dropout=0.0), tokenizer, max_length=TINY["max_sequence_length"])


def one_batch_embeddings(encoder, texts):
    """The encoder's recipe before keyword arguments: all texts in one batch, numpy out."""
    batch = encoder.tokenizer(texts, max_length=encoder.max_length, padding="longest")
    return ops.convert_to_numpy(mean_pool(encoder.backbone(batch)["sequence_output"], batch["padding_mask"]))


def test_lists_give_the_same_unit_vectors_in_any_batch_size(encoder):
    expected = one_batch_embeddings(encoder, TEXTS)
    for batch_size in (3, 32):  # batches padded to 8 and 5 tokens, or all four to 8
        np.testing.assert_allclose(encoder.encode(TEXTS, batch_size=batch_size), expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(expected, axis=-1), 1.0, rtol=1e-6)
    assert encoder.encode([]).shape == (0, TINY["hidden_dim"])


def test_one_string_gives_one_row(encoder):
    sentence = "A man plays the guitar while someone is playing music, a man plays."  # 71 characters
    embedding = encoder.encode(sentence)
    assert embedding.shape == (TINY["hidden_dim"],)
    np.testing.assert_allclose(embedding, one_batch_embeddings(encoder, [sentence])[0], atol=1e-6)


def test_normalize_embeddings_false_skips_the_l2_step(encoder):
    raw = encoder.encode(TEXTS, normalize_embeddings=False)
    norms = np.linalg.norm(raw, axis=-1, keepdims=True)
    assert not np.allclose(norms, 1.0)
    np.testing.assert_allclose(raw / norms, encoder.encode(TEXTS), atol=1e-6)


def test_tensor_output(encoder):
    for kwargs in ({"convert_to_numpy": False}, {"convert_to_tensor": True}):
        embeddings = encoder.encode(TEXTS, **kwargs)
        assert ops.is_tensor(embeddings) and not isinstance(embeddings, np.ndarray)
        assert not getattr(embeddings, "requires_grad", False)  # torch: no graph kept per batch
        np.testing.assert_allclose(ops.convert_to_numpy(embeddings), encoder.encode(TEXTS), atol=1e-6)


def test_progress_bar_counts_batches(encoder, capsys):
    encoder.encode(TEXTS, batch_size=3, show_progress_bar=True)
    assert "2/2" in capsys.readouterr().out
    encoder.encode(TEXTS, batch_size=3)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("bad", [None, 7])
def test_non_strings_raise_naming_the_index(encoder, bad):
    with pytest.raises(TypeError, match=rf"texts\[2\] is {type(bad).__name__}, not str"):
        encoder.encode(["a man", "the guitar", bad], batch_size=2)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        encoder.encode(TEXTS, batch_size=0)


def test_mixed_lengths_in_any_batch_size_match_one_by_one(encoder):
    """Empty and 10,000-word texts (cut to max_length) among short ones, served longest first."""
    texts = ["", "the man " * 5000, "music", "A man plays the guitar.", "", "someone is playing music . " * 3]
    one_by_one = np.stack([one_batch_embeddings(encoder, [text])[0] for text in texts])
    for batch_size in (1, 2, 4, 100):
        np.testing.assert_allclose(encoder.encode(texts, batch_size=batch_size), one_by_one, atol=1e-5)


def test_bfloat16_is_close_to_float32_and_follows_the_weights(encoder):
    expected = encoder.encode(TEXTS)
    cosines = (encoder.encode(TEXTS, dtype="bfloat16") * expected).sum(axis=-1)
    assert cosines.min() > 0.999 and not np.array_equal(encoder.encode(TEXTS, dtype="bfloat16"), expected)
    weights = encoder.backbone.get_weights()
    try:
        encoder.backbone.set_weights([w * 1.5 for w in weights])  # as if trained since
        cosines = (encoder.encode(TEXTS, dtype="bfloat16") * encoder.encode(TEXTS)).sum(axis=-1)
        assert cosines.min() > 0.999
    finally:
        encoder.backbone.set_weights(weights)
    with pytest.raises(ValueError, match="dtype must be one of"):
        encoder.encode(TEXTS, dtype="float16")
