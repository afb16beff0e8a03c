import numpy as np
import pytest

from kbert import BertBackbone
from kbert.saving import BACKBONE_FILE
from tests.conftest import TINY

WORDS = ["good", "great", "fun", "fine", "bad", "dull", "awful", "boring", "a", "film", "man", "plays",
         "nobody", "someone", "sleeps", "the", "is", "not", "very", "and"]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS,
              *[f"w{i}" for i in range(TINY["vocabulary_size"] - 5 - len(WORDS))]]


@pytest.fixture(scope="session")
def tiny_init(tmp_path_factory):
    """A kbert backbone folder (as apps/pretrain.py writes) holding a tiny random model."""
    folder = tmp_path_factory.mktemp("tiny_init")
    BertBackbone(**TINY).save(folder / BACKBONE_FILE)
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY))
    return folder


def write_sentiment_tsv(path, rows=48, seed=0):
    """Separable toy sentiment data: positive words -> 1, negative words -> 0."""
    rng = np.random.default_rng(seed)
    lines = ["sentence\tlabel"]
    for i in range(rows):
        label = i % 2
        words = rng.choice(WORDS[:4] if label else WORDS[4:8], size=rng.integers(1, 9))
        lines.append(" ".join(["a", "film", *words]) + f"\t{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_nli_tsv(path, rows=30, regression=False):
    lines = ["sentence1\tsentence2\tlabel"]
    labels = ["entailment", "neutral", "contradiction"]
    for i in range(rows):
        label = f"{(i % 6) * 1.0:.3f}" if regression else labels[i % 3]
        lines.append(f"a man plays {'very ' * (i % 4)}\t{['someone plays', 'a man sleeps', 'nobody plays'][i % 3]}\t{label}")
    path.write_text("\n".join(lines) + "\n")
    return path
