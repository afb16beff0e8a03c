import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.optimizers import bert_adamw
from tests.conftest import TINY, tiny_batch


@pytest.mark.parametrize("lora_rank", [None, 2])
def test_run_folder_model_has_the_weights_not_the_optimizer(tmp_path, lora_rank):
    from kbert.tasks import BertClassifier
    from kbert.text import BertTokenizer
    from kbert.saving import load_run
    from kbert.optimizers import enable_lora
    from kbert.training import write_run_folder

    model = BertClassifier(BertBackbone(**TINY), 2)
    if lora_rank:
        enable_lora(model.backbone, lora_rank)
    model.compile(optimizer=bert_adamw(1e-2, total_steps=2, warmup_ratio=0.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batch = tiny_batch(batch=4)
    model.fit(batch, np.array([0, 1, 0, 1]), batch_size=2, epochs=1, verbose=0)
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # and as many words as the model's vocabulary_size
    tokenizer = BertTokenizer(special + [f"w{i}" for i in range(TINY["vocabulary_size"] - len(special))])
    write_run_folder(tmp_path / "run", model, tokenizer, {"max_length": 8}, {"loss": [1.0]})
    loaded = load_run(tmp_path / "run")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded.predict_on_batch(batch)),
                                  keras.ops.convert_to_numpy(model.predict_on_batch(batch)))
    optimizer = getattr(keras.saving.load_model(tmp_path / "run" / "model.keras"), "optimizer", None)
    assert optimizer is None or not optimizer.built  # no optimizer state in the file


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="files only: runs once")
def test_a_run_folder_records_its_files_sha256_and_loading_refuses_a_damaged_model(tmp_path):
    """Issue 55: 4 KB flipped inside a run folder's model.keras loaded and predicted without a word. The folder
    records each file's SHA-256 (SHA256SUMS) when written; loading names the file that differs, unless
    verify=False; a folder from before the record loads as it did."""
    from kbert.saving import CHECKSUMS_FILE, ChangedFileError, load_run, recorded_checksums
    from kbert.tasks import BertClassifier, BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from kbert.training import write_run_folder
    from tests.saving.test_checksums import flip

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = BertTokenizer(special + [f"w{i}" for i in range(TINY["vocabulary_size"] - len(special))])
    model = BertClassifier(BertBackbone(**TINY), 2, preprocessor=BertTextClassifierPreprocessor(tokenizer, 8))
    write_run_folder(tmp_path / "run", model, tokenizer, {"max_length": 8}, {"loss": [1.0]})
    run = tmp_path / "run"
    assert {"model.keras", "metrics.json", "vocab.txt", "README.md"} <= set(recorded_checksums(run))
    load_run(run)
    original = (run / "model.keras").read_bytes()
    flip(run / "model.keras", len(original) // 2)
    with pytest.raises(ChangedFileError, match=rf"^{run / 'model.keras'}: its SHA-256 is not the one recorded"):
        load_run(run)
    other = BertClassifier(BertBackbone(**TINY), 3, preprocessor=BertTextClassifierPreprocessor(tokenizer, 8))
    other.save(run / "model.keras")  # a whole file, but not the one written
    with pytest.raises(ChangedFileError, match="model.keras: its SHA-256"):
        load_run(run)
    assert load_run(run, verify=False).num_classes == 3  # loads anyway, as asked
    (run / "model.keras").write_bytes(original)
    (run / CHECKSUMS_FILE).unlink()  # as a run folder written before the record
    assert load_run(run).num_classes == 2
