"""kbert/export/metadata_writer.py, run in the clients' Python on a three-op token-id model: the input
roles, output names and packed files (vocabulary, labels) that the runtimes read."""

import json
import subprocess
import zipfile

import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

from kbert.export import runtimes
from tests.export.conftest import TENSORFLOW_ONLY

pytestmark = [TENSORFLOW_ONLY, pytest.mark.skipif(runtimes.clients_python() is None, reason=(
    "tflite-support's metadata writers are not installed: tools/edge_clients_venv.sh creates .venv-edge-clients"))]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "film", "good"]
LABELS = ["negative", "positive"]
ROLES = {"token_ids": "ids", "segment_ids": "segment_ids", "padding_mask": "mask"}  # the runtimes' BERT input names
# The metadata the file carries, as tflite-support's MetadataDisplayer reads it back.
READ_METADATA = """
import json, sys
from tflite_support import metadata
displayer = metadata.MetadataDisplayer.with_model_file(sys.argv[1])
print(displayer.get_metadata_json())
"""


def tiny_tflite(path, outputs):
    """A TFLite model of batch-1, 4-token int32 inputs `token_ids`, `segment_ids`, `padding_mask` and `outputs`
    float outputs [1, 2] (softmaxes of token counts); returns {input key: tensor name} and {output tensor name:
    output key}, both in the model's order."""

    def model(token_ids, segment_ids, padding_mask):
        counts = tf.cast(tf.stack([tf.reduce_sum(token_ids + segment_ids, 1), tf.reduce_sum(padding_mask, 1)], 1),
                         tf.float32)
        return {name: tf.nn.softmax(counts * (i + 1)) for i, name in enumerate(outputs)}

    signature = [tf.TensorSpec([1, 4], tf.int32, name=key) for key in ("token_ids", "segment_ids", "padding_mask")]
    module = tf.Module()
    module.runtime = tf.function(model, input_signature=signature)
    tf.saved_model.save(module, str(path.with_suffix("")), signatures={"runtime": module.runtime})
    path.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(path.with_suffix(""))).convert())
    interpreter = Interpreter(model_path=str(path))
    runner = interpreter.get_signature_runner()  # the converter's own map of names to tensors
    by_tensor = {d["name"]: key for key, d in runner.get_input_details().items()}
    output_names = {d["name"]: key for key, d in runner.get_output_details().items()}
    return ({by_tensor[d["name"]]: d["name"] for d in interpreter.get_input_details()},
            {d["name"]: output_names[d["name"]] for d in interpreter.get_output_details()})


def write_metadata(tmp_path, model_kind, outputs):
    inputs, output_keys = tiny_tflite(tmp_path / "model.tflite", outputs)
    (tmp_path / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCAB))
    labels = None
    if model_kind == "classifier":
        labels = tmp_path / "labels.txt"
        labels.write_text("".join(f"{label}\n" for label in LABELS))
    request = {"model_kind": model_kind, "model": str(tmp_path / "model.tflite"), "out": str(tmp_path / "out.tflite"),
               "vocab": str(tmp_path / "vocab.txt"), "labels": None if labels is None else str(labels),
               "inputs": {"ids": inputs["token_ids"], "mask": inputs["padding_mask"],
                          "segment_ids": inputs["segment_ids"]},
               "outputs": output_keys}
    (tmp_path / "request.json").write_text(json.dumps(request))
    python = str(runtimes.clients_python())
    subprocess.run([python, str(runtimes.WRITER), str(tmp_path / "request.json")], check=True, capture_output=True)
    read = subprocess.run([python, "-c", READ_METADATA, str(tmp_path / "out.tflite")], check=True,
                          capture_output=True, text=True)
    # Metadata entries follow the model's tensors, in order.
    names = [ROLES[key] for key in inputs], list(output_keys.values())
    return json.loads(read.stdout)["subgraph_metadata"][0], zipfile.ZipFile(tmp_path / "out.tflite"), names


def test_classifier_metadata_names_the_bert_inputs_and_packs_vocabulary_and_labels(tmp_path):
    subgraph, packed, (roles, _) = write_metadata(tmp_path, "classifier", ["probability"])
    assert [tensor["name"] for tensor in subgraph["input_tensor_metadata"]] == roles
    assert [tensor["name"] for tensor in subgraph["output_tensor_metadata"]] == ["probability"]
    assert [f["name"] for f in subgraph["output_tensor_metadata"][0]["associated_files"]] == ["labels.txt"]
    tokenizer = subgraph["input_process_units"][0]
    assert tokenizer["options_type"] == "BertTokenizerOptions"
    assert [f["name"] for f in tokenizer["options"]["vocab_file"]] == ["vocab.txt"]
    assert sorted(packed.namelist()) == ["labels.txt", "vocab.txt"]
    assert packed.read("vocab.txt").decode().splitlines() == VOCAB
    assert packed.read("labels.txt").decode().splitlines() == LABELS


def test_question_answerer_metadata_names_its_outputs_as_the_task_library_looks_them_up(tmp_path):
    subgraph, packed, (roles, outputs) = write_metadata(tmp_path, "question_answerer", ["end_logits", "start_logits"])
    assert [tensor["name"] for tensor in subgraph["input_tensor_metadata"]] == roles
    assert [tensor["name"] for tensor in subgraph["output_tensor_metadata"]] == outputs
    assert sorted(outputs) == ["end_logits", "start_logits"]
    assert subgraph["input_process_units"][0]["options_type"] == "BertTokenizerOptions"
    assert packed.namelist() == ["vocab.txt"] and packed.read("vocab.txt").decode().splitlines() == VOCAB
