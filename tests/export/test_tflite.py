"""kbert.export.tflite on a hidden-8 classifier: what it refuses, its converter settings, one token-id conversion.

The end-to-end exports (text.tflite and token_ids.tflite of each kind of model, against Keras) are in
test_classifier_export.py and test_token_tasks_export.py.
"""

import json
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.export import ExportError, ExportSpec, export_tflite
from kbert.export.tflite import _configure, check_tflite, interpreter
from tests.export.conftest import SMALL_LABELS, TENSORFLOW_ONLY

pytestmark = TENSORFLOW_ONLY
SPEC = ExportSpec("classifier", 8, label_names=SMALL_LABELS)


def test_unsupported_combinations_say_which_and_why(small_classifier, tokenizer, tmp_path):
    with pytest.raises(ExportError, match="full-integer int8 is not offered.*dynamic-int8"):
        export_tflite(small_classifier, tokenizer, SPEC, tmp_path / "out", quantize="int8")
    with pytest.raises(ExportError, match="quantize must be one of"):
        export_tflite(small_classifier, tokenizer, SPEC, tmp_path / "out", quantize="int4")
    assert list(tmp_path.iterdir()) == []


def converter():
    function = tf.function(lambda x: x + 1.0, input_signature=[tf.TensorSpec([1], tf.float32)])
    return tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], function)


@pytest.mark.parametrize("quantize, text, optimizations, types", [
    ("none", False, [], []), ("none", True, [], []), ("float16", False, [tf.lite.Optimize.DEFAULT], [tf.float16]),
    ("dynamic-int8", True, [tf.lite.Optimize.DEFAULT], [])])
def test_converter_settings(quantize, text, optimizations, types):
    """Builtins only, custom ops (tensorflow-text's) for the text model alone; float16 stores float16 weights."""
    settings = converter()
    _configure(settings, quantize, text)
    assert settings.target_spec.supported_ops == [tf.lite.OpsSet.TFLITE_BUILTINS]
    assert settings.allow_custom_ops is text
    assert list(settings.optimizations) == optimizations and list(settings.target_spec.supported_types) == types


def test_a_file_that_does_not_run_is_an_export_error(tokenizer, tmp_path):
    (tmp_path / "token_ids.tflite").write_bytes(b"not a flatbuffer")
    with pytest.raises(ExportError, match="token_ids.tflite was converted but does not run in the TFLite"):
        check_tflite(tmp_path / "token_ids.tflite", tokenizer, SPEC, text=False)


def test_the_token_id_model_alone(small_classifier, tokenizer, tmp_path):
    """text_model=False: token_ids.tflite (builtins, the Keras probabilities), its vocabulary and export.json."""
    sizes = export_tflite(small_classifier, tokenizer, SPEC, tmp_path / "out", text_model=False)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["export.json", "token_ids.tflite", "tokenizer_config.json",
                                                      "vocab.txt"]
    assert sizes == {"token_ids.tflite": (out / "token_ids.tflite").stat().st_size}
    assert (out / "vocab.txt").read_text().splitlines() == tokenizer.vocabulary()
    export = json.loads((out / "export.json").read_text())
    assert (export["format"], export["quantize"], export["files"], export["custom_ops"]) == (
        "tflite", "none", sizes, {})
    assert (export["model_kind"], export["max_length"], export["label_names"]) == (
        "classifier", 8, list(SMALL_LABELS))
    assert export["signatures"] == {"token_ids.tflite": {
        "signature": "token_ids", "inputs": ["padding_mask", "segment_ids", "token_ids"],
        "outputs": ["logits", "probabilities"]}}
    batch = tokenizer(["the film", "a bad film"], max_length=8)
    logits = keras.ops.convert_to_numpy(small_classifier(batch))
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    got = interpreter(out / "token_ids.tflite").get_signature_runner("token_ids")(**batch)
    np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5)


def test_the_export_check_runs_litert_without_tensorflow_deprecation_warnings(small_classifier, tokenizer, tmp_path):
    """The check of each file and `interpreter` use LiteRT's interpreter (ai_edge_litert), not tf.lite.Interpreter,
    which warns that it is deprecated (the demo's output showed the warning, issue 55); same probabilities."""
    from ai_edge_litert import interpreter as litert

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        export_tflite(small_classifier, tokenizer, SPEC, tmp_path / "out")
        lite = interpreter(tmp_path / "out" / "text.tflite")
    assert isinstance(lite, litert.Interpreter)
    texts = np.array(["the film", "a bad film"], dtype=object)
    batch = tokenizer(list(texts), max_length=8)
    logits = keras.ops.convert_to_numpy(small_classifier(batch))
    np.testing.assert_allclose(lite.get_signature_runner()(texts=texts)["probabilities"],
                               np.exp(logits) / np.exp(logits).sum(-1, keepdims=True), atol=1e-5)
