"""`tensorflow_open_predict`: a task's predict function traced once for raw inputs served in batches of several
sizes and lengths, not once per shape as Keras traces it, with the same outputs; traced afresh once when a new
compile makes Keras drop its predict function."""

import keras
import numpy as np
import pytest

from kbert import BertClassifier, BertTokenClassifier

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="TensorFlow's tracing")

# 5 texts in batches of 2 (longest first): lengths 7, then 4, then a last batch of one row
TEXTS = ["a gripping film from start to end", "dull", "great fun", "not bad at all", "fine"]
WORDS = [text.split() for text in TEXTS]


def predicted(monkeypatch, speedups, make_model, x):
    """(traces of the predict step before and after a second compile, outputs of each predict) with
    KBERT_SPEEDUPS=`speedups`."""
    monkeypatch.setenv("KBERT_SPEEDUPS", speedups)
    keras.utils.set_random_seed(0)
    model = make_model()
    traces = []
    step = model.predict_step

    def counted(*args):
        traces.append(1)  # the Python body runs once per trace
        return step(*args)

    model.predict_step = counted
    first = model.predict(x, batch_size=2, verbose=0)
    before = len(traces)
    model.compile()  # Keras drops its predict function
    second = model.predict(x, batch_size=2, verbose=0)
    return (before, len(traces) - before), first, second


@pytest.mark.parametrize("make_model, x", [
    (lambda: BertClassifier.from_preset("bert_tiny", num_classes=2), TEXTS),
    (lambda: BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-X", "I-X"]), WORDS)],
    ids=["classifier", "token_classifier"])
def test_predict_traces_once_per_predict_function_with_keras_s_outputs(monkeypatch, make_model, x):
    traces, first, second = predicted(monkeypatch, "all", make_model, x)
    keras_traces, keras_first, keras_second = predicted(monkeypatch, "-tensorflow_open_predict", make_model, x)
    assert traces == (1, 1)
    assert keras_traces == (3, 3)  # Keras's: (2, 7), then (2, None), then (None, None) for the last row
    assert sum(np.size(value) for value in keras.tree.flatten(first)) >= len(x)  # not nothing compared: the
    # probabilities, or the entities an untrained head finds
    for ours, keras_s in [(first, keras_first), (second, keras_second)]:
        for one, other in zip(keras.tree.flatten(ours), keras.tree.flatten(keras_s), strict=True):
            if isinstance(one, str):  # an entity's words or label
                assert one == other
            else:  # probabilities; an entity's score and offsets
                np.testing.assert_allclose(one, other, atol=1e-6)
