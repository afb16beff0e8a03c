import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.tasks import BertClassifier
from tests.conftest import TINY, tiny_batch


def test_float16_compute_trains_under_loss_scaling_and_refuses_to_without():
    """Keras wraps the optimizer for a model whose own policy is "mixed_float16"; a task's is float32 whatever
    its backbone computes in, so the task wraps it, and refuses auto_scale_loss=False."""
    model = BertClassifier(BertBackbone(**TINY, dtype="mixed_float16"), 2)
    model.compile()
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert type(model.optimizer.inner_optimizer).__name__ == "BertAdamW"
    before = [keras.ops.convert_to_numpy(w).copy() for w in model.trainable_weights]
    history = model.fit(tiny_batch(), np.array([0, 1, 0]), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert all(np.any(keras.ops.convert_to_numpy(w) != b) for w, b in zip(model.trainable_weights, before))
    with pytest.raises(ValueError, match="computes in float16.*auto_scale_loss=True"):
        model.compile(auto_scale_loss=False)
    float32 = BertClassifier(BertBackbone(**TINY), 2)
    float32.compile()
    assert not isinstance(float32.optimizer, keras.optimizers.LossScaleOptimizer)
