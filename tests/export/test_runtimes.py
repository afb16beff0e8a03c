"""kbert.export.runtimes: which models can carry runtime metadata, and the `runtime` signature's outputs.

The runtimes themselves (the TFLite Task Library, MediaPipe) run the files in test_runtime_clients.py.
"""

import sys
import types
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.export import ExportError, ExportSpec, export_tflite
from kbert.export import runtimes
from kbert.export.saved_model import write_saved_model
from kbert.tasks import BertClassifier, BertQuestionAnswerer, BertTokenClassifier
from tests.export.conftest import TENSORFLOW_ONLY, numpy_mean_pool, small_backbone, tiny_backbone

pytestmark = TENSORFLOW_ONLY


@pytest.mark.parametrize("model_kind", ["token_classifier", "question_answerer"])
def test_metadata_is_refused_with_the_reason_where_no_runtime_fits(tmp_path, tokenizer, model_kind):
    if model_kind == "token_classifier":
        model, spec, reason = BertTokenClassifier(tiny_backbone(), ["O", "B-PER"]), ExportSpec(model_kind, 24), "NER"
    else:
        model, spec, reason = BertQuestionAnswerer(tiny_backbone()), ExportSpec(model_kind, 64, num_texts=2), "384"
    with pytest.raises(ExportError, match=reason):
        export_tflite(model, tokenizer, spec, tmp_path / "out", metadata=True)
    assert not (tmp_path / "out").exists()


@pytest.fixture
def clients(monkeypatch):
    """This Python stands in for the clients' (`unsupported` only checks that it exists)."""
    monkeypatch.setenv(runtimes.CLIENTS_PYTHON_VARIABLE, sys.executable)


@pytest.mark.parametrize("num_classes, spec, lowercase, reason", [
    (3, ExportSpec("classifier", 24), True, None),
    (3, ExportSpec("backbone", 24), True, None),
    (3, ExportSpec("question_answerer", 384, num_texts=2), True, None),
    (1, ExportSpec("classifier", 24), True, "a regressor has one score"),
    (3, ExportSpec("classifier", 24, num_texts=2), True, "one text per input, not sentence pairs"),
    (3, ExportSpec("question_answerer", 128, num_texts=2), True, "feeds 384 tokens; export with max_length 384"),
    (3, ExportSpec("classifier", 24), False, "this tokenizer is cased")])
def test_what_the_runtimes_cannot_read_is_refused_with_the_reason(clients, num_classes, spec, lowercase, reason):
    model = types.SimpleNamespace(num_classes=num_classes)
    tokenizer = types.SimpleNamespace(lowercase=lowercase, kind="wordpiece")
    got = runtimes.unsupported(model, tokenizer, spec)
    assert got is None if reason is None else reason in got


def test_metadata_is_refused_for_another_tokenizer_than_wordpiece(clients):
    albert = types.SimpleNamespace(lowercase=True, kind="sentence_piece")
    assert runtimes.unsupported(types.SimpleNamespace(num_classes=2), albert, ExportSpec("classifier")) == (
        "the metadata written here names a WordPiece vocab.txt; this model's tokenizer is sentence_piece")


def test_the_clients_python_comes_from_the_variable_or_the_clients_virtualenv(tmp_path, monkeypatch):
    monkeypatch.setenv(runtimes.CLIENTS_PYTHON_VARIABLE, sys.executable)
    assert str(runtimes.clients_python()) == sys.executable
    monkeypatch.setenv(runtimes.CLIENTS_PYTHON_VARIABLE, str(tmp_path / "missing"))
    assert runtimes.clients_python() is None
    monkeypatch.delenv(runtimes.CLIENTS_PYTHON_VARIABLE)
    monkeypatch.setattr(runtimes, "CLIENTS_VENV", tmp_path / ".venv-edge-clients")
    assert runtimes.clients_python() is None
    assert "run tools/edge_clients_venv.sh" in runtimes.unsupported(
        types.SimpleNamespace(num_classes=2), types.SimpleNamespace(lowercase=True, kind="wordpiece"),
        ExportSpec("classifier"))
    (tmp_path / ".venv-edge-clients" / "bin").mkdir(parents=True)
    (tmp_path / ".venv-edge-clients" / "bin" / "python").write_text("")
    assert runtimes.clients_python() == tmp_path / ".venv-edge-clients" / "bin" / "python"


def test_per_tensor_dense_quantization_for_dynamic_int8_only():
    for quantize, expected in (("none", False), ("float16", False), ("dynamic-int8", True)):
        converter = types.SimpleNamespace()
        runtimes.configure(converter, quantize)
        assert getattr(converter, "_experimental_disable_per_channel_quantization_for_dense_layers", False) is expected


def run_signature(model, spec, tokenizer, text="the film was good", pair=None):
    function = runtimes.runtime_function(model, spec)
    assert [(s.name, s.dtype, s.shape.as_list()) for s in function.input_signature] == [
        (key, tf.int32, [1, spec.max_length]) for key in ("token_ids", "segment_ids", "padding_mask")]
    batch = tokenizer([text], None if pair is None else [pair], max_length=spec.max_length)
    outputs = function(*(tf.constant(batch[key]) for key in ("token_ids", "segment_ids", "padding_mask")))
    return batch, {key: value.numpy() for key, value in outputs.items()}


def test_the_runtime_signature_gives_what_each_runtime_reads(tokenizer):
    classifier = BertClassifier(small_backbone(), 3)
    batch, out = run_signature(classifier, ExportSpec("classifier", 12), tokenizer)
    logits = keras.ops.convert_to_numpy(classifier(batch))
    assert sorted(out) == ["probability"]
    np.testing.assert_allclose(out["probability"], np.exp(logits) / np.exp(logits).sum(-1, keepdims=True), atol=1e-5)

    backbone = small_backbone()
    batch, out = run_signature(backbone, ExportSpec("backbone", 12), tokenizer)
    sequence = keras.ops.convert_to_numpy(backbone(batch)["sequence_output"])
    assert sorted(out) == ["embedding"]
    np.testing.assert_allclose(out["embedding"], numpy_mean_pool(sequence, batch["padding_mask"]), atol=1e-5)

    answerer = BertQuestionAnswerer(small_backbone())
    batch, out = run_signature(answerer, ExportSpec("question_answerer", 12, num_texts=2), tokenizer,
                               "who was good", "the film was good")
    expected = {key: keras.ops.convert_to_numpy(value) for key, value in answerer(batch).items()}
    assert sorted(out) == ["end_logits", "start_logits"]
    for key in out:
        np.testing.assert_allclose(out[key], expected[key], atol=1e-5)


def test_the_runtime_file_is_checked_by_litert_without_deprecation_warnings(tokenizer, tmp_path):
    """`check_runtime_file` runs the `runtime` signature in LiteRT's interpreter (ai_edge_litert): the Keras
    probabilities, and no warning (tf.lite.Interpreter warns that it is deprecated; issue 55)."""
    classifier, spec = BertClassifier(small_backbone(), 3), ExportSpec("classifier", 12)
    write_saved_model({runtimes.SIGNATURE: runtimes.runtime_function(classifier, spec)}, tmp_path / "saved")
    path = tmp_path / runtimes.FILE
    path.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(tmp_path / "saved")).convert())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = runtimes.check_runtime_file(path, tokenizer, spec)
    logits = keras.ops.convert_to_numpy(classifier(tokenizer(["A short text."], max_length=12)))
    np.testing.assert_allclose(out["probability"], np.exp(logits) / np.exp(logits).sum(-1, keepdims=True), atol=1e-5)
