"""Export a trained model for serving (SavedModel) or the edge (TFLite), taking raw text.

    python apps/export.py --model saved_models/sst2 --format saved_model --out exports/sst2
    python apps/export.py --model saved_models/conll --format tflite --quantize dynamic-int8 --out exports/conll_tflite
    python apps/export.py --model all_minilm_l6_v2 --format tflite --out exports/minilm   # embeddings
    python apps/export.py --model sst2.keras --format tflite --out exports/sst2_tflite        # model.save(...)
    python apps/export.py --model saved_models/sst2 --format tflite --metadata --out exports/sst2_tflite
    python apps/export.py --model saved_models/sst2 --format onnx --quantize dynamic-int8 --out exports/sst2_onnx

--model takes a .keras file saved by a task model of the Python API (its preprocessor gives the
tokenizer and lengths), a run folder of apps/sentiment.py, nli.py, similarity.py, ner.py or
qa.py, or a backbone (a preset, all_minilm_l6_v2, a folder of apps/pretrain.py or a Hugging Face folder),
trained under any backend. Export runs under TensorFlow: the .keras file is reloaded there
(this script re-runs itself with KERAS_BACKEND=tensorflow when needed). The output folder is
written whole or not at all; an existing --out is replaced only when it is an export folder kbert
wrote (it holds export.json), or with --overwrite, and never when it is, holds or lies in --model's
folder (other than an export folder there). See kbert/export/serving.py for each task's inputs and outputs.
--format onnx writes token_ids.onnx (token ids in, int64, batch and length axes dynamic; kbert/export/onnx.py)
with vocab.txt beside it: onnxruntime-extensions' tokenizer gives other ids than BERT's, so no string-in model.
A RoBERTa model's byte-level BPE has no TensorFlow op, so no string-in model holds it: export it with
--no-text-model (token_ids.tflite, or a SavedModel of the token_ids signature alone, vocab.json and merges.txt
beside; apps/edge_predict.py tokenizes with kbert_core.ByteLevelBPE). ALBERT's text.tflite holds tensorflow-text's
SentencePiece op.
--metadata also writes token_ids_metadata.tflite, which the TFLite Task Library (BertNLClassifier,
BertQuestionAnswerer) and MediaPipe Tasks (TextClassifier, TextEmbedder) load unchanged
(kbert/export/runtimes.py); it needs tools/edge_clients_venv.sh run once.
With --json it prints one object: model, format, out, model_kind, num_texts, max_length, padding,
files ({path: bytes}) and bytes.
"""

import dataclasses
import os
import pathlib
import sys

from app_cli import app_parser, emit, for_people, parse_args
from kbert_core.windows import MAX_WINDOWS


def parser():
    """The argparse parser of this app."""
    parser = app_parser(__doc__)
    parser.add_argument("--model", required=True, help="task .keras file, run folder, backbone folder or preset")
    parser.add_argument("--format", required=True, choices=("saved_model", "tflite", "onnx"), help="what to write")
    parser.add_argument("--out", required=True, help="folder to write (an existing one: only an earlier export)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out even when it is not an export folder (never --model's own folder)")
    parser.add_argument("--quantize", default="none", choices=("none", "float16", "dynamic-int8", "int8"),
                        help="TFLite: float32, float16 weights, or int8 weights with activations "
                        "quantized on the fly; full-integer int8 is refused (it breaks attention); "
                        "ONNX: none or dynamic-int8")
    parser.add_argument("--max-length", type=int, help="tokens per input (default: the run's)")
    parser.add_argument("--padding", default="max_length", choices=("max_length", "longest"),
                        help="pad to --max-length (static shapes) or to the longest input of a batch")
    parser.add_argument("--pairs", action="store_true", help="a classifier over text pairs (NLI); "
                        "default: from the run's task")
    parser.add_argument("--max-windows", type=int, help="NER and QA: most windows the string-in model reads per "
                        f"input (default {MAX_WINDOWS}; longer inputs are flagged truncated); the model reads all "
                        "windows of a batch at once, so this bounds its memory")
    parser.add_argument("--no-text-model", action="store_true", help="the token-id model only (TFLite: "
                        "token_ids.tflite; SavedModel: the token_ids signature); RoBERTa's exports need it")
    parser.add_argument("--metadata", action="store_true", help="TFLite: also token_ids_metadata.tflite, "
                        "with the TFLite metadata the Task Library and MediaPipe read (classifier, QA at "
                        "--max-length 384, backbone; needs tools/edge_clients_venv.sh)")
    return parser


