"""TFLite export: a string-in model (tensorflow-text custom ops) and a token-id model (builtins).

Two files, each with one signature named as in the SavedModel (see `kbert.export.serving`):

- `token_ids.tflite` (signature `token_ids`) takes `token_ids`, `segment_ids`, `padding_mask` (int32, batch x
  max_length) and uses TFLite builtin ops only: any LiteRT interpreter runs it. Tokenize
  with the tokenizer's files, shipped beside it: `vocab.txt` (`kbert_core.WordPiece`), ALBERT's `spiece.model`
  (`kbert_core.SentencePiece`) or RoBERTa's `vocab.json` and `merges.txt` (`kbert_core.ByteLevelBPE`).
- `text.tflite` (signature `serving_default`) takes raw UTF-8 strings. Besides builtins it needs the
  tensorflow-text kernels of its tokenizer (`kbert.export.serving.GRAPH_OPS`: WordPiece's FastBertNormalize,
  FastWordpieceTokenizeWithOffsets and TFText>ByteSplitWithOffsets; ALBERT's TFText>FastSentencepieceTokenize),
  registered in the interpreter (`tensorflow_text.tflite_registrar`; in an app, link tensorflow-text's
  TFLite ops). No SELECT_TF_OPS (Flex) op is needed. RoBERTa's byte-level BPE has no op: no text.tflite
  (`kbert.export.serving.text_model_refusal`).

With `metadata=True` a third file, `token_ids_metadata.tflite`, carries TFLite metadata for the
TFLite Task Library and MediaPipe Tasks (`kbert.export.runtimes`).

Quantization (`QUANTIZATIONS`): "none" (float32), "float16" (weights in float16),
"dynamic-int8" (int8 weights, activations quantized on the fly). Full-integer "int8" is
refused (`FULL_INT8_REFUSAL` says why).
"""

import shutil

import numpy as np
import tensorflow as tf

from kbert.export.loading import require_tensorflow_backend
from kbert.export.saved_model import write_export_json, write_saved_model
from kbert.export.serving import GRAPH_OPS, ExportError, serving_functions, text_input_names
from kbert.progress import ProgressLines
from kbert_edge.edge_model import load_interpreter

QUANTIZATIONS = ("none", "float16", "dynamic-int8")
TEXT_FILE, IDS_FILE = "text.tflite", "token_ids.tflite"
FULL_INT8_REFUSAL = (
    "full-integer int8 is not offered: it quantizes the attention logits into one int8 range "
    "with the mask's fill value (about -2.4e38), so every real score rounds to the same level, "
    "attention turns uniform and the model is useless (CoNLL entity F1 0.0 against 83.6 for "
    "fp32, measured on 100 sentences). Use quantize='dynamic-int8': int8 weights, 2.4x faster "
    "than fp32, within 1 point.")


