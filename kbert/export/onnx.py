"""ONNX export: the token-ids model for onnxruntime, with the vocabulary beside it.

`token_ids.onnx` is the SavedModel's `token_ids` signature (`kbert.export.serving`), converted by tf2onnx:
inputs `token_ids`, `segment_ids`, `padding_mask` (int64, batch x length: both axes dynamic), outputs the
model's raw outputs and what the signature adds (a classifier's `logits` and `probabilities`, or a regressor's
`score`; NER's per-token `logits` and `probabilities`; QA's `start_logits` and `end_logits`; a backbone's
mean-pooled, L2-normalised `embeddings` and its `sequence_output`). int64, as Hugging Face's ONNX exports and
onnxruntime-extensions' tokenizers give ids. Text is tokenized outside the model, by `kbert_core.WordPiece`
or Hugging Face `tokenizers` on the folder's `vocab.txt` (the same ids as kbert's tokenizer).

No string-in model: onnxruntime-extensions' `BertTokenizer` op gives other ids than BERT's tokenizer where
lower-casing or accent stripping leaves Latin-1 (Pāli, Meštrović, ΣΑΣ, Ёжик, İstanbul), on Hangul, on
punctuation outside ASCII (⟩, ،) and on control and format characters (16 of the tokenizer tests' 40 hard
strings; 240 of the first 5,000 SQuAD paragraphs), and takes one text per call.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from kbert.export.loading import require_tensorflow_backend
from kbert.export.saved_model import write_export_json
from kbert.export.serving import serving_functions
from kbert.export.tflite import ExportError
from kbert.models.bert_backbone import INPUT_KEYS

QUANTIZATIONS = ("none", "dynamic-int8")
MODEL_FILE = "token_ids.onnx"
OPSET = 17
AXES = ("batch", "length")


def export_onnx(model, tokenizer, spec, out, quantize="none"):
    """Writes `token_ids.onnx` (see the module's docstring), `vocab.txt`, `tokenizer_config.json` and
    `export.json` to the folder `out`, which appears whole or not at all.

    The model is run in onnxruntime on a small batch before the folder is committed.

    Args:
        model, tokenizer, spec: from `kbert.export.load_exportable`. The length axis is dynamic whatever
            `spec.padding` says; inputs longer than `spec.max_length` exceed the model's positions.
        out: path of the folder to write.
        quantize: one of `QUANTIZATIONS`: float32 weights, or int8 weights with activations quantized on
            the fly (onnxruntime's `quantize_dynamic`).

    Returns: dict of file name -> size in bytes.

    Example (not run here: TensorFlow backend only)::

        export_onnx(*load_exportable("saved_models/sst2"), "exports/sst2_onnx")
        session = onnxruntime.InferenceSession("exports/sst2_onnx/token_ids.onnx")
    """
    from kbert.saving import atomic_output_folder, remove_leftovers

    require_tensorflow_backend()
    if quantize not in QUANTIZATIONS:
        raise ExportError(f"quantize must be one of {QUANTIZATIONS} for ONNX, got {quantize!r}.")
    spec = dataclasses.replace(spec, padding="longest")
    remove_leftovers(out)
    with atomic_output_folder(out) as folder:
        path = folder / MODEL_FILE
        onnx_model = convert(model, tokenizer, spec)
        if quantize == "none":
            path.write_bytes(onnx_model.SerializeToString())
        else:
            quantize_int8(onnx_model, path)
        signature = check_onnx(path, tokenizer, spec)
        tokenizer.save(folder)
        sizes = {MODEL_FILE: path.stat().st_size}
        write_export_json(folder, model, tokenizer, spec, {MODEL_FILE: signature}, "onnx", quantize=quantize,
                          files=sizes, opset=OPSET)
    return sizes


def convert(model, tokenizer, spec):
    """The `onnx.ModelProto` of the `token_ids` signature with int64 inputs, its axes named `AXES`."""
    import tf2onnx

    ids_function = serving_functions(model, tokenizer, spec, text_model=False)["token_ids"]
    signature = [tf.TensorSpec([None, None], tf.int64, name=key) for key in INPUT_KEYS]

    @tf.function(input_signature=signature)
    def from_int64(token_ids, segment_ids, padding_mask):
        return ids_function(*(tf.cast(ids, tf.int32) for ids in (token_ids, segment_ids, padding_mask)))

    try:
        onnx_model, _ = tf2onnx.convert.from_function(from_int64, input_signature=signature, opset=OPSET,
                                                      custom_op_handlers={"Erfc": (_erfc, [])})
    except Exception as error:  # tf2onnx raises many types; say which model failed
        raise ExportError(f"ONNX conversion of the {spec.model_kind} failed: {str(error)[-2000:]}") from error
    _name_axes(onnx_model)
    return onnx_model


def _erfc(graph, node, name, args):
    """TensorFlow's exact GELU computes erfc, which ONNX lacks: 1 - erf(x)."""
    from tf2onnx import utils

    node.type = "Erf"
    output = node.output[0]
    one = graph.make_const(utils.make_name("one"), np.array(1, utils.map_onnx_to_numpy_type(graph.get_dtype(output))))
    graph.insert_new_node_on_output("Sub", output, inputs=[one.output[0], output])


def _name_axes(onnx_model):
    """Names the dynamic axes: the first of every input and output "batch", the second "length"."""
    for value in [*onnx_model.graph.input, *onnx_model.graph.output]:
        for dim, axis in zip(value.type.tensor_type.shape.dim, AXES):
            if not dim.HasField("dim_value"):
                dim.dim_param = axis


def quantize_int8(onnx_model, path):
    """Writes `onnx_model` to `path` with int8 weights: onnxruntime's `quantize_dynamic` (per tensor), after its
    pre-processing (onnx shape inference, onnxruntime's basic graph optimizations), which the quantizer asks for.
    The pre-processing's symbolic shape inference fails on this graph and is skipped: all-MiniLM-L6-v2's int8
    outputs were the same with and without the pre-processing."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    staging, prepared = path.with_name(".float32.onnx"), path.with_name(".prepared.onnx")
    staging.write_bytes(onnx_model.SerializeToString())
    try:
        quant_pre_process(staging, prepared, skip_symbolic_shape=True)
        quantize_dynamic(prepared, path, weight_type=QuantType.QInt8)
    except Exception as error:  # the quantizer raises many types
        raise ExportError(f"int8 quantization of {path.name} failed: {str(error)[-2000:]}") from error
    finally:
        staging.unlink()
        prepared.unlink(missing_ok=True)


def session(path, num_threads=None):
    """onnxruntime's `InferenceSession` on `path` (CPU), with `num_threads` intra-op threads (default: its own).

    Example (not run here)::

        session("exports/sst2_onnx/token_ids.onnx").run(None, batch)
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = num_threads
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def int64_inputs(batch):
    """The ONNX model's feed from a tokenizer's batch (kbert's and `kbert_core.WordPiece`'s give int32).

    >>> int64_inputs({"token_ids": np.ones((1, 3), "int32"), "segment_ids": np.zeros((1, 3), "int32"),
    ...               "padding_mask": np.ones((1, 3), "int32"), "offsets": None})["token_ids"].dtype
    dtype('int64')
    """
    return {key: np.asarray(batch[key], np.int64) for key in INPUT_KEYS}


def check_onnx(path, tokenizer, spec):
    """Runs `path` in onnxruntime on a small batch; returns its signature (inputs and outputs: dtype and shape)
    for export.json; an ExportError says what failed."""
    try:
        runner = session(path)
        batch = tokenizer(["", "A short text."], ["", "Another one."] if spec.num_texts == 2 else None,
                          max_length=spec.max_length, padding="longest")
        runner.run(None, int64_inputs(batch))
    except Exception as error:
        raise ExportError(f"{path.name} was converted but does not run in onnxruntime: {error}") from error
    return {kind: {value.name: [_dtype_name(value.type), value.shape] for value in values}
            for kind, values in (("inputs", runner.get_inputs()), ("outputs", runner.get_outputs()))}


def _dtype_name(onnx_type):
    """numpy's name of an onnxruntime type: "tensor(float)" -> "float32", "tensor(int64)" -> "int64"."""
    name = onnx_type.removeprefix("tensor(").removesuffix(")")
    return {"float": "float32", "double": "float64"}.get(name, name)

