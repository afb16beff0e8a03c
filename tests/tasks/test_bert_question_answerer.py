"""BertQuestionAnswerer: start and end logits from a Dense(2) head, padding masked out, saving."""

import json

import keras
import numpy as np
import pytest

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


def test_fit_weighs_each_questions_windows_by_its_sample_weight_in_memory_and_from_tf_data():
    """One step at learning rate 0, plain and weighed: Keras divides both sums by the windows, so their ratio is the
    sum of question weight x (start + end cross-entropy) over the windows over the plain sum, computed here."""
    import tensorflow as tf

    from kbert.tasks import BertQuestionAnswererPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    keras.utils.set_random_seed(1)
    preprocessor = BertQuestionAnswererPreprocessor(BertTokenizer(VOCABULARY), sequence_length=9, doc_stride=2)
    model = BertQuestionAnswerer(BertBackbone(**TINY, dropout=0.0), preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    questions, contexts = ["who plays?", "who sleeps?"], ["a man plays and someone sleeps", "nobody sleeps"]
    answers, weights = ["a man", "nobody"], np.array([3.0, 0.5])
    prepared = preprocessor.prepare((questions, contexts), answers)
    outputs = {key: keras.ops.convert_to_numpy(value).astype("float64") for key, value in
               model(prepared.inputs).items()}
    losses = sum(-np.take_along_axis(logits - np.log(np.exp(logits).sum(-1, keepdims=True)),
                                     prepared.y[key][:, None], -1)[:, 0] for key, logits in outputs.items())
    expected = np.sum(weights[prepared.windows.window_examples] * losses) / np.sum(losses)

    def loss(data, **kwargs):
        return model.fit(data, epochs=1, shuffle=False, verbose=0, **kwargs).history["loss"][0]

    in_memory = loss((questions, contexts), y=answers, sample_weight=weights) / loss((questions, contexts), y=answers)
    starts = [context.index(answer) for context, answer in zip(contexts, answers)]
    columns = ((questions, contexts), {"text": answers, "answer_start": starts})
    weighed = tf.data.Dataset.from_tensor_slices((*columns, weights)).batch(2)
    from_tf_data = loss(weighed) / loss(tf.data.Dataset.from_tensor_slices(columns).batch(2))
    assert in_memory == pytest.approx(expected, rel=1e-4) and from_tf_data == pytest.approx(expected, rel=1e-4)
