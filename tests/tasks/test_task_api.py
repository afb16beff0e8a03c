"""The task API: `from_preset`, `fit` / `evaluate` / `predict` on raw inputs, saving and reloading."""

import json
import pathlib

import keras
import numpy as np
import pytest

import kbert
from kbert.tasks import BertClassifier, BertPretrainer, BertQuestionAnswerer, BertTokenClassifier
from tests.conftest import next_backend, run_python
from tests.tasks import task_examples as examples

HERE = pathlib.Path(__file__).resolve().parent


def fitted_tasks():
    """Each task from the bert_tiny preset, fitted for two steps on raw inputs: {name: model}."""
    keras.utils.set_random_seed(0)
    models = {
        "classifier": BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"]),
        "nli": BertClassifier.from_preset("bert_tiny", num_classes=3),
        "ner": BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]),
        "qa": BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=24),
        "pretrainer": BertPretrainer.from_preset("bert_tiny", next_sentence=False),
    }
    data = {"classifier": examples.SENTIMENT, "nli": examples.NLI, "ner": examples.NER, "qa": examples.QA,
            "pretrainer": (examples.TEXTS, None)}
    for name, model in models.items():
        model.fit(*data[name], batch_size=2, epochs=1, verbose=0)
        assert int(model.optimizer.iterations) == 2, name
    return models


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(folder, this process's predictions): the fitted tasks saved as .keras files."""
    folder = tmp_path_factory.mktemp("tasks")
    results = {}
    for name, model in fitted_tasks().items():
        model.save(folder / f"{name}.keras")
        raw = model.predict(examples.token_ids(masked=name == "pretrainer"), verbose=0)
        results[name] = {"raw": keras.tree.map_structure(lambda a: np.asarray(a).tolist(), raw)}
        if name in examples.PREDICT:
            decoded = model.predict(examples.PREDICT[name], verbose=0)
            results[name]["decoded"] = np.asarray(decoded).tolist() if name in ("classifier", "nli") else decoded
    return folder, json.loads(json.dumps(results))


def test_saved_tasks_predict_the_same_in_a_fresh_process_under_another_backend(saved):
    """A fresh process, `import kbert` alone, the next backend: the same outputs (1e-5) and answers, and the
    `jit_compile` that "auto" means there for a model made there (Keras would save "auto" as what it meant here:
    on JAX, compiled, and torch would then predict under `torch.compile`)."""
    backend = next_backend()
    pytest.importorskip(backend)
    folder, expected = saved
    run_python(HERE / "predict_saved_tasks.py", folder, backend=backend)
    got = json.loads((folder / f"{backend}.json").read_text())
    auto = got.pop("jit_compile_auto")
    for name, outputs in expected.items():
        assert got[name]["compiled_with"] == "BertAdamW", name
        assert got[name]["jit_compile"] == auto, name
        keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5, err_msg=name),
                                 got[name]["raw"], outputs["raw"])
        if "decoded" in outputs:
            assert_same_answers(got[name]["decoded"], outputs["decoded"], name)


def assert_same_answers(got, expected, where):
    """Equal texts, tags and spans; scores and probabilities within 1e-5."""
    if isinstance(expected, dict):
        assert sorted(got) == sorted(expected), where
        for key in expected:
            assert_same_answers(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(got, expected)):
            assert_same_answers(a, b, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert abs(got - expected) <= 1e-5, (where, got, expected)
    else:
        assert got == expected, (where, got, expected)


def test_predict_returns_what_each_task_is_for(saved):
    _, results = saved
    probabilities = np.array(results["classifier"]["decoded"])
    assert probabilities.shape == (2, 2) and np.allclose(probabilities.sum(axis=1), 1)
    text = examples.PREDICT["ner"][0]
    first = results["ner"]["decoded"][0]
    assert first["text"] == text and len(first["tags"]) == 6  # Ann Smith sings in Paris .
    for entity in first["entities"]:
        assert text[entity["start"]:entity["end"]] == entity["text"]
    answer = results["qa"]["decoded"][0]
    context = examples.PREDICT["qa"][1][0]
    assert answer["text"] == context[answer["start"]:answer["end"]] != ""


def test_fit_plans_bert_schedule_over_each_call():
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    texts, labels = examples.SENTIMENT
    initial = [np.array(w) for w in model.trainable_weights]
    model.fit(texts * 5, labels * 5, batch_size=2, epochs=2, verbose=0)  # 10 steps a epoch
    schedule = model.optimizer._learning_rate
    assert (schedule.start_step, schedule.warmup_steps, schedule.total_steps) == (0, 2, 20)
    # The train step read that plan (on TensorFlow the optimizer is built while it traces).
    assert np.array(model.optimizer.fit_plan).tolist() == [0, 2, 20]
    assert max(float(np.abs(np.array(w) - old).max()) for w, old in zip(model.trainable_weights, initial)) > 1e-6
    assert float(model.optimizer.learning_rate) == 0.0  # decayed to 0 at the last step
    train_function = model.train_function
    weights = [np.array(w) for w in model.trainable_weights]
    model.fit(texts, labels, batch_size=2, epochs=1, verbose=0)
    assert (schedule.start_step, schedule.total_steps) == (20, 2)
    assert float(schedule(20 + 1)) == pytest.approx(3e-5 / 2)
    # The new plan reached the train step without a new trace: under the first plan the rate
    # stays 0 after step 20, and no weight would move.
    assert model.train_function is train_function
    moved = max(float(np.abs(np.array(w) - old).max()) for w, old in zip(model.trainable_weights, weights))
    assert moved > 1e-6


def test_fit_plans_the_schedule_in_optimizer_steps_under_gradient_accumulation():
    from kbert.optimizers import bert_adamw

    model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    model.compile(optimizer=bert_adamw(3e-5, total_steps=None, gradient_accumulation_steps=2))
    texts, labels = examples.SENTIMENT
    model.fit(texts * 4, labels * 4, batch_size=2, epochs=1, verbose=0)  # 8 batches, 4 optimizer steps
    assert model.optimizer._learning_rate.total_steps == 4 and int(model.optimizer.iterations) == 4


def test_fit_and_predict_take_a_tf_dataset_of_strings():
    tf = pytest.importorskip("tensorflow")
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)
    texts, labels = examples.SENTIMENT
    data = tf.data.Dataset.from_tensor_slices((texts, [1, 0, 1, 0])).batch(2)
    model.fit(data, epochs=1, verbose=0)
    assert int(model.optimizer.iterations) == 2
    from_dataset = model.predict(tf.data.Dataset.from_tensor_slices(texts).batch(3), verbose=0)
    np.testing.assert_allclose(from_dataset, model.predict(texts, verbose=0), atol=1e-5)


