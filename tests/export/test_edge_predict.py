"""apps/edge_predict.py: LiteRT and kbert_edge only, the Keras model's outputs, text or JSON lines."""

import doctest
import json
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

from kbert.export import export_tflite, load_exportable
from kbert.tasks import BertClassifier
from kbert.training import write_run_folder
from kbert_edge import EdgeModel
from kbert_core.start_up import START_UP_LINE
from tests.conftest import TESTS, app_module
from tests.export.conftest import EDGE_PREDICT, TENSORFLOW_ONLY, edge_module, run_edge_predict, tiny_backbone

pytestmark = TENSORFLOW_ONLY


def test_edge_predict_matches_keras(tmp_path, tokenizer):
    """Both .tflite files of an NLI-style pair classifier, run by apps/edge_predict.py in a process
    where Keras and TensorFlow's Python modules cannot be imported (single texts:
    test_classifier_export.py); JSON lines with --json, a line for people by default."""
    model = BertClassifier(tiny_backbone(), 2, label_names=["no", "yes"])
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "nli", "max_length": 24}, {"loss": [1.0]})
    export_tflite(*load_exportable(tmp_path / "run"), tmp_path / "tflite", quantize="none")
    texts = ["The film was good!", "", "naïve café " * 20]
    second = ["bad", "the film", "fine"]
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(tokenizer(texts, second, max_length=24))))
    labels = [["no", "yes"][i] for i in expected.argmax(-1)]
    args = [*texts] + [arg for pair in second for arg in ("--pair", pair)]
    for name in ("token_ids.tflite", "text.tflite"):
        result = run_edge_predict(tmp_path / "tflite" / name, *args, "--json")
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert lines[1] == {"text": "", "label": None, "note": "empty text: nothing to classify"}  # a blank text
        labeled = [lines[0], lines[2]]
        got = np.array([[line["probabilities"]["no"], line["probabilities"]["yes"]] for line in labeled])
        np.testing.assert_allclose(got, expected[[0, 2]], atol=1e-4)
        assert [line["label"] for line in labeled] == [labels[0], labels[2]]
        assert [line["truncated"] for line in labeled] == [False, True]
        assert "ai-edge-litert is not installed" not in result.stderr
        assert not any(map(START_UP_LINE.match, result.stderr.splitlines())), result.stderr  # only with --verbose
        verbose = run_edge_predict(tmp_path / "tflite" / name, "a", "--pair", "b", "--verbose").stderr.splitlines()
        assert "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." in verbose  # LiteRT's, as it loads
        assert any(line.startswith("I0000 ") for line in verbose) == (name == "text.tflite")  # TensorFlow's library
    people = run_edge_predict(tmp_path / "tflite" / "token_ids.tflite", *args).stdout.splitlines()
    assert [line.split()[0] for line in people] == [labels[0], "-", labels[2]]
    assert [float(people[i].split()[1]) for i in (0, 2)] == [round(p, 3) for p in expected.max(-1)[[0, 2]]]
    assert people[1] == "-   (empty text: nothing to classify)"
    assert people[2].endswith("[truncated]")


def test_the_script_and_kbert_edge_run_copied_side_by_side(tmp_path, tokenizer):
    """The deployable unit: apps/edge_predict.py, kbert_core/ and kbert_edge/ copied into one folder, run from
    elsewhere, import both packages from the copy; and an export.json from before the rename."""
    model = BertClassifier(tiny_backbone(), 2, label_names=["no", "yes"])
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "sentiment", "max_length": 16}, {"loss": [1.0]})
    export_tflite(*load_exportable(tmp_path / "run"), tmp_path / "tflite", quantize="none")
    device = tmp_path / "device"
    device.mkdir()
    shutil.copy(EDGE_PREDICT, device)
    for package in ("kbert_core", "kbert_edge"):
        shutil.copytree(TESTS.parent / package, device / package, ignore=shutil.ignore_patterns("__pycache__"))
    result = run_edge_predict(tmp_path / "tflite" / "token_ids.tflite", "a good film", "--json",
                              script=device / "edge_predict.py", cwd=tmp_path)
    assert result.stderr.splitlines()[-2:] == [f"{package}: {device / package / '__init__.py'}"
                                               for package in ("kbert_core", "kbert_edge")]
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(tokenizer(["a good film"], max_length=16))))
    np.testing.assert_allclose(list(json.loads(result.stdout)["probabilities"].values()), expected[0], atol=1e-4)
    # An export written before "task" was renamed "model_kind" in export.json still runs.
    spec_file = tmp_path / "tflite" / "export.json"
    spec = json.loads(spec_file.read_text())
    assert spec["model_kind"] == "classifier" and "task" not in spec
    spec_file.write_text(json.dumps({("task" if k == "model_kind" else k): v for k, v in spec.items()}))
    old = run_edge_predict(tmp_path / "tflite" / "token_ids.tflite", "a good film", "--json")
    assert json.loads(old.stdout) == json.loads(result.stdout)


def test_docstring_examples():
    result = doctest.testmod(edge_module(), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_a_vocabulary_or_token_ids_beyond_the_model_are_refused(tmp_path, tokenizer):
    """Issue 43: a vocab.txt longer than the model's embeddings (ids past them made LiteRT stop with "gather index
    out of bounds") is refused naming it; so are token ids outside the vocabulary given to the token-id model."""
    model = BertClassifier(tiny_backbone(), 2, label_names=["negative", "positive"])
    write_run_folder(tmp_path / "run", model, tokenizer, {"task": "sentiment", "max_length": 16}, {"loss": [1.0]})
    export_tflite(*load_exportable(tmp_path / "run"), tmp_path / "tflite", text_model=False)
    edge = EdgeModel(tmp_path / "tflite" / "token_ids.tflite")
    assert json.loads((tmp_path / "tflite" / "export.json").read_text())["vocabulary_size"] == len(tokenizer.vocabulary())
    batch = edge.tokenizer.encode(["a good film"], max_length=16)
    batch["token_ids"][0, 2] = len(tokenizer.vocabulary())
    with pytest.raises(ValueError, match=f"Token id {len(tokenizer.vocabulary())} \\(row 0\\) is outside"):
        edge.predict_on_batch(batch)
    vocab = tmp_path / "tflite" / "vocab.txt"
    vocab.write_text(vocab.read_text() + "".join(f"extra{i}\n" for i in range(5)))
    result = subprocess.run([sys.executable, str(EDGE_PREDICT), str(tmp_path / "tflite" / "token_ids.tflite"), "extra3"],
                            capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"edge_predict.py: error: {vocab} holds {len(tokenizer.vocabulary()) + 5} tokens, the model "
        f"{len(tokenizer.vocabulary())}: it is not the vocabulary exported with token_ids.tflite."]
