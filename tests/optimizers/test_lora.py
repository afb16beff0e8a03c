"""enable_lora: the backbone frozen, low-rank factors on the fused QKV kernels, merged into them when saved."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.optimizers import bert_adamw, enable_lora
from kbert.tasks import BertClassifier
from tests.conftest import TINY, tiny_batch

QKV = "transformer_layer_{}/self_attention/qkv_dense"


def test_the_adapted_kernel_is_the_frozen_one_plus_a_times_b():
    """Keras's LoRA with alpha = rank: kernel = W + (alpha / r) A B = W + A B, in numpy."""
    backbone = BertBackbone(**TINY)
    frozen = {w.path: ops.convert_to_numpy(w) for w in backbone.weights}
    assert enable_lora(backbone, rank=2) == 2
    assert sorted(w.path for w in backbone.trainable_weights) == sorted(
        f"{QKV.format(i)}/lora_kernel_{ab}" for i in range(2) for ab in "ab")
    rng = np.random.default_rng(0)
    for i in range(2):
        layer = backbone.get_layer(f"transformer_layer_{i}").self_attention.qkv_dense
        a, b = rng.normal(size=(8, 2)).astype("float32"), rng.normal(size=(2, 24)).astype("float32")
        layer.lora_kernel_a.assign(a)
        layer.lora_kernel_b.assign(b)
        np.testing.assert_allclose(ops.convert_to_numpy(layer.kernel), frozen[f"{QKV.format(i)}/kernel"] + a @ b,
                                   atol=1e-5)


def test_training_moves_only_the_lora_factors_and_the_head():
    backbone = BertBackbone(**TINY)
    model = BertClassifier(backbone, 2)
    enable_lora(backbone, rank=2)
    before = {w.path: ops.convert_to_numpy(w) for w in model.weights}
    model.compile(optimizer=bert_adamw(1e-2, total_steps=2, warmup_ratio=0.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.train_on_batch(tiny_batch(), np.array([0, 1, 1]))
    moved = {w.path for w in model.weights if not np.array_equal(ops.convert_to_numpy(w), before[w.path])}
    # B by its gradient; A by weight decay alone (its gradient goes through B, zero at first).
    assert moved == {f"{QKV.format(i)}/lora_kernel_{ab}" for i in range(2) for ab in "ab"} | {"logits/kernel",
                                                                                             "logits/bias"}


def test_lora_trains_few_weights_and_saves_merged(tmp_path):
    backbone = BertBackbone(**TINY)
    model = BertClassifier(backbone, 2)
    assert enable_lora(backbone, rank=2) == TINY["num_layers"]
    hidden = TINY["hidden_dim"]
    lora = TINY["num_layers"] * 2 * (hidden + 3 * hidden)  # A: hidden x r, B: r x 3 hidden
    head = hidden * 2 + 2
    assert sum(int(np.prod(v.shape)) for v in model.trainable_weights) == lora + head
    for variable in model.trainable_weights:  # LoRA B starts at zero: move it
        variable.assign(np.random.default_rng(0).normal(size=variable.shape).astype("float32"))
    batch = tiny_batch()
    expected = ops.convert_to_numpy(model(batch))
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert not any("lora" in v.path for v in loaded.weights)
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(batch)), expected, atol=1e-5)


def test_lora_needs_a_target():
    with pytest.raises(ValueError, match="No layer named"):
        enable_lora(BertBackbone(**TINY), rank=2, target_names=("query",))
