"""`token_ids_metadata.tflite`: a token-id model that standard runtimes load unchanged.

The file is the token-id model with one signature (`runtime`, batch 1) whose outputs are what
the runtimes read, and TFLite metadata written by tflite-support's own metadata writers
(`kbert/export/metadata_writer.py`): the BERT input roles ("ids", "mask", "segment_ids"), a
BertTokenizer with `vocab.txt` packed inside, and for classifiers the label file. Runtimes
(`RUNTIMES`), tested in `tests/export/test_runtime_clients.py`:

| model kind | outputs | runtimes |
|---|---|---|
| classifier | `probability` (softmax; a sigmoid per class for a multi-label model) | Task Library `BertNLClassifier`, MediaPipe `TextClassifier` |
| question_answerer | `start_logits`, `end_logits` (384 tokens) | Task Library `BertQuestionAnswerer` |
| backbone | `embedding` (as `BertSentenceEncoder.encode`) | MediaPipe `TextEmbedder` |

With `quantize="dynamic-int8"` the dense layers of this file are quantized per tensor
(`configure`), as the Task Library's runtime needs.

The writers come with PyPI `tflite-support` 0.4.4, which pins protobuf<4 and so lives in its
own virtualenv, `.venv-edge-clients` (`tools/edge_clients_venv.sh` makes it; the environment
variable `KBERT_EDGE_CLIENTS_PYTHON` names another Python that has tflite-support).
"""

import json
import os
import pathlib
import subprocess

import numpy as np
import tensorflow as tf

from kbert.export.serving import class_probabilities, embeddings
from kbert.models.bert_backbone import INPUT_KEYS
from kbert_edge.edge_model import load_interpreter

FILE = "token_ids_metadata.tflite"
SIGNATURE = "runtime"
RUNTIMES = {"classifier": ("TFLite Task Library BertNLClassifier", "MediaPipe TextClassifier"),
            "question_answerer": ("TFLite Task Library BertQuestionAnswerer",),
            "backbone": ("MediaPipe TextEmbedder",)}
# The Task Library's BertQuestionAnswerer pads every input to 384 tokens (kMaxSeqLen).
TASK_LIBRARY_QA_LENGTH = 384
CLIENTS_PYTHON_VARIABLE = "KBERT_EDGE_CLIENTS_PYTHON"
CLIENTS_VENV = pathlib.Path(__file__).resolve().parents[2] / ".venv-edge-clients"
WRITER = pathlib.Path(__file__).with_name("metadata_writer.py")
# Metadata input roles, in kbert's input order (`INPUT_KEYS`: token_ids, segment_ids, padding_mask).
ROLES = {"token_ids": "ids", "segment_ids": "segment_ids", "padding_mask": "mask"}


def clients_python():
    """The Python that has tflite-support: `$KBERT_EDGE_CLIENTS_PYTHON`, else `.venv-edge-clients`'s; or None."""
    python = os.environ.get(CLIENTS_PYTHON_VARIABLE) or CLIENTS_VENV / "bin" / "python"
    return pathlib.Path(python) if pathlib.Path(python).is_file() else None


