"""kbert.tasks.unread_pooler: the models that never read `pooled_output` leave the backbone's pooler out of their
training, and the backbone as it was."""

import warnings

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.optimizers import bert_adamw, enable_lora
from kbert.tasks import BertClassifier, BertPretrainer, BertQuestionAnswerer, BertTokenClassifier
from tests.conftest import TINY, tiny_batch

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
