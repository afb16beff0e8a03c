"""FineTuning: the one way a recipe builds its task model, and what a run records of how it trains."""

import keras
import numpy as np
import pytest

from kbert.optimizers import BertAdamW
from kbert.tasks import BertClassifier, BertSentenceEncoder
from kbert.training.fine_tuning import FineTuning


def test_task_model_is_seeded_and_compiled_with_bert_adamw_at_the_tasks_rate_unless_given():
    first = FineTuning(seed=7).task_model(BertClassifier, "bert_tiny", num_classes=2)
    again = FineTuning(seed=7).task_model(BertClassifier, "bert_tiny", num_classes=2)
    other = FineTuning(seed=8).task_model(BertClassifier, "bert_tiny", num_classes=2)
    head = [model.get_layer("logits").get_weights()[0] for model in (first, again, other)]
    assert np.array_equal(head[0], head[1]) and not np.array_equal(head[0], head[2])
    assert isinstance(first.optimizer, BertAdamW) and float(first.optimizer.learning_rate) == pytest.approx(3e-5)
    encoder = FineTuning(learning_rate=1e-4, gradient_accumulation=4).task_model(BertSentenceEncoder, "bert_tiny")
    assert float(encoder.optimizer.learning_rate) == pytest.approx(1e-4)
    assert encoder.optimizer.gradient_accumulation_steps == 4


def test_mixed_precision_builds_the_backbone_in_bfloat16_and_leaves_the_global_policy():
    model = FineTuning(mixed_precision=True).task_model(BertClassifier, "bert_tiny", num_classes=2)
    assert model.backbone.get_layer("transformer_layer_0").compute_dtype == "bfloat16"
    assert keras.config.dtype_policy().name == "float32"


def test_hyperparameters_record_how_it_trains_not_how_it_runs():
    model = FineTuning().task_model(BertSentenceEncoder, "bert_tiny")
    recorded = FineTuning(epochs=2, backup_minutes=1.0, restart=True, verbose=0).hyperparameters(model, patience=3)
    assert recorded == {"epochs": 2, "batch_size": 32, "learning_rate": 2e-5, "mixed_precision": False,
                        "gradient_accumulation": 1, "remat": False, "seed": 0, "patience": 3}