def test_evaluate_on_raw_inputs_as_lists_or_numpy_arrays():
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    texts, labels = examples.SENTIMENT
    loss, accuracy = model.evaluate(texts, labels, verbose=0)
    assert np.isfinite(loss) and 0 <= accuracy <= 1
    assert model.evaluate(np.array(texts), np.array(labels), verbose=0) == pytest.approx([loss, accuracy])
    tokens = model.preprocessor.tokenizer(texts, max_length=128, padding="longest")  # token ids as they are
    assert model.evaluate(tokens, [1, 0, 1, 0], verbose=0) == pytest.approx([loss, accuracy], rel=1e-5)
    model.fit(tokens, [1, 0, 1, 0], batch_size=2, verbose=0)
    assert int(model.optimizer.iterations) == 2


@pytest.mark.parametrize("make_call, message", [
    (lambda m: m.fit(["a", "b"], [0, 2]), "Label 1 is 2, outside the 2 classes"),
    (lambda m: m.fit(["a", "b"], ["pos", "meh"]), "Label 1 is 'meh', not one of"),
    (lambda m: m.fit(["a", None], [0, 1]), r"texts\[1\] is None \(a missing value: drop or fill it\), not a string"),
    (lambda m: m.fit(["a", float("nan")], [0, 1]), r"texts\[1\] is nan \(a missing value"),
    (lambda m: m.fit(["a", "b"], ["pos", None]), r"Label 1 is missing \(None\): drop that example or give its label"),
    (lambda m: m.fit(["a", "b"], [float("nan"), 1]), r"Label 0 is missing \(nan\)"),
    (lambda m: m.fit(["a", 3], [0, 1]), r"texts\[1\] is int, not a string"),
    (lambda m: m.fit((["a", "b"], ["c"]), [0, 1]), "Got 2 texts but 1 pairs"),
])
def test_bad_classifier_inputs_fail_before_any_step(make_call, message):
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    with pytest.raises((ValueError, TypeError), match=message):
        make_call(model)
    assert int(model.optimizer.iterations) == 0


def test_bad_task_inputs_name_the_example():
    qa = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=24)
    with pytest.raises(ValueError, match="Example 1: the answer 'Zoe' is not in its context"):
        qa.fit((["Who?", "Who?"], ["Ann sings.", "Bob runs."]), ["Ann", "Zoe"])
    ner = BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-PER"])
    with pytest.raises(ValueError, match="Example 0: tag 'B-LOC' is not one of"):
        ner.fit([["Ann", "Paris"]], [["B-PER", "B-LOC"]])
    with pytest.raises(ValueError, match="Example 0 has 2 words but 1 tags"):
        ner.fit([["Ann", "sings"]], [["B-PER"]])
    nsp = BertPretrainer.from_preset("bert_tiny")
    with pytest.raises(ValueError, match="predicts the next sentence"):
        nsp.fit(["only texts"])


def test_import_kbert_registers_every_saved_object():
    for name in ("BertAdamW", "WarmupLinearDecay", "BertClassifier", "BertTextClassifierPreprocessor",
                 "BertMaskedLMPreprocessor", "BertQuestionAnswererPreprocessor",
                 "BertTokenClassifierPreprocessor", "BertBackbone"):
        assert keras.saving.get_registered_object(f"kbert>{name}") is getattr(kbert, name)


@pytest.mark.parametrize("task", ["ner", "qa"])
def test_token_tasks_fit_on_a_tf_dataset(task):
    tf = pytest.importorskip("tensorflow")
    if task == "ner":
        model = BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-LOC", "I-LOC", "B-PER", "I-PER"])
        words, tags = examples.NER
        data = tf.data.Dataset.from_tensor_slices((tf.ragged.constant(words), tf.ragged.constant(
            [t.tolist() for t in model.check_labels(tags)])))
    else:
        model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=24)
        (questions, contexts), _ = examples.QA
        data = tf.data.Dataset.from_tensor_slices(((questions, contexts), {
            "text": ["Ann", "Bob", "Paris", "Paris"], "answer_start": [0, 0, 3, 0]}))
    model.fit(data.batch(2), epochs=1, verbose=0)
    assert int(model.optimizer.iterations) == 2
    with pytest.raises(ValueError, match="decodes answers from lists"):
        model.predict(data.batch(2))
