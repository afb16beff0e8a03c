"""Tiny served models of each kind, built once a session from the bert_tiny preset with random (seeded) weights,
saved as a run folder or a `.keras` file and loaded back by `load_served_model`, as `apps/serve.py` loads them."""

import keras
import pytest

from kbert import BertClassifier, BertPretrainer, BertQuestionAnswerer, BertSentenceEncoder, BertTokenClassifier

SEQUENCE_LENGTH = 32  # short rows: every model answers in milliseconds
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
# name -> (task class, its arguments, saved as a run folder (True) or a .keras file)
SERVED_KINDS = {
    "classifier": (BertClassifier, dict(num_classes=2, label_names=["neg", "pos"]), True),
    "multi_label": (BertClassifier, dict(num_classes=3, label_names=["arts", "sports", "politics"],
                                         multi_label=True), False),
    "regressor": (BertClassifier, dict(num_classes=1), False),
    "nli": (BertClassifier, dict(num_classes=3, label_names=["entailment", "neutral", "contradiction"]), False),
    "token_classifier": (BertTokenClassifier, dict(label_names=NER_LABELS), True),
    "question_answerer": (BertQuestionAnswerer, {}, False),
    "sentence_encoder": (BertSentenceEncoder, {}, False),
    "masked_lm": (BertPretrainer, dict(next_sentence=False), False),
}


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """name of `SERVED_KINDS` -> its `KerasServedModel`, named after its folder or file (the name TF Serving's
    routes take)."""
    from kbert_serving import load_served_model

    keras.utils.set_random_seed(0)
    folder = tmp_path_factory.mktemp("served")
    models = {}
    for name, (task, arguments, run_folder) in SERVED_KINDS.items():
        model = task.from_preset("bert_tiny", sequence_length=SEQUENCE_LENGTH, compile=False, **arguments)
        if name == "masked_lm":  # likeliest tokens apart, so that batching cannot swap them
            bias = model.get_layer("mlm_head").bias
            bias.assign(keras.random.normal(bias.shape, stddev=3.0, seed=0))
        if run_folder:
            (folder / name).mkdir()
            model.save(folder / name / "model.keras")
            models[name] = load_served_model(folder / name)
        else:
            model.save(folder / f"{name}.keras")
            models[name] = load_served_model(folder / f"{name}.keras")
    return models
