import keras
import numpy as np
from keras import ops

from kbert import BertBackbone
from kbert.optimizers import BertAdamW, WarmupLinearDecay, bert_adamw
from tests.conftest import TINY


def test_a_token_seen_several_times_steps_by_its_summed_gradient():
    # On TensorFlow an embedding's gradient holds one row per occurrence (IndexedSlices);
    # Adam's second moment must square their sum, as torch.optim.AdamW does.
    embedding = keras.layers.Embedding(3, 2, embeddings_initializer="zeros")
    inputs = keras.Input((4,), dtype="int32")
    per_position = np.array([[1.0, -2.0], [1.0, -2.0], [-1.5, 0.5], [2.0, 1.0]], "float32")
    model = keras.Model(inputs, ops.sum(embedding(inputs) * per_position, axis=(1, 2)))
    model.compile(optimizer=BertAdamW(learning_rate=0.1, weight_decay=0.0, epsilon=1e-6),
                  loss=lambda y_true, y_pred: ops.mean(y_pred))
    model.fit(np.array([[0, 0, 0, 1]]), np.zeros(1), batch_size=1, epochs=1, verbose=0)
    # Row 0's gradient sums to (0.5, -3.5), row 1's is (2, 1): AdamW's first step moves each
    # entry by -lr * sign(gradient). (Squared row by row, row 0 moved by (-0.024, 0.12).)
    np.testing.assert_allclose(ops.convert_to_numpy(embedding.embeddings),
                               [[-0.1, 0.1], [-0.1, -0.1], [0.0, 0.0]], atol=1e-6)


def test_adamw_skips_layer_norm_and_bias():
    backbone = BertBackbone(**TINY)
    optimizer = bert_adamw(1e-3, total_steps=10)
    optimizer.build(backbone.trainable_variables)
    decayed = {v.path for v in backbone.trainable_variables if optimizer._use_weight_decay(v)}
    assert "transformer_layer_0/intermediate_dense/kernel" in decayed
    assert "token_embedding/embeddings" in decayed
    assert not any(p.endswith(("/bias", "/gamma", "/beta")) for p in decayed)


def _pytorch_adamw(weights, gradients, learning_rates, weight_decay, eps=1e-6, beta_1=0.9, beta_2=0.999):
    """PyTorch's AdamW algorithm as its documentation states it, in float64 numpy."""
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    for t, (g, lr) in enumerate(zip(gradients, learning_rates), start=1):
        weights = weights * (1 - lr * weight_decay)
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_hat, v_hat = m / (1 - beta_1**t), v / (1 - beta_2**t)
        weights = weights - lr * m_hat / (np.sqrt(v_hat) + eps)
    return weights


def test_bert_adamw_follows_pytorch_adamw():
    # Gradients spanning 1e-7..1: Keras's own Adam damps the small ones (its epsilon comes
    # before the bias correction); PyTorch's update, which BertAdamW follows, does not.
    rng = np.random.default_rng(0)
    start = rng.normal(size=64).astype("float32")
    gradients = [(rng.normal(size=64) * 10.0 ** rng.integers(-7, 1, size=64)).astype("float32") for _ in range(5)]
    learning_rates = 1e-2 * (1 - np.arange(5) / 1000)  # the linear decay, step by step
    expected = _pytorch_adamw(start.astype("float64"), gradients, learning_rates, weight_decay=0.01)

    def train(optimizer):
        variable = keras.Variable(start, name="kernel")
        for gradient in gradients:
            optimizer.apply([keras.ops.convert_to_tensor(gradient)], [variable])
        return keras.ops.convert_to_numpy(variable)

    ours = train(bert_adamw(1e-2, total_steps=1000, warmup_ratio=0.0, clipnorm=None))
    np.testing.assert_allclose(ours, expected, rtol=0, atol=2e-6)
    keras_adamw = keras.optimizers.AdamW(WarmupLinearDecay(1e-2, 0, 1000), weight_decay=0.01, epsilon=1e-6)
    assert np.abs(train(keras_adamw) - expected).max() > 1e-3  # the difference the test guards


def test_each_fit_plans_a_schedule_planned_by_fit_in_optimizer_steps():
    import pytest

    from kbert.optimizers.bert_adamw import plan_fit_schedule

    optimizer = bert_adamw(3e-5, total_steps=None, gradient_accumulation_steps=2)
    plan_fit_schedule(keras.optimizers.LossScaleOptimizer(optimizer), epochs=3, steps_per_epoch=lambda: 10)
    assert (optimizer._learning_rate.warmup_steps, optimizer._learning_rate.total_steps) == (1, 15)
    plan_fit_schedule(optimizer, epochs=0, steps_per_epoch=lambda: 10)  # 0 epochs count as 1
    assert optimizer._learning_rate.total_steps == 5
    with pytest.raises(ValueError, match="length is unknown: pass steps_per_epoch"):
        plan_fit_schedule(optimizer, epochs=1, steps_per_epoch=lambda: None)
    fixed = bert_adamw(3e-5, total_steps=100)
    plan_fit_schedule(fixed, epochs=1, steps_per_epoch=lambda: 1 / 0)  # not planned by fit: steps never counted
    assert fixed._learning_rate.total_steps == 100
    adam = keras.optimizers.Adam(WarmupLinearDecay(3e-5, 0, 1, planned_by_fit=True))
    with pytest.raises(ValueError, match="needs the optimizer kbert.optimizers.BertAdamW"):
        plan_fit_schedule(adam, epochs=1, steps_per_epoch=lambda: 10)
