import warnings

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.tasks import BertClassifier, BertPretrainer, BertQuestionAnswerer, BertTokenClassifier
from kbert.optimizers import WarmupLinearDecay, bert_adamw
from kbert.training import enable_lora
from tests.conftest import TINY, tiny_batch


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


@pytest.mark.parametrize("lora_rank", [None, 2])
def test_run_folder_model_has_the_weights_not_the_optimizer(tmp_path, lora_rank):
    from kbert.tasks import BertClassifier
    from kbert.text import BertTokenizer
    from kbert.saving import load_run
    from kbert.training import enable_lora, write_run_folder

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


def test_fast_dropout_masks_keep_the_dropout_rate():
    from kbert.training import use_fast_dropout_masks

    use_fast_dropout_masks()
    if keras.config.backend() == "jax":
        import jax

        assert jax.config.jax_threefry_partitionable is False
    dropped = keras.layers.Dropout(0.1, seed=3)(np.ones((64, 128, 128), "float32"), training=True)
    assert abs(float(np.mean(keras.ops.convert_to_numpy(dropped) == 0)) - 0.1) < 0.005


CROSS_ENTROPY = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def token_classifier_step():
    """(model, loss, x, y, sample_weight) of one training step."""
    batch = tiny_batch()
    model = BertTokenClassifier(BertBackbone(**TINY), ["O", "B-X"])
    return model, CROSS_ENTROPY, batch, np.ones(batch["token_ids"].shape, "int32"), None


def question_answerer_step():
    model = BertQuestionAnswerer(BertBackbone(**TINY))
    return model, CROSS_ENTROPY, tiny_batch(), {"start_logits": np.array([1, 2, 0]), "end_logits": np.array([2, 3, 0])}, None


def mlm_only_pretrainer_step():
    batch = {**tiny_batch(), "mask_positions": np.array([[1, 2], [3, 0], [1, 1]], "int32")}
    model = BertPretrainer(BertBackbone(**TINY), next_sentence=False)
    return model, "auto", batch, {"mlm": np.full((3, 2), 5, "int32")}, {"mlm": np.ones((3, 2), "float32")}


@pytest.mark.parametrize("make_step", [token_classifier_step, question_answerer_step, mlm_only_pretrainer_step])
def test_models_that_never_read_the_pooler_leave_it_as_it_is(make_step):
    """Their loss never reaches the pooler: it must neither draw Keras's "Gradients do not
    exist" warning (TensorFlow, torch) nor move under weight decay (JAX, whose gradients
    are zeros), and everything else must still train."""
    model, loss, batch, y, sample_weight = make_step()
    model.compile(optimizer=bert_adamw(1e-2, total_steps=2, warmup_ratio=0.0), loss=loss)
    before = {w.path: keras.ops.convert_to_numpy(w) for w in model.weights}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.train_on_batch(batch, y, sample_weight=sample_weight)
    assert not [str(w.message) for w in caught if "Gradients do not exist" in str(w.message)]
    moved = {w.path for w in model.weights if not np.array_equal(keras.ops.convert_to_numpy(w), before[w.path])}
    assert not {w.path for w in model.backbone.pooler.weights} & moved
    assert "transformer_layer_0/intermediate_dense/kernel" in moved


@pytest.mark.parametrize("make_model", [lambda backbone: BertClassifier(backbone, 2),
                                        lambda backbone: BertPretrainer(backbone, next_sentence=True)],
                         ids=["classifier", "nsp_pretrainer"])
def test_models_that_read_the_pooler_train_it_on_a_backbone_a_token_model_shares(make_model):
    backbone = BertBackbone(**TINY)
    token_model = BertTokenClassifier(backbone, ["O", "B-X"])
    pooler_paths = {w.path for w in backbone.pooler.weights}
    assert not pooler_paths & {w.path for w in token_model.trainable_weights}
    assert pooler_paths <= {w.path for w in token_model.non_trainable_weights}
    assert pooler_paths <= {w.path for w in backbone.trainable_weights}  # the backbone is left as it was
    model = make_model(backbone)
    assert pooler_paths <= {w.path for w in model.trainable_weights}


def test_a_classifier_leaves_a_lora_frozen_pooler_frozen():
    backbone = BertBackbone(**TINY)
    enable_lora(backbone, rank=2)
    model = BertClassifier(backbone, 2)
    assert not {w.path for w in backbone.pooler.weights} & {w.path for w in model.trainable_weights}
