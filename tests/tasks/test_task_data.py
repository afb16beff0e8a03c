"""kbert.tasks.task_data: which inputs a task takes as they are, the raw inputs refused before any step, the batches
of raw inputs and the steps of an epoch. Through the tasks' own fit, evaluate and predict: test_task_api.py."""

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.tasks import BertClassifier, BertTokenClassifier
from kbert.tasks import task_data
from tests.conftest import TINY, tiny_batch


@pytest.fixture(scope="module")
def classifier():
    return BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)


def test_token_ids_and_models_without_a_preprocessor_take_their_inputs_as_they_are(classifier):
    assert task_data.takes_as_is(classifier, tiny_batch())
    assert not task_data.takes_as_is(classifier, ["a film"]) and not task_data.takes_as_is(classifier, ("a", "b"))
    assert task_data.takes_as_is(BertTokenClassifier(BertBackbone(**TINY), ["O", "B-X"]), ["a film"])


@pytest.mark.parametrize("x, y, message", [
    ([], [], "BertClassifier.fit got no examples"),
    (["a", "b"], None, "needs a label for each of its 2 examples"),
    ((["a", "b", "c"], ["d", "e", "f"]), [0, 1], "got 3 examples but 2 labels"),
])
def test_raw_inputs_fit_cannot_train_on_are_refused(classifier, x, y, message):
    with pytest.raises(ValueError, match=message):
        task_data.check_examples(classifier, x, y)


def test_raw_inputs_become_padded_batches_of_token_ids(classifier):
    data, batches = task_data.raw_batches(classifier, ["a film", "a much longer film than that", "b"], [0, 1, 0],
                                          None, batch_size=2)
    assert len(batches) == 2 and task_data.steps_per_epoch(data, None, None) == 2
    x, y = batches[0][:2]
    assert sorted(x) == ["padding_mask", "segment_ids", "token_ids"] and len(y) == 2


def test_a_dataset_carries_its_own_labels_and_batches(classifier):
    tf = pytest.importorskip("tensorflow")
    data = tf.data.Dataset.from_tensor_slices((["a", "b"], [0, 1])).batch(2)
    with pytest.raises(ValueError, match="carries its own labels, weights and batches"):
        task_data.raw_batches(classifier, data, [0, 1], None, None)
    assert task_data.steps_per_epoch(task_data.raw_batches(classifier, data, None, None, None)[0], None, None) == 1


def test_steps_of_an_epoch_of_arrays_or_a_pydataset():
    assert task_data.steps_per_epoch(None, {"token_ids": np.zeros((70, 4))}, 32) == 3
    assert task_data.steps_per_epoch(None, np.zeros((70, 4)), None) == -(-70 // 32)  # the default batch size

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 5

    assert task_data.steps_per_epoch(Batches(), None, 32) == 5


def test_initial_batch_resumes_an_epoch_of_raw_inputs_only(classifier):
    arguments = dict(x=["a", "b"], y=[0, 1], batch_size=None, epochs=2, validation_data=None, sample_weight=None,
                     shuffle=True)
    with pytest.raises(ValueError, match="trains the rest of one epoch: fit it with epochs=initial_epoch \\+ 1"):
        task_data.fit_arguments(classifier, arguments, initial_batch=1)
    with pytest.raises(ValueError, match="initial_batch resumes raw inputs"):
        task_data.fit_arguments(classifier, {**arguments, "x": tiny_batch(), "epochs": 1}, initial_batch=1)
    fitted = task_data.fit_arguments(classifier, arguments)
    assert (fitted["y"], fitted["shuffle"], len(fitted["callbacks"])) == (None, False, 1)  # the batches shuffle


def test_validation_split_holds_out_the_last_raw_examples_as_keras_splits_arrays():
    """Keras's rule: the last `validation_split` of the examples validate, the training part rounded down."""
    keras.utils.set_random_seed(2)
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16, dropout=0.0)
    texts = [f"film number {i} {'good' if i % 2 else 'bad'}" for i in range(10)]
    labels = [i % 2 for i in range(10)]
    steps = []
    counting = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: steps.append(batch))
    history = model.fit(texts, labels, validation_split=0.25, batch_size=1, epochs=1, verbose=0, callbacks=[counting])
    assert len(steps) == 7  # floor(10 x 0.75)
    held_out = model.evaluate(texts[7:], labels[7:], verbose=0, return_dict=True)
    assert history.history["val_loss"][0] == pytest.approx(held_out["loss"], abs=1e-5)
    assert history.history["val_loss"][0] != pytest.approx(model.evaluate(texts[:3], labels[:3], verbose=0)[0],
                                                           abs=1e-5)
    pairs = (texts, texts[::-1])
    assert "val_loss" in model.fit(pairs, labels, validation_split=0.5, epochs=1, verbose=0).history
    tagger = BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-X"], sequence_length=16)
    assert "val_loss" in tagger.fit([["a", "b"], ["c"]], [["O", "B-X"], ["B-X"]], validation_split=0.5,
                                    verbose=0).history