def unsupported(model, tokenizer, spec):
    """Why `model` cannot carry runtime metadata, or None when it can.

    Example:
    >>> from kbert.export.serving import ExportSpec
    >>> unsupported(None, None, ExportSpec("token_classifier"))
    'no standard runtime runs a BERT token classifier (NER): the TFLite Task Library and MediaPipe have none'
    """
    if spec.model_kind not in RUNTIMES:
        return ("no standard runtime runs a BERT token classifier (NER): the TFLite Task Library and "
                "MediaPipe have none")
    if spec.model_kind == "classifier" and model.num_classes == 1:
        return "the runtimes' BERT classifiers read class probabilities; a regressor has one score"
    if spec.num_texts != (2 if spec.model_kind == "question_answerer" else 1):
        return "the runtimes' BERT classifiers read one text per input, not sentence pairs"
    if spec.model_kind == "question_answerer" and spec.max_length != TASK_LIBRARY_QA_LENGTH:
        return (f"the Task Library's BertQuestionAnswerer feeds {TASK_LIBRARY_QA_LENGTH} tokens; export "
                f"with max_length {TASK_LIBRARY_QA_LENGTH} (this model: {spec.max_length})")
    if tokenizer.kind != "wordpiece":
        return f"the metadata written here names a WordPiece vocab.txt; this model's tokenizer is {tokenizer.kind}"
    if not tokenizer.lowercase:
        return "the runtimes' BertTokenizer lowercases its input; this tokenizer is cased"
    if clients_python() is None:
        return (f"tflite-support's metadata writers are not installed: run tools/edge_clients_venv.sh "
                f"(creates {CLIENTS_VENV.name}) or set {CLIENTS_PYTHON_VARIABLE}")
    return None


def runtime_function(model, spec):
    """The `runtime` signature: token ids (batch 1, `spec.max_length`) -> the outputs the runtimes read."""

    def runtime(token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        outputs = model(inputs, training=False)
        if spec.model_kind == "classifier":
            return {"probability": class_probabilities(outputs, spec)}
        if spec.model_kind == "backbone":
            return {"embedding": embeddings(outputs, inputs)}
        return {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}

    signature = [tf.TensorSpec([1, spec.max_length], tf.int32, name=key) for key in INPUT_KEYS]
    return tf.function(runtime, input_signature=signature)


def configure(converter, quantize):
    """Dynamic-int8 quantizes dense layers per tensor, not per channel, in this file.

    Per-channel hybrid dense layers are FULLY_CONNECTED version 12, which the Task Library's
    runtime (tflite-support 0.4.4) does not have; per tensor they are version 9, which it runs.
    """
    if quantize == "dynamic-int8":
        converter._experimental_disable_per_channel_quantization_for_dense_layers = True


def write_metadata(model_path, out, folder, spec):
    """Writes `model_path` with metadata to `out` through `metadata_writer.py` in the clients' Python.

    `folder` holds `vocab.txt` (and receives `labels.txt` for a classifier, packed into the
    file and then removed). Raises a RuntimeError with the writer's message if it fails.
    """
    interpreter = load_interpreter(model_path, text_model=False)
    runner = interpreter.get_signature_runner(SIGNATURE)
    inputs = {ROLES[key]: details["name"] for key, details in runner.get_input_details().items()}
    outputs = {details["name"]: key for key, details in runner.get_output_details().items()}
    labels = folder / "labels.txt"
    if spec.model_kind == "classifier":
        classes = runner.get_output_details()["probability"]["shape"][-1]
        labels.write_text("".join(f"{name}\n" for name in spec.label_names or map(str, range(classes))))
    request = folder / "metadata_request.json"
    request.write_text(json.dumps({"model_kind": spec.model_kind, "model": str(model_path), "out": str(out),
                                   "vocab": str(folder / "vocab.txt"),
                                   "labels": str(labels) if labels.exists() else None,
                                   "inputs": inputs, "outputs": outputs}))
    try:
        result = subprocess.run([str(clients_python()), str(WRITER), str(request)], capture_output=True, text=True)
    finally:
        request.unlink()
        labels.unlink(missing_ok=True)
    if result.returncode:
        raise RuntimeError(f"the metadata writer failed: {result.stderr[-2000:]}")


def check_runtime_file(path, tokenizer, spec):
    """Runs `path`'s `runtime` signature on one input in LiteRT's interpreter (as the runtimes do); returns its
    outputs."""
    batch = tokenizer(["A short text."], max_length=spec.max_length)
    runner = load_interpreter(path, text_model=False).get_signature_runner(SIGNATURE)
    return runner(**{key: np.asarray(batch[key], np.int32) for key in INPUT_KEYS})
