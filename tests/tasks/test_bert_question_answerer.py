"""BertQuestionAnswerer: start and end logits from a Dense(2) head, padding masked out, saving."""

import json

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert_core import says_no_answer
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


NO_ANSWER_CASES = [
    ["Who sings?", "Ann sings and Bob plays the piano."], ["Where does Bob live?", "Bob lives in Paris with his cat."],
    ["When did it rain?", "It rained on Monday morning."], ["What is the capital of Peru?", "The cat sat on the mat."],
    ["Who wrote the letter?", "The letter was written by Clara in 1890."], ["How many apples?", "She bought seven."],
    ["What colour is the sky?", "Stocks fell sharply on Tuesday."], ["Who won the race?", "Tom won the race easily."],
    ["What does Ann play?", "Ann plays chess every evening."], ["Why did he leave?", "He left because it was late."],
    ["Which river is longest?", "The Nile is the longest river."], ["Who is the mayor?", "Dogs bark at night."],
]


@pytest.fixture(scope="module")
def no_answer_reference(minilm_dir, tmp_path_factory):
    """A random QA head on all-MiniLM-L6-v2 as `transformers` draws it, and each case's null score and best span
    computed from the logits of `transformers`' model by trying every pair (`qa_no_answer_reference.py`)."""
    pytest.importorskip("transformers", reason="transformers is a test-only dependency")
    from tests.conftest import TESTS, run_python

    folder = tmp_path_factory.mktemp("qa_no_answer")
    (folder / "cases.json").write_text(json.dumps(NO_ANSWER_CASES))
    run_python(TESTS / "tasks" / "qa_no_answer_reference.py", minilm_dir, folder / "model", folder / "cases.json",
               folder / "out.json")
    return folder / "model", json.loads((folder / "out.json").read_text())["cases"]


def test_no_answer_as_berts_run_squad_decides_on_hugging_faces_logits(no_answer_reference):
    """SQuAD 2.0's rule: "" where the start + end logit at [CLS] beats the best span's by more than the threshold; the
    null and span scores as transformers' model gives them, the spans as trying every pair finds them."""
    folder, cases = no_answer_reference
    diffs = np.array([case["null"] - case["best"] for case in cases])
    assert np.abs(diffs).min() > 1e-4  # no case the float32 noise could decide
    questions, contexts = map(list, zip(*NO_ANSWER_CASES))
    model = BertQuestionAnswerer.from_preset(folder, allow_no_answer=True)
    for threshold in (0.0, float(np.median(diffs)) + 1e-3):
        model.set_decoding(no_answer_threshold=threshold)
        answers = model.predict((questions, contexts), verbose=0)
        for case, diff, answer, context in zip(cases, diffs, answers, contexts):
            if diff > threshold:
                assert (answer["text"], answer["start"], answer["end"]) == ("", 0, 0)
                assert answer["score"] == pytest.approx(case["null"], abs=1e-4)
                assert context[case["start"] : case["end"]] in answer["alternatives"][:1]
            else:
                assert (answer["start"], answer["end"]) == (case["start"], case["end"])
                assert answer["text"] == context[case["start"] : case["end"]]
                assert answer["score"] == pytest.approx(case["best"], abs=1e-4)
        assert sum(map(says_no_answer, answers)) == sum(diffs > threshold) > 0
    plain = BertQuestionAnswerer.from_preset(folder).predict((questions, contexts), verbose=0)
    assert [(a["start"], a["end"]) for a in plain] == [(case["start"], case["end"]) for case in cases]


