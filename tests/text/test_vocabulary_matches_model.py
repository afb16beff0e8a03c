"""A vocabulary of another size than the model's token embedding is refused where the two meet.

A longer one gives ids past the embedding (NaN on JAX, a GatherV2 error on TensorFlow), a
shorter one wrong tokens without a word.
"""

import re
import shutil

import keras
import pytest

from kbert import BertBackbone
from kbert.tasks import BertClassifier, BertSentenceEncoder, BertTextClassifierPreprocessor
from kbert.text import BertTokenizer
from kbert.saving import load_run
from kbert.training import write_run_folder

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(27)]
SIZES = [len(VOCAB) - 2, len(VOCAB) + 2]  # shorter, longer


def tokens(size):
    return (VOCAB + ["extra1", "extra2"])[:size]


def classifier(preprocessor=None):
    keras.utils.set_random_seed(1)
    backbone = BertBackbone.from_preset("bert_tiny", vocabulary_size=len(VOCAB), max_sequence_length=16)
    return BertClassifier(backbone, 2, preprocessor=preprocessor)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run folder whose model.keras has no preprocessor: its vocab.txt is the model's vocabulary."""
    folder = tmp_path_factory.mktemp("runs") / "sst"
    write_run_folder(folder, classifier(), BertTokenizer(VOCAB), {"task": "sentiment", "max_length": 8},
                     {"loss": [1.0]})
    return folder


@pytest.mark.parametrize("size", SIZES)
def test_a_task_refuses_a_preprocessor_of_another_vocabulary_size(run, size):
    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(tokens(size)), sequence_length=8)
    message = f"the preprocessor's tokenizer has {size} tokens but the model's vocabulary_size is {len(VOCAB)}"
    with pytest.raises(ValueError, match=message):
        classifier(preprocessor)
    with pytest.raises(ValueError, match=message):
        BertClassifier.from_preset(run, preprocessor=preprocessor)


@pytest.mark.parametrize("size", SIZES)
def test_a_run_folder_whose_vocab_txt_has_another_size_is_refused(run, tmp_path, size):
    from kbert.export import load_exportable

    folder = tmp_path / "run"
    shutil.copytree(run, folder)
    (folder / "SHA256SUMS").unlink(missing_ok=True)  # as a folder written before the record: the size check is its own
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in tokens(size)), "utf-8")
    message = (f"{re.escape(str(folder / 'vocab.txt'))} has {size} tokens but the model's "
               f"vocabulary_size is {len(VOCAB)}")
    # the run's task whole, another task on its backbone, its export
    for load in (load_run, BertClassifier.from_preset, BertSentenceEncoder.from_preset, load_exportable):
        with pytest.raises(ValueError, match=message):
            load(folder)
    assert load_run(run).preprocessor.tokenizer.vocabulary_size == len(VOCAB)