def test_a_validation_split_that_cannot_be_made_is_refused(classifier):
    import tensorflow as tf

    with pytest.raises(ValueError, match="validation_split=0.95 cannot split 10 examples into a training and a "):
        classifier.fit(["a film"] * 10, [0, 1] * 5, validation_split=0.95, verbose=0)  # 0 to train on
    with pytest.raises(ValueError, match="a tf.data.Dataset's validation set is another dataset"):
        classifier.fit(tf.data.Dataset.from_tensor_slices((["a"], [0])).batch(1), validation_split=0.5, verbose=0)


def test_sample_weights_given_as_a_list_weigh_each_raw_example(classifier):
    """Keras's weighted loss, the mean over the examples of weight x cross-entropy, computed here from the logits;
    a list (what a pandas Series becomes) as an array."""
    texts, labels, weights = ["a good film", "dull", "fine fun", "awful"], [1, 0, 1, 0], [1.0, 0.0, 2.0, 0.5]
    logits = classifier.logits(texts).astype("float64")
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = np.mean(np.array(weights) * -log_probabilities[np.arange(4), labels])
    loss = classifier.evaluate(texts, labels, sample_weight=weights, verbose=0, return_dict=True)["loss"]
    assert loss == pytest.approx(expected, rel=1e-5)
    assert "loss" in classifier.fit(texts, labels, sample_weight=weights, verbose=0).history
    with pytest.raises(ValueError, match=r"sample_weight has shape \(3,\): give one weight per example \(4,\)"):
        classifier.fit(texts, labels, sample_weight=weights[:3], verbose=0)
    with pytest.raises(ValueError, match="sample_weight 1 is not finite"):
        classifier.evaluate(texts, labels, sample_weight=[1, np.nan, 1, 1], verbose=0)


def test_a_generator_and_raw_inputs_to_the_on_batch_calls_are_refused_naming_what_takes_them(classifier):
    batches = ((["a film"], [0]) for _ in range(2))
    with pytest.raises(ValueError, match="BertClassifier.fit got a generator, which it cannot count or read twice: "
                                         r".*tf.data.Dataset.from_generator"):
        classifier.fit(batches, verbose=0)
    for call, instead, arguments in [("predict_on_batch", "predict", ()), ("train_on_batch", "fit", ([0],)),
                                     ("test_on_batch", "evaluate", ([0],))]:
        with pytest.raises(ValueError, match=rf"BertClassifier.{call} takes a batch of token ids, .*raw inputs go to "
                                             rf"{instead}\."):
            getattr(classifier, call)(["a film"], *arguments)
    ids = classifier.preprocessor.prepare(["a film"]).inputs
    assert classifier.predict_on_batch(ids).shape == (1, 2)
    assert np.isfinite(classifier.test_on_batch(ids, np.array([0]))).all()
