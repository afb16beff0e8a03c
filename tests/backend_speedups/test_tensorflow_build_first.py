"""`tensorflow_build_first`: a task's training step traced once, not twice, and trained on the same batches to the
same weights and losses as without it (Keras's own path, which leaves the optimizer's variables to the first
trace)."""

import keras
import numpy as np
import pytest

from kbert import BertClassifier

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="TensorFlow's tracing")

TEXTS = ["a gripping film", "dull and long", "great fun", "boring", "not bad", "a slow start"]
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"]


def fit_and_evaluate(monkeypatch, speedups):
    """(traces of the training and evaluation steps, weights, fit's and evaluate's logs) of a `bert_tiny` classifier
    fitted for 2 epochs of 3 steps on raw texts (batches of different lengths, from kbert's tf.data generator)
    and evaluated, with KBERT_SPEEDUPS=`speedups`."""
    monkeypatch.setenv("KBERT_SPEEDUPS", speedups)
    keras.utils.set_random_seed(0)
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    traces = {"train": 0, "test": 0}

    def counted(name, step):
        def traced(*args):
            traces[name] += 1  # the Python body runs once per trace
            return step(*args)
        return traced

    model.train_step, model.test_step = counted("train", model.train_step), counted("test", model.test_step)
    history = model.fit(TEXTS, LABELS, batch_size=2, epochs=2, shuffle_seed=1, verbose=0)
    logs = model.evaluate(TEXTS, LABELS, batch_size=4, return_dict=True, verbose=0)
    return traces, [keras.ops.convert_to_numpy(w) for w in model.weights], history.history, logs


def test_the_training_step_is_traced_once_and_trains_as_keras_s_own_path(monkeypatch):
    traces, weights, history, logs = fit_and_evaluate(monkeypatch, "all")
    keras_traces, keras_weights, keras_history, keras_logs = fit_and_evaluate(monkeypatch, "-tensorflow_build_first")
    assert traces == {"train": 1, "test": 1}
    assert keras_traces == {"train": 2, "test": 1}  # Keras's path: the optimizer made in the first trace
    for built_first, keras_built in zip(weights, keras_weights, strict=True):
        np.testing.assert_allclose(built_first, keras_built, atol=1e-6)
    np.testing.assert_allclose(history["loss"], keras_history["loss"], atol=1e-6)
    assert logs == pytest.approx(keras_logs, abs=1e-6)
