"""kbert.export.loading: what `load_exportable` makes of a run folder, a .keras file or a backbone folder;
under JAX or torch, export refuses with a message that says how to run it."""

import keras
import numpy as np
import pytest

from kbert.export import load_exportable
from kbert.export.tflite import export_tflite, interpreter
from kbert.tasks import BertClassifier
from tests.export.conftest import TENSORFLOW_ONLY, TEXTS, small_backbone

LABELS = ["negative", "neutral", "positive"]


def test_other_backends_are_told_to_use_tensorflow(tmp_path):
    if keras.config.backend() == "tensorflow":
        pytest.skip("this checks the message under the other backends")
    with pytest.raises(RuntimeError, match="KERAS_BACKEND=tensorflow"):
        load_exportable(tmp_path)


def write_run(folder, model, tokenizer, metrics):
    from kbert.training import write_run_folder

    write_run_folder(folder, model, tokenizer, metrics, {"loss": [1.0]})
    return folder


@TENSORFLOW_ONLY
def test_a_pair_task_run_exports_two_texts_at_most_the_model_positions(tmp_path, tokenizer):
    """An NLI run of a 16-position model saved with max_length 100: 16 tokens, or fewer when asked."""
    run = write_run(tmp_path / "nli", BertClassifier(small_backbone(16), 3, label_names=LABELS), tokenizer,
                    {"task": "nli", "max_length": 100})
    model, loaded_tokenizer, spec = load_exportable(run)
    assert (spec.model_kind, spec.num_texts, spec.max_length, spec.label_names) == ("classifier", 2, 16, tuple(LABELS))
    assert loaded_tokenizer.vocabulary() == tokenizer.vocabulary() and model.num_classes == 3
    _, _, spec = load_exportable(run, max_length=10, padding="longest", num_texts=1)
    assert (spec.num_texts, spec.max_length, spec.padding) == (1, 10, "longest")


@TENSORFLOW_ONLY
def test_token_classifiers_and_backbones_take_one_text(tmp_path, tokenizer):
    from kbert.saving import save_backbone
    from kbert.tasks import BertTokenClassifier

    run = write_run(tmp_path / "ner", BertTokenClassifier(small_backbone(), ["O", "B-PER"]), tokenizer,
                    {"task": "ner", "max_length": 12})
    _, _, spec = load_exportable(run)
    assert (spec.model_kind, spec.num_texts, spec.max_length, spec.label_names) == (
        "token_classifier", 1, 12, ("O", "B-PER"))
    with pytest.raises(ValueError, match="a token_classifier takes one text per input, not 2"):
        load_exportable(run, num_texts=2)
    (tmp_path / "backbone").mkdir()
    save_backbone(tmp_path / "backbone", small_backbone(32), tokenizer)
    _, _, spec = load_exportable(tmp_path / "backbone")
    assert (spec.model_kind, spec.num_texts, spec.max_length, spec.label_names) == ("backbone", 1, 32, None)


@TENSORFLOW_ONLY
def test_a_question_answerer_exports_its_preprocessor_windows(tmp_path, tokenizer):
    from kbert.tasks import BertQuestionAnswerer, BertQuestionAnswererPreprocessor

    preprocessor = BertQuestionAnswererPreprocessor(tokenizer, 16, doc_stride=5, max_question_length=4)
    BertQuestionAnswerer(small_backbone(), preprocessor).save(tmp_path / "qa.keras")
    _, _, spec = load_exportable(tmp_path / "qa.keras")
    assert (spec.model_kind, spec.num_texts, spec.max_length, spec.doc_stride, spec.max_question_length) == (
        "question_answerer", 2, 16, 5, 4)


@TENSORFLOW_ONLY
def test_a_keras_file_of_the_task_api_exports_with_its_preprocessor(tmp_path, tokenizer):
    from kbert.tasks import BertTextClassifierPreprocessor

    model = BertClassifier(small_backbone(24), 3, label_names=LABELS,
                           preprocessor=BertTextClassifierPreprocessor(tokenizer, sequence_length=20))
    model.save(tmp_path / "sst.keras")
    loaded, loaded_tokenizer, spec = load_exportable(tmp_path / "sst.keras")
    assert spec.max_length == 20 and spec.label_names == tuple(LABELS)
    assert loaded_tokenizer.vocabulary() == tokenizer.vocabulary()
    export_tflite(loaded, loaded_tokenizer, spec, tmp_path / "tflite")
    runner = interpreter(tmp_path / "tflite" / "text.tflite").get_signature_runner()
    expected = model.predict(TEXTS[:4], verbose=0) * np.array([[1], [0], [0], [1]])  # "" and "   ": no label
    got = runner(texts=np.array(TEXTS[:4], dtype=object))["probabilities"]
    np.testing.assert_allclose(got, expected, atol=1e-5)
