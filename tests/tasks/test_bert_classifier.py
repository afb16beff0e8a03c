import json

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.tasks import BertClassifier
from tests.conftest import TINY, tiny_batch


def test_config_round_trip_keeps_label_names():
    model = BertClassifier(BertBackbone(**TINY), 3, dropout=0.2, label_names=["e", "n", "c"])
    config = model.get_config()
    json.dumps(config)
    again = BertClassifier.from_config(config)
    assert again.get_config() == config and again.label_names == ["e", "n", "c"]


def test_outputs_logits_or_one_score():
    batch = tiny_batch()
    assert tuple(BertClassifier(BertBackbone(**TINY), 3)(batch).shape) == (3, 3)
    regressor = BertClassifier(BertBackbone(**TINY), 1)
    assert regressor.regression and tuple(regressor(batch).shape) == (3, 1)
    with pytest.raises(ValueError, match="2 label_names for num_classes=3"):
        BertClassifier(BertBackbone(**TINY), 3, label_names=["a", "b"])


def test_head_computes_in_float32_under_mixed_precision():
    model = BertClassifier(BertBackbone(**TINY, dtype="mixed_bfloat16"), 2)
    assert model.get_layer("logits").compute_dtype == "float32"
    assert ops.convert_to_numpy(model(tiny_batch())).dtype == np.float32


def test_saved_model_round_trip(tmp_path):
    model = BertClassifier(BertBackbone(**TINY), 2, label_names=["neg", "pos"])
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert isinstance(loaded, BertClassifier) and loaded.label_names == ["neg", "pos"]
    batch = tiny_batch()
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(batch)), ops.convert_to_numpy(model(batch)), atol=1e-6)


def test_predict_on_raw_texts_matches_one_by_one_in_input_order():
    """Served longest first in batches of similar length (jit-compiled shapes on JAX), returned in order."""
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=TINY["max_sequence_length"])
    model = BertClassifier(BertBackbone(**TINY), 3, preprocessor=preprocessor)
    texts = ["", "good " * 10000, "a film", "not very good and boring", "", "fun"]
    one_by_one = np.concatenate([model.predict([text], verbose=0) for text in texts])
    for batch_size in (1, 2, 4, 100):
        np.testing.assert_allclose(model.predict(texts, batch_size=batch_size, verbose=0), one_by_one, atol=1e-5)


def test_duplicate_label_names_are_refused():
    """Issue 43: ["a", "a"] was accepted, and class 1 could never be a target."""
    with pytest.raises(ValueError, match=r"label_names must be distinct: \['a'\] appear more than once in "
                                         r"\['a', 'a', 'b'\]"):
        BertClassifier(BertBackbone(**TINY), num_classes=3, label_names=["a", "a", "b"])


@pytest.mark.parametrize("x, y, message", [
    ([], [], "BertClassifier.fit got no examples: nothing to train on"),
    (["a", "b", "c"], [0, 1], "BertClassifier.fit got 3 examples but 2 labels: give one label per example"),
    (["a", "b"], None, "BertClassifier.fit needs a label for each of its 2 examples (y); got None"),
    ((["a", "b"], ["c", "d"]), [1], "got 2 examples but 1 labels"),
])
def test_fit_refuses_examples_it_cannot_train_on_before_any_step(x, y, message):
    """Issue 43: 3 texts with 2 labels was an IndexError; fit([], []) and fit(texts, None) failed inside Keras."""
    import re

    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer
    from tests.tasks.conftest import VOCABULARY

    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertClassifier(BertBackbone(**TINY), 2, preprocessor=preprocessor)
    with pytest.raises(ValueError, match=re.escape(message)):
        model.fit(x, y, epochs=1, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 0
