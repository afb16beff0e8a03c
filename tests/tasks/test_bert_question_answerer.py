"""BertQuestionAnswerer: start and end logits from a Dense(2) head, padding masked out, saving."""

import json

import keras
import numpy as np

from kbert import BertBackbone
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from tests.conftest import TINY, tiny_batch


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


def test_span_logits_are_the_two_columns_of_a_dense_head_on_real_tokens():
    """Start logits: column 0 of sequence_output @ kernel + bias; end logits: column 1; -1e9 on padding."""
    model = BertQuestionAnswerer(BertBackbone(**TINY), n_best=5, max_answer_length=4)
    head = model.get_layer("span_logits")
    head.bias.assign(np.array([0.25, -0.75], "float32"))
    batch = tiny_batch()
    tokens = keras.ops.convert_to_numpy(model.backbone(batch)["sequence_output"])
    logits = tokens @ keras.ops.convert_to_numpy(head.kernel) + [0.25, -0.75]
    real = batch["padding_mask"] == 1
    out = model(batch)
    for name, column in (("start_logits", 0), ("end_logits", 1)):
        got = keras.ops.convert_to_numpy(out[name])
        assert got.dtype == np.float32
        np.testing.assert_allclose(got[real], logits[..., column][real], atol=1e-5)
        np.testing.assert_array_equal(got[~real], -1e9)
    assert (model.n_best, model.max_answer_length, model.dropout) == (5, 4, 0.0)


def test_predict_gives_an_empty_answer_when_no_span_fits():
    """max_answer_length=0 admits no span: each question gets the empty answer, not an error."""
    model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=24, max_answer_length=0)
    answers = model.predict((["Who sings?", "Who runs?"], ["Ann sings.", "Bob runs."]), verbose=0)
    assert answers == [{"text": "", "start": -1, "end": -1, "score": 0.0, "probability": 0.0, "alternatives": []}] * 2