def main(argv=None):
    args = parse_args(parser(), argv)
    if os.environ.get("KERAS_BACKEND") != "tensorflow":
        import keras

        if keras.config.backend() != "tensorflow":
            print(f"Export runs under TensorFlow; this process uses {keras.config.backend()!r}. "
                  "Re-running with KERAS_BACKEND=tensorflow (the .keras file loads there as saved).",
                  file=sys.stderr)
            sys.stdout.flush()
            script = str(pathlib.Path(__file__).resolve())
            os.execve(sys.executable, [sys.executable, script, *(sys.argv[1:] if argv is None else argv)],
                      {**os.environ, "KERAS_BACKEND": "tensorflow"})
    from kbert.export import ExportError, export_saved_model, export_tflite, load_exportable
    from kbert.export.onnx import export_onnx
    from kbert.export.serving import text_model_refusal

    if args.format == "saved_model" and args.quantize != "none":
        sys.exit("--quantize applies to --format tflite and onnx only: a SavedModel keeps float32 weights.")
    if args.format == "onnx" and args.quantize not in ("none", "dynamic-int8"):
        sys.exit(f"--quantize {args.quantize} is not offered for --format onnx: use none or dynamic-int8.")
    if args.format != "tflite" and args.metadata:
        sys.exit("--metadata applies to --format tflite only: it is TFLite metadata.")
    check_out(args)  # before the model is loaded: nothing of the user's is replaced
    with for_people(args):
        try:
            padding = "longest" if args.format == "onnx" else args.padding  # ONNX: the length axis is dynamic
            model, tokenizer, spec = load_exportable(args.model, max_length=args.max_length,
                                                     padding=padding, num_texts=2 if args.pairs else None)
            if args.max_windows is not None:
                spec = dataclasses.replace(spec, max_windows=args.max_windows)
            print(f"{args.model}: {spec.model_kind}, {spec.num_texts} text(s) per input, max_length "
                  f"{spec.max_length}, padding {spec.padding}")
            if args.format != "onnx" and not args.no_text_model and (reason := text_model_refusal(tokenizer)):
                sys.exit(f"export failed: {reason}: pass --no-text-model for the token-ids model alone "
                         "(apps/edge_predict.py tokenizes beside it).")
            if args.format == "saved_model":
                export_saved_model(model, tokenizer, spec, args.out, text_model=not args.no_text_model)
            elif args.format == "onnx":
                export_onnx(model, tokenizer, spec, args.out, args.quantize)
            else:
                export_tflite(model, tokenizer, spec, args.out, args.quantize, text_model=not args.no_text_model,
                              metadata=args.metadata)
        except (ExportError, FileNotFoundError, ValueError) as error:
            sys.exit(f"export failed: {error}")
    files = {str(path.relative_to(args.out)): path.stat().st_size
             for path in sorted(pathlib.Path(args.out).rglob("*")) if path.is_file()}
    total = sum(files.values())
    summary = {"model": args.model, "format": args.format, "out": args.out, "model_kind": spec.model_kind,
               "num_texts": spec.num_texts, "max_length": spec.max_length, "padding": spec.padding,
               "files": files, "bytes": total}

    def describe(summary):
        shown = [name for name in files if name.endswith((".tflite", ".pb", ".onnx")) or "variables.data" in name]
        return "\n".join([*(f"  {name}  {files[name] / 1e6:.2f} MB" for name in shown),
                          f"Wrote {args.out} ({total / 1e6:.2f} MB)"])

    emit(args, [summary], describe)


def check_out(args):
    """Refuses an --out that would replace what the user owns (see the module's docstring), naming it."""
    from kbert.export import is_export_folder
    from kbert.saving import RunFolderError, check_replaceable

    out, model = pathlib.Path(args.out).resolve(), pathlib.Path(args.model).resolve()
    if pathlib.Path(args.model).exists():
        folder = model if model.is_dir() else model.parent
        if out == folder or out in model.parents or (folder in out.parents and out.exists()
                                                     and not is_export_folder(out)):
            raise RunFolderError(f"--out {args.out} is, holds or lies in the folder of --model {args.model}, "
                                 "which export reads: choose a folder outside it.")
    if not args.overwrite:
        check_replaceable(args.out, "an export folder", is_export_folder, "--out")


if __name__ == "__main__":
    from cli_errors import run

    run(main)
