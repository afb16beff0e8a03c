"""kbert.tasks.raw_datasets: a tf.data.Dataset of raw inputs that fit or evaluate cannot train on is refused before
any step, naming what was expected; a class id out of range stops at its batch (issue 43)."""

import pytest

from kbert.tasks import BertClassifier
from tests.tasks import task_examples as examples

# Issue 43: each ended in a TensorFlow error from inside the graph, or (class 5 under JAX) trained on.
BAD_DATASETS = [
    (lambda tf, texts: tf.data.Dataset.from_tensor_slices((texts, tf.one_hot([1, 0, 1, 0], 2))),
     r"one label per example, batches of shape \(batch,\) or \(batch, 1\); this one's labels have shape \(None, 2\) "
     r"\(one-hot\? give class ids: tf.argmax\(labels, -1\)\)"),
    (lambda tf, texts: tf.data.Dataset.from_tensor_slices(([1, 2, 3, 4], [1, 0, 1, 0])),
     "reads raw text, but this one yields int32 inputs"),
    (lambda tf, texts: tf.data.Dataset.from_tensor_slices(texts), "needs \\(inputs, labels\\) elements"),
    (lambda tf, texts: tf.data.Dataset.from_tensor_slices((texts, ["pos", "neg", "pos", "neg"])),
     "takes labels as class ids; this one's are string: map label names to ids first"),
]


@pytest.mark.parametrize("make_dataset, message", BAD_DATASETS, ids=["one-hot", "integers", "no labels", "names"])
def test_a_tf_dataset_that_cannot_train_the_classifier_is_refused_before_any_step(make_dataset, message):
    tf = pytest.importorskip("tensorflow")
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)
    texts, _ = examples.SENTIMENT
    with pytest.raises(ValueError, match=message):
        model.fit(make_dataset(tf, texts).batch(2), verbose=0)
    with pytest.raises(ValueError, match="takes batches, but this one yields single examples"):
        model.fit(tf.data.Dataset.from_tensor_slices((texts, [1, 0, 1, 0])), verbose=0)
    assert int(model.optimizer.iterations) == 0


def test_a_class_id_out_of_range_in_a_tf_dataset_stops_training_naming_the_range():
    tf = pytest.importorskip("tensorflow")
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)
    texts, _ = examples.SENTIMENT
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"class ids must be whole numbers in \[0, 2\)"):
        model.fit(tf.data.Dataset.from_tensor_slices((texts, [0, 1, 5, 0])).batch(2), verbose=0)
    model.fit(tf.data.Dataset.from_tensor_slices((texts, [0.0, 1.0, 1.0, 0.0])).batch(2), verbose=0)  # as Keras takes
