"""kbert's compiled mode on torch (`BertTask.compile(jit_compile=True)`): the backbone's plain-torch pass under
`torch.compile`, held to the eager pass; no recompiling as batch lengths vary; refused where it cannot run."""

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.data.batches.padded import PaddedBatches
from kbert.tasks import BertClassifier
from tests.conftest import TINY, tiny_batch

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.compile: torch only")


def trained(jit_compile):
    keras.utils.set_random_seed(0)
    model = BertClassifier(BertBackbone(**{**TINY, "dropout": 0.0}), 3, dropout=0.0)
    model.compile(jit_compile=jit_compile)
    batch = tiny_batch()
    model.fit(batch, np.array([0, 2, 1]), batch_size=3, epochs=2, shuffle=False, verbose=0)
    return model, keras.ops.convert_to_numpy(model.predict_on_batch(batch))


def test_a_compiled_fit_gives_the_eager_fits_weights_and_outputs():
    (compiled, compiled_logits), (eager, eager_logits) = trained(True), trained(False)
    assert compiled.backbone.torch_compiled and not eager.backbone.torch_compiled
    assert compiled.jit_compile is False  # Keras's own torch.compile of the whole step stays off
    np.testing.assert_allclose(compiled_logits, eager_logits, atol=1e-5)
    for ours, theirs in zip(compiled.weights, eager.weights, strict=True):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), keras.ops.convert_to_numpy(theirs), atol=1e-5)


def test_batches_of_varying_length_do_not_recompile(monkeypatch):
    """Four training batches padded to 8, 16, 24 and 16 tokens: the first shape's program, then one with the
    length symbolic (torch's automatic dynamic shapes), and no more, none for the meta tensors of Keras's first
    build; a counting backend stands for Inductor. In order (`shuffle=False`): shuffled, the count would hang on
    the order Python's `random` gives (the first build's batch and the first trained one alike or not)."""
    import torch
    from torch._dynamo.testing import CompileCounter

    import kbert.backend_speedups.torch_backbone as torch_backbone

    torch._dynamo.reset()
    counter = CompileCounter()
    monkeypatch.setattr(torch_backbone, "compiled_forward", lambda: torch.compile(torch_backbone.forward,
                                                                                  backend=counter))
    lengths = np.array([3, 5, 12, 14, 20, 22, 9, 11])
    mask = (np.arange(24)[None, :] < lengths[:, None]).astype("int32")
    inputs = {"token_ids": np.where(mask, 7, 0).astype("int32"), "segment_ids": np.zeros_like(mask),
              "padding_mask": mask}
    batches = PaddedBatches(inputs, np.zeros(8, "int32"), batch_size=2)
    assert [batches[i][0]["token_ids"].shape[1] for i in range(4)] == [8, 16, 24, 16]
    model = BertClassifier(BertBackbone(**{**TINY, "max_sequence_length": 24}), 2)
    model.compile(jit_compile=True)
    model.fit(batches, epochs=2, shuffle=False, verbose=0)
    assert counter.frame_count == 2


def test_compiled_mode_refuses_where_the_plain_torch_pass_is_off(monkeypatch):
    monkeypatch.setenv("KBERT_SPEEDUPS", "-torch_backbone")
    with pytest.raises(ValueError, match="KBERT_SPEEDUPS turns off: allow torch_backbone"):
        BertClassifier(BertBackbone(**TINY), 2).compile(jit_compile=True)
    monkeypatch.delenv("KBERT_SPEEDUPS")
    model = BertClassifier(BertBackbone(**TINY), 2)
    model.compile(jit_compile=True)
    model.backbone.get_layer("embeddings_dropout").seed = 7  # seeded dropout runs in the graph alone
    with pytest.raises(ValueError, match="does not run here.*compile with jit_compile=False"):
        model.fit(tiny_batch(), np.array([0, 1, 0]), epochs=1, verbose=0)
