import string

import keras
import pytest

from tests.conftest import APPS, app_module

# Export runs in a TensorFlow-backend process (apps/export.py switches to one): the export
# tests skip under the other backends.
TENSORFLOW_ONLY = pytest.mark.skipif(keras.config.backend() != "tensorflow",
                                     reason="export runs under the TensorFlow backend only")
EDGE_PREDICT = APPS / "edge_predict.py"

WORDS = ["the", "film", "good", "bad", "paris", "angela", "merkel", "visited", "who", "what",
         "is", "was", "un", "##aff", "##able", "cafe", "naive"]
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + list(string.ascii_lowercase)
         + [f"##{c}" for c in string.ascii_lowercase] + list(string.digits) + list(string.punctuation))

TEXTS = ["The film was good!", "", "   ", "Angela Merkel visited Paris.", "unaffable café, naïve",
         "a bad film " * 30, "x" * 150 + " good", "日本 émoji 😀 text\u200b"]
# Batches without a single wordpiece: every row is [CLS] [SEP] ("\u200b" is deleted).
EMPTY_BATCHES = ([""], ["", "  ", "\u200b"])


@pytest.fixture(scope="session")
def tokenizer():
    from kbert.text import BertTokenizer

    return BertTokenizer(VOCAB)


def tiny_backbone():
    from kbert import BertBackbone

    keras.utils.set_random_seed(1)
    return BertBackbone.from_preset("bert_tiny", vocabulary_size=len(VOCAB), max_sequence_length=64)


def edge_module():
    """apps/edge_predict.py, imported from its path."""
    return app_module("edge_predict")
