import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.training import atomic_output_folder, bert_adamw
from tests.conftest import TINY, tiny_batch


def test_interrupted_run_leaves_the_old_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.keras").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_output_folder(out) as folder:
            (folder / "model.keras").write_text("half")
            raise KeyboardInterrupt
    assert (out / "model.keras").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_finished_run_replaces_the_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "stale.txt").write_text("stale")
    with atomic_output_folder(out) as folder:
        (folder / "model.keras").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["model.keras"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_adamw_skips_layer_norm_and_bias():
    backbone = BertBackbone(**TINY)
    optimizer = bert_adamw(1e-3, total_steps=10)
    optimizer.build(backbone.trainable_variables)
    decayed = {v.path for v in backbone.trainable_variables if optimizer._use_weight_decay(v)}
    assert "transformer_layer_0/intermediate_dense/kernel" in decayed
    assert "token_embedding/embeddings" in decayed
    assert not any(p.endswith(("/bias", "/gamma", "/beta")) for p in decayed)


def test_schedule_drives_the_optimizer_through_fit():
    backbone = BertBackbone(**TINY)
    logits = keras.layers.Dense(2)(backbone.output["pooled_output"])
    model = keras.Model(backbone.input, logits)
    optimizer = bert_adamw(1e-3, total_steps=4, warmup_ratio=0.5)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(tiny_batch(batch=4), np.array([0, 1, 0, 1]), batch_size=1, epochs=1, verbose=0)
    assert int(optimizer.iterations) == 4
    assert float(optimizer.learning_rate) == 0.0  # decayed to zero at total_steps
