import json

import keras
import numpy as np

from kbert import BertBackbone
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from tests.conftest import TINY, tiny_batch

LABELS = ["O", "B-PER", "I-PER"]


def test_token_classifier_config_and_save_round_trip(tmp_path):
    model = BertTokenClassifier(BertBackbone(**TINY), LABELS, dropout=0.2)
    config = model.get_config()
    json.dumps(config)
    assert BertTokenClassifier.from_config(config).get_config() == config
    batch = tiny_batch()
    assert tuple(model(batch).shape) == (3, 7, 3)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    assert loaded.label_names == LABELS and loaded.dropout == 0.2
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(batch)),
                               keras.ops.convert_to_numpy(model(batch)), atol=1e-6)


def test_question_answerer_masks_padding_and_round_trips(tmp_path):
    model = BertQuestionAnswerer(BertBackbone(**TINY))
    batch = tiny_batch()
    out = {k: keras.ops.convert_to_numpy(v) for k, v in model(batch).items()}
    assert sorted(out) == ["end_logits", "start_logits"] and out["start_logits"].shape == (3, 7)
    padding = batch["padding_mask"] == 0
    assert (out["start_logits"][padding] <= -1e8).all() and (out["end_logits"][~padding] > -1e8).all()
    config = model.get_config()
    json.dumps(config)
    model.save(tmp_path / "qa.keras")
    loaded = keras.saving.load_model(tmp_path / "qa.keras", safe_mode=True)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(batch)["end_logits"]), out["end_logits"], atol=1e-6)
