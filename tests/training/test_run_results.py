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
    loaded, _, _ = load_run(tmp_path / "run")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded.predict_on_batch(batch)),
                                  keras.ops.convert_to_numpy(model.predict_on_batch(batch)))
    optimizer = getattr(keras.saving.load_model(tmp_path / "run" / "model.keras"), "optimizer", None)
    assert optimizer is None or not optimizer.built  # no optimizer state in the file