def export_tflite(model, tokenizer, spec, out, quantize="none", text_model=True, metadata=False):
    """Writes `token_ids.tflite` and (unless impossible or `text_model=False`) `text.tflite` to `out`.

    The folder also gets the tokenizer's files (`vocab.txt`, `spiece.model` or `vocab.json` and `merges.txt`),
    `tokenizer_config.json` and `export.json`; it appears
    whole or not at all. Each model is loaded and run on a small batch (an empty string
    among them) before the folder is committed.

    Args:
        model, tokenizer, spec: from `kbert.export.load_exportable`.
        out: path of the folder to write.
        quantize: one of `QUANTIZATIONS`.
        text_model: bool. Also write the string-in model (an ExportError for RoBERTa, whose tokenizer has no op:
            `kbert.export.serving.text_model_refusal`).
        metadata: bool. Also write `token_ids_metadata.tflite` for the TFLite Task Library and
            MediaPipe (`kbert.export.runtimes`); an ExportError says why a model cannot have it.

    Returns: dict of file name -> size in bytes.

    Example (not run here: TensorFlow backend only)::

        export_tflite(*load_exportable("saved_models/sst2"), "exports/sst2_tflite", "dynamic-int8")
    """
    from kbert.saving import atomic_output_folder, remove_leftovers

    require_tensorflow_backend()
    if quantize == "int8":
        raise ExportError(FULL_INT8_REFUSAL)
    if quantize not in QUANTIZATIONS:
        raise ExportError(f"quantize must be one of {QUANTIZATIONS}, got {quantize!r}.")
    functions = serving_functions(model, tokenizer, spec, tflite=True, text_model=text_model)
    if metadata:
        from kbert.export import runtimes

        if reason := runtimes.unsupported(model, tokenizer, spec):
            raise ExportError(f"metadata for the standard runtimes: {reason}.")
        functions[runtimes.SIGNATURE] = runtimes.runtime_function(model, spec)
    sizes = {}
    targets = [(IDS_FILE, "token_ids")] + ([(TEXT_FILE, "serving_default")] if text_model else [])
    targets += [(runtimes.FILE, runtimes.SIGNATURE)] if metadata else []
    # A line every 10 s or more: the SavedModel the converter reads, then each conversion, with the time left.
    progress = ProgressLines(1 + len(targets), f"export to {out}", "stage", every_seconds=10)
    remove_leftovers(out)  # a killed export's .NAME.partial-* folder (25 MB for MiniLM)
    with atomic_output_folder(out) as folder:
        staging = folder / ".saved_model"
        write_saved_model(functions, staging)
        tokenizer.save(folder)
        progress.add()
        for file_name, signature in targets:
            converter = tf.lite.TFLiteConverter.from_saved_model(str(staging), signature_keys=[signature])
            _configure(converter, quantize, signature == "serving_default")
            if metadata and signature == runtimes.SIGNATURE:
                runtimes.configure(converter, quantize)
            try:
                blob = converter.convert()
            except Exception as error:  # the converter raises many types; say which model failed
                raise ExportError(f"TFLite conversion of the {spec.model_kind} {signature} model with "
                                  f"quantize={quantize} failed: {str(error)[-2000:]}") from error
            if metadata and signature == runtimes.SIGNATURE:
                (staging / file_name).write_bytes(blob)
                try:
                    runtimes.write_metadata(staging / file_name, folder / file_name, folder, spec)
                    runtimes.check_runtime_file(folder / file_name, tokenizer, spec)
                except Exception as error:
                    raise ExportError(f"{file_name}: {error}") from error
            else:
                (folder / file_name).write_bytes(blob)
                check_tflite(folder / file_name, tokenizer, spec, text=signature == "serving_default")
            sizes[file_name] = (folder / file_name).stat().st_size
            progress.add()
        shutil.rmtree(staging)
        write_export_json(folder, model, tokenizer, spec, {name: _signature_of(folder / name) for name in sizes},
                          "tflite", quantize=quantize, files=sizes,
                          custom_ops={TEXT_FILE: list(GRAPH_OPS[tokenizer.kind])} if TEXT_FILE in sizes else {})
    return sizes


def _configure(converter, quantize, text):
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = text
    if quantize == "none":
        return
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]


def interpreter(path, num_threads=None):
    """LiteRT's interpreter (ai_edge_litert, what a device runs; tf.lite.Interpreter is deprecated) for `path`,
    with tensorflow-text's ops registered: `kbert_edge.edge_model.load_interpreter`, the edge runner's.

    Example (not run here)::

        runner = interpreter("exports/sst2_tflite/text.tflite").get_signature_runner()
        runner(texts=np.array(["a gripping film"], dtype=object))["label"]
    """
    return load_interpreter(path, text_model=True, num_threads=num_threads)


def check_tflite(path, tokenizer, spec, text):
    """Loads and runs `path` on a small batch; an ExportError says what failed."""
    try:
        runner = interpreter(path).get_signature_runner()
        if text:
            sample = np.array(["", "A short text."], dtype=object)
            runner(**{name: sample for name in text_input_names(spec)})
        else:
            batch = tokenizer(["", "A short text."], max_length=spec.max_length)
            runner(**{key: batch[key] for key in ("token_ids", "segment_ids", "padding_mask")})
    except Exception as error:
        raise ExportError(f"{path.name} was converted but does not run in the TFLite interpreter: "
                          f"{error}") from error


def _signature_of(path):
    (name, details), = interpreter(path).get_signature_list().items()
    return {"signature": name, "inputs": details["inputs"], "outputs": details["outputs"]}