def test_unanswerable_questions_train_on_cls_in_every_window_in_memory_and_from_tf_data():
    """"" and datasets' empty answers give [CLS] targets in each window of the question; a tf.data batch with text ""
    trains the same loss (at learning rate 0) as the in-memory one; without allow_no_answer both are refused."""
    import tensorflow as tf

    from kbert.tasks import BertQuestionAnswererPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    keras.utils.set_random_seed(2)
    preprocessor = BertQuestionAnswererPreprocessor(BertTokenizer(VOCABULARY), sequence_length=9, doc_stride=2)
    questions, contexts = ["who plays?", "who sleeps?", "who is fine?"], ["a man plays and someone sleeps"] * 3
    answers = ["a man", "someone", {"text": [], "answer_start": []}]
    prepared = preprocessor.prepare((questions, contexts), ["a man", "", answers[2]])
    owners = prepared.windows.window_examples
    assert (owners == 1).sum() > 1 and (owners == 2).sum() > 1
    for key in ("start_logits", "end_logits"):
        assert (prepared.y[key][owners > 0] == 0).all() and (prepared.y[key][owners == 0] > 0).any()

    def loss(data, **kwargs):
        return model.fit(data, epochs=1, shuffle=False, verbose=0, **kwargs).history["loss"][0]

    model = BertQuestionAnswerer(BertBackbone(**TINY, dropout=0.0), preprocessor=preprocessor, allow_no_answer=True)
    head = model.get_layer("span_logits")
    head.kernel.assign(np.random.default_rng(0).normal(size=head.kernel.shape).astype("float32"))
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    outputs = {key: keras.ops.convert_to_numpy(value).astype("float64") for key, value in
               model(prepared.inputs).items()}
    losses = sum(-np.take_along_axis(logits - np.log(np.exp(logits).sum(-1, keepdims=True)),
                                     prepared.y[key][:, None], -1)[:, 0] for key, logits in outputs.items())
    assert abs(losses.mean() / losses[owners == 0].mean() - 1) > 0.01  # the no-answer windows weigh in
    in_memory = loss((questions, contexts), y=["a man", "", answers[2]], batch_size=len(owners))
    columns = ((questions, contexts), {"text": ["a man", "", ""], "answer_start": [0, 0, 0]})
    from_tf_data = loss(tf.data.Dataset.from_tensor_slices(columns).batch(3))
    assert in_memory == pytest.approx(losses.mean(), rel=1e-4) and from_tf_data == pytest.approx(losses.mean(), rel=1e-4)

    refusing = BertQuestionAnswerer(BertBackbone(**TINY), preprocessor=preprocessor)
    with pytest.raises(ValueError, match="Example 2 has no answer .* allow_no_answer=True"):
        refusing.fit((questions, contexts), ["a man", "someone", answers[2]], verbose=0)
    with pytest.raises(Exception, match="an answer is empty .* allow_no_answer=True"):
        refusing.fit(tf.data.Dataset.from_tensor_slices(columns).batch(3), verbose=0)


def test_decoding_settings_change_a_saved_model_without_a_new_head(tmp_path):
    """from_preset on a saved model with decoding settings keeps the trained head (it used to rebuild the model, and
    fail looking for a tokenizer beside the .keras file); export_to_transformers carries allow_no_answer and its
    threshold."""
    model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=32)
    model.get_layer("span_logits").bias.assign(np.array([0.5, -0.5], "float32"))
    model.save(tmp_path / "qa.keras")
    saved = BertQuestionAnswerer.from_preset(tmp_path / "qa.keras", allow_no_answer=True, n_best=3)
    assert (saved.allow_no_answer, saved.n_best, saved.get_config()["allow_no_answer"]) == (True, 3, True)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(saved.get_layer("span_logits").bias), [0.5, -0.5])
    folder = tmp_path / "hf"
    model.export_to_transformers(folder)
    again = BertQuestionAnswerer.from_preset(folder, allow_no_answer=True, no_answer_threshold=-1.5)
    assert (again.allow_no_answer, again.no_answer_threshold) == (True, -1.5)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(again.get_layer("span_logits").bias), [0.5, -0.5])
    again.export_to_transformers(tmp_path / "again")
    back = BertQuestionAnswerer.from_preset(tmp_path / "again")
    assert (back.allow_no_answer, back.no_answer_threshold) == (True, -1.5)
    with pytest.raises(ValueError, match="has no decoding setting 'dropout'; its are: n_best, max_answer_length"):
        back.set_decoding(dropout=0.5)


def test_a_saved_task_model_file_gives_its_backbone_and_tokenizer_to_a_new_head(tmp_path):
    """A .keras file with other constructor arguments, or for another task: a new head on its backbone, with the
    tokenizer its preprocessor holds (it used to look for vocab.txt beside the file)."""
    from kbert import BertClassifier

    model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=32)
    model.save(tmp_path / "qa.keras")
    for rebuilt in (BertQuestionAnswerer.from_preset(tmp_path / "qa.keras", dropout=0.1),
                    BertClassifier.from_preset(tmp_path / "qa.keras", num_classes=2)):
        assert rebuilt.preprocessor.tokenizer.vocabulary_size == model.preprocessor.tokenizer.vocabulary_size
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(rebuilt.backbone.weights[0]),
                                      keras.ops.convert_to_numpy(model.backbone.weights[0]))
    assert rebuilt.predict(["a film"], verbose=0).shape == (1, 2)
