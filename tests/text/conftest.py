import pytest

from kbert.text import BertTokenizer


@pytest.fixture(scope="session")
def tokenizer(minilm_dir):
    return BertTokenizer.from_hf(minilm_dir)


@pytest.fixture(scope="session")
def hf_tokenizer(minilm_dir):
    """The independent reference: Hugging Face's Rust tokenizer (no torch, no transformers)."""
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    return reference
