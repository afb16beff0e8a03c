"""apps/edge_predict.py: LiteRT only, pure-Python WordPiece identical to kbert's tokenizer."""

import json

import keras
import numpy as np

from kbert.export import export_tflite, load_exportable
from kbert.tasks import BertClassifier
from kbert.training.run_folder import write_run_folder
from tests.conftest import run_python
from tests.export.conftest import EDGE_PREDICT, TENSORFLOW_ONLY, TEXTS, edge_module, tiny_backbone

pytestmark = TENSORFLOW_ONLY


def test_pure_python_wordpiece_matches_kbert(minilm_dir):
    from kbert.text import BertTokenizer

    texts = [*TEXTS, "The quick brown fox's \"quote\" (1990-2000) costs $5.99 — e-mail: a@b.com",
             "Ça va?\u200b\x00 naïve café, Straße ΑΒΓ ﬁne №4", "x" * 101 + " " + "é" * 120 + " ok"]
    pairs = [text[::-1] for text in texts]
    tokenizer = BertTokenizer.from_hf(minilm_dir)
    wordpiece = edge_module().WordPiece(minilm_dir / "vocab.txt")
    for truncation in ("longest_first", "only_second"):
        for second in (None, pairs):
            expected = tokenizer(texts, second, max_length=32, truncation=truncation, return_offsets=True)
            got = wordpiece.encode(texts, second, max_length=32, truncation=truncation)
            for key in ("token_ids", "segment_ids", "padding_mask", "offsets", "word_ids"):
                np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{key} {truncation}")


def test_edge_predict_matches_keras(tmp_path, tokenizer):
    """Both .tflite files of an NLI-style pair classifier, run by apps/edge_predict.py in a process
    without TensorFlow's Python modules (single texts: test_classifier_export.py)."""
    pairs = True
    model = BertClassifier(tiny_backbone(), 2, label_names=["no", "yes"])
    metrics = {"task": "nli" if pairs else "sentiment", "max_length": 24}
    write_run_folder(tmp_path / "run", model, tokenizer, metrics, {"loss": [1.0]})
    export_tflite(*load_exportable(tmp_path / "run"), tmp_path / "tflite", quantize="none")
    texts = ["The film was good!", "", "naïve café " * 20]
    second = ["bad", "the film", ""] if pairs else None
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(tokenizer(texts, second, max_length=24))))
    args = [*texts] + [arg for pair in second or [] for arg in ("--pair", pair)]
    for name in ("token_ids.tflite", "text.tflite"):
        result = run_python(EDGE_PREDICT, tmp_path / "tflite" / name, *args)
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        got = np.array([[line["probabilities"]["no"], line["probabilities"]["yes"]] for line in lines])
        np.testing.assert_allclose(got, expected, atol=1e-4)
        assert [line["label"] for line in lines] == [["no", "yes"][i] for i in expected.argmax(-1)]
        assert "ai-edge-litert is not installed" not in result.stderr
