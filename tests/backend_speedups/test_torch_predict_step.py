"""torch_predict_step: `predict`'s step running the task's graph without Keras's per-call work, against Keras's own
step (KBERT_SPEEDUPS=-torch_predict_step) for every task kind, padded rows and a last partial batch, after changes
that must invalidate what was gathered (LoRA enabled, a layer frozen, int8 quantization), and under a mixed policy."""

import keras
import numpy as np
import pytest

from kbert import (BertBackbone, BertClassifier, BertPretrainer, BertQuestionAnswerer, BertSentenceEncoder,
                   BertTokenClassifier)
from kbert.optimizers.lora import enable_lora
from tests.conftest import TINY, tiny_batch

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch's predict step")

TASKS = {
    "classifier": lambda backbone: BertClassifier(backbone, 3),
    "token_classifier": lambda backbone: BertTokenClassifier(backbone, ["O", "B-X", "I-X"]),
    "question_answerer": lambda backbone: BertQuestionAnswerer(backbone),
    "sentence_encoder": lambda backbone: BertSentenceEncoder(backbone),
    "masked_lm": lambda backbone: BertPretrainer(backbone),
}


def task(kind="classifier", dtype=None):
    keras.utils.set_random_seed(0)
    return TASKS[kind](BertBackbone(**{**TINY, "dropout": 0.1}, dtype=dtype))


def inputs(kind="classifier"):
    batch = tiny_batch(batch=5)  # rows padded; batches of 2: the last one partial
    if kind == "masked_lm":
        batch["mask_positions"] = np.tile(np.array([[1, 2]], "int32"), (5, 1))
    return batch


@pytest.fixture
def fused_steps(monkeypatch):
    """What each call of the fused step returned (None: it handed the batch to Keras's step)."""
    from kbert.backend_speedups import torch_predict_step

    returned = []
    real = torch_predict_step.predict_step
    monkeypatch.setattr(torch_predict_step, "predict_step", lambda *args: returned.append(real(*args)) or returned[-1])
    return returned


def compare(model, x, monkeypatch, **kwargs):
    """`model.predict(x)` with the fused step and with Keras's: equal within float32 rounding."""
    monkeypatch.setenv("KBERT_SPEEDUPS", "all")
    fused = model.predict(x, batch_size=2, verbose=0, **kwargs)
    monkeypatch.setenv("KBERT_SPEEDUPS", "-torch_predict_step")
    reference = model.predict(x, batch_size=2, verbose=0, **kwargs)
    monkeypatch.setenv("KBERT_SPEEDUPS", "all")
    assert keras.tree.map_structure(np.shape, fused) == keras.tree.map_structure(np.shape, reference)
    keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-6), fused, reference)
    return fused


@pytest.mark.parametrize("kind", sorted(TASKS))
def test_every_task_predicts_as_keras_step(kind, monkeypatch, fused_steps):
    compare(task(kind), inputs(kind), monkeypatch)
    assert len(fused_steps) == 3 and all(step is not None for step in fused_steps)


@pytest.mark.parametrize("change", ["lora", "frozen", "int8"])
def test_a_model_changed_between_two_predicts(change, monkeypatch, fused_steps):
    model = task()
    before = compare(model, inputs(), monkeypatch)
    if change == "lora":
        enable_lora(model.backbone, rank=2)
        for weight in model.weights:
            if "lora_kernel_b" in weight.path:  # zeros at first: LoRA's update would change nothing
                weight.assign(np.full(weight.shape, 0.5, "float32"))
    elif change == "frozen":
        model.backbone.get_layer("transformer_layer_0").trainable = False
        model.get_layer("logits").kernel.assign(np.ones(model.get_layer("logits").kernel.shape, "float32"))
    else:
        model.quantize("int8")
    after = compare(model, inputs(), monkeypatch)
    assert not np.allclose(before, after, rtol=0, atol=1e-6)  # the change reached the outputs
    assert all(step is not None for step in fused_steps)


@pytest.mark.parametrize("kind", ["classifier", "masked_lm"])
def test_mixed_precision(kind, monkeypatch, fused_steps):
    """Under "mixed_bfloat16" the graph's layers run through their `__call__` in the model's autocast scope."""
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = task(kind)
    finally:
        keras.config.set_dtype_policy("float32")
    compare(model, inputs(kind), monkeypatch)
    assert len(fused_steps) == 3 and all(step is not None for step in fused_steps)


def test_a_bfloat16_backbone_under_a_float32_head(monkeypatch, fused_steps):
    """`predict(dtype="bfloat16")`: the backbone's bfloat16 outputs cast to float32 where the head's layers take
    them, as `Layer.__call__` casts them."""
    compare(task(), inputs(), monkeypatch, dtype="bfloat16")
    assert len(fused_steps) == 3 and all(step is not None for step in fused_steps)


def test_raw_inputs_and_predict_on_batch(monkeypatch, fused_steps):
    model = BertClassifier.from_preset("bert_tiny", num_classes=2)
    compare(model, ["a gripping film", "dull", "a film that goes on and on"], monkeypatch)
    batch = {key: value[:2] for key, value in inputs().items()}
    reference = keras.ops.convert_to_numpy(model(batch, training=False))
    np.testing.assert_allclose(model.predict_on_batch(batch), reference, rtol=0, atol=1e-6)
    assert fused_steps and all(step is not None for step in fused_steps)
