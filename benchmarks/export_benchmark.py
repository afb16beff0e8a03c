"""Inference speed, size and accuracy of one trained classifier on every engine it exports to.

    python benchmarks/export_benchmark.py --model saved_models/demo
    python benchmarks/export_benchmark.py --model saved_models/demo --data saved_models/demo/validation.tsv
    python benchmarks/export_benchmark.py --model saved_models/demo --backends tensorflow --repeats 5

Engines: Keras `predict_on_batch` on each backend in --backends; the SavedModel (`tf.saved_model`);
TFLite float32, float16 and dynamic-int8 (`ai-edge-litert`); onnxruntime on Keras's
`model.export(format="onnx")`. The exports are written first, to --work (default: a temporary
folder): SavedModel and TFLite by kbert.export in a TensorFlow-backend process; ONNX in a
torch-backend process (Keras's TensorFlow ONNX path stops at TensorFlow's Erfc, which
kbert/export/onnx.py rewrites: benchmarks/onnx_benchmark.py times that export; Keras's torch
exporter needs static shapes, so there is one .onnx file per batch size).

All engines take the same token ids (the `token_ids` signatures; tokenization is not timed):
batch 1 (latency) and batch 32 (throughput) of real sentences padded to --length tokens. Each
runs in a process of its own, one after another; the figures are medians of --repeats calls
after --warmup calls. Ratios are speed-ups (> 1: faster) over TFLite fp32 and over Keras on the
current backend. With --data (a `sentence<TAB>label` TSV, e.g. the demo's validation.tsv), each
engine's accuracy, so that quantized models can be compared with float32.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from backbone_benchmark import time_calls  # benchmarks/ is this script's folder

INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")
TFLITE = {"tflite_fp32": "none", "tflite_float16": "float16", "tflite_dynamic_int8": "dynamic-int8"}
ENGINES = ("keras", "saved_model", *TFLITE, "onnxruntime")
SENTENCES = ["A gripping, beautifully acted film.", "Dull, long and pointless.", "Not bad at all.",
             "The plot is thin, but the cast carries it."]


# ---------------------------------------------------------------- workers (each in its own process)

def prepare(args, work):
    """TensorFlow backend: SavedModel and TFLite exports, and the token ids every engine runs on."""
    from kbert.data import read_sentence_tsv
    from kbert.export import export_saved_model, export_tflite, load_exportable

    model, tokenizer, spec = load_exportable(args.model, max_length=args.length)
    if spec.model_kind != "classifier" or model.num_classes < 2:
        raise SystemExit(f"{args.model}: a classifier run folder is needed, got a {spec.model_kind}.")
    export_saved_model(model, tokenizer, spec, work / "saved_model")
    for engine, quantize in TFLITE.items():
        export_tflite(model, tokenizer, spec, work / engine, quantize, text_model=False)
    arrays, examples = {}, None
    if args.data:
        examples = read_sentence_tsv(args.data, label_names=model.label_names)
        arrays["eval_labels"] = examples.labels
        for key, value in tokenizer(examples.texts, max_length=spec.max_length).items():
            arrays[f"eval_{key}"] = value
    texts = (examples.texts if examples else SENTENCES) * args.batch_size
    for key, value in tokenizer(texts[: args.batch_size], max_length=spec.max_length).items():
        arrays[f"time_{key}"] = value
    np.savez(work / "inputs.npz", **arrays)
    return {"parameters": model.count_params(), "max_length": spec.max_length,
            "examples": 0 if examples is None else len(examples)}


def export_onnx(args, work):
    """torch backend: one static-shape .onnx file per batch size."""
    import keras

    import kbert  # noqa: F401  (registers kbert's classes for loading)

    model = keras.saving.load_model(pathlib.Path(args.model) / "model.keras", compile=False, safe_mode=True)
    for batch_size in (1, args.batch_size):
        signature = [{key: keras.InputSpec(shape=(batch_size, args.length), dtype="int32", name=key)
                      for key in INPUT_KEYS}]
        model.export(str(work / f"model_b{batch_size}.onnx"), format="onnx", input_signature=signature,
                     verbose=False)
    return {}


def engine_call(engine, args, work, batch_size):
    """A function: dict of int32 arrays (batch_size, length) -> logits, for `engine`."""
    threads = args.threads
    if engine == "keras":
        import keras

        import kbert  # noqa: F401

        backend = keras.config.backend()
        if backend == "tensorflow":
            import tensorflow as tf

            tf.config.threading.set_intra_op_parallelism_threads(threads)
        elif backend == "torch":
            import torch

            torch.set_num_threads(threads)
        model = keras.saving.load_model(pathlib.Path(args.model) / "model.keras", compile=False, safe_mode=True)
        return lambda batch: keras.ops.convert_to_numpy(model.predict_on_batch(batch))
    if engine == "saved_model":
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (the text signature's ops, needed to load)

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        function = tf.saved_model.load(str(work / "saved_model")).signatures["token_ids"]
        return lambda batch: function(**{key: tf.constant(batch[key]) for key in INPUT_KEYS})["logits"].numpy()
    if engine in TFLITE:
        from ai_edge_litert import interpreter as litert

        runner = litert.Interpreter(model_path=str(work / engine / "token_ids.tflite"),
                                    num_threads=threads).get_signature_runner("token_ids")
        return lambda batch: runner(**{key: batch[key] for key in INPUT_KEYS})["logits"]
    if engine == "onnxruntime":
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = onnxruntime.InferenceSession(str(work / f"model_b{batch_size}.onnx"), options,
                                               providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda batch: session.run(None, {name: batch[name] for name in names})[0]
    raise ValueError(f"unknown engine {engine!r}")


def measure(engine, args, work):
    """Latency (batch 1), throughput (batch 32) and, with --data, accuracy of one engine."""
    inputs = np.load(work / "inputs.npz")
    batch = {key: inputs[f"time_{key}"] for key in INPUT_KEYS}
    single = {key: value[:1] for key, value in batch.items()}
    call = engine_call(engine, args, work, 1)
    one = time_calls(call, single, args.warmup, args.repeats)
    if engine == "onnxruntime":  # static shapes: another session for the other batch size
        call = engine_call(engine, args, work, args.batch_size)
    many = time_calls(call, batch, args.warmup, args.repeats)
    result = {"latency_ms": 1000 / one["seq_per_s"], "throughput": many["seq_per_s"],
              "first_call_s": one["first_call_s"]}
    if "eval_labels" in inputs:
        logits = predict_all(call, {key: inputs[f"eval_{key}"] for key in INPUT_KEYS}, args.batch_size)
        result["accuracy"] = float(np.mean(logits.argmax(-1) == inputs["eval_labels"]))
    return result


def predict_all(call, arrays, batch_size):
    """Logits for every row, in batches of exactly `batch_size` (the last one padded by repetition)."""
    count, outputs = len(arrays["token_ids"]), []
    for start in range(0, count, batch_size):
        batch = {key: value[start : start + batch_size] for key, value in arrays.items()}
        size = len(batch["token_ids"])
        batch = {key: np.concatenate([value, np.repeat(value[-1:], batch_size - size, axis=0)])
                 for key, value in batch.items()}
        outputs.append(np.asarray(call(batch))[:size])
    return np.concatenate(outputs)


# ---------------------------------------------------------------- driver

def current_backend():
    """The Keras backend this shell selects, read as Keras reads it, without importing Keras."""
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    config = pathlib.Path(os.environ.get("KERAS_HOME", pathlib.Path.home() / ".keras")) / "keras.json"
    return json.loads(config.read_text()).get("backend", "tensorflow") if config.is_file() else "tensorflow"


def run_worker(task, backend, args, work, script=__file__):
    """`task` of `script` (this benchmark's by default) in a fresh process under `backend`; its JSON result, or None
    (its error printed)."""
    command = [sys.executable, str(script), "--worker", task, "--work", str(work), *args.forwarded]
    result = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend}, capture_output=True, text=True)
    if result.returncode:
        print(f"  {task} ({backend}) failed:\n{result.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def folder_size(path):
    path = pathlib.Path(path)
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="saved_models/demo", help="a classifier run folder (default: %(default)s)")
    parser.add_argument("--data", help="a sentence<TAB>label TSV: report each engine's accuracy on it")
    parser.add_argument("--length", type=int, default=128, help="tokens per input, padded (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="throughput batch (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls, median reported (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="CPU threads for TensorFlow, torch, TFLite and onnxruntime; JAX uses its "
                        "default (default: %(default)s)")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--backends", nargs="+", choices=("tensorflow", "jax", "torch"),
                        help="Keras backends to time (default: all three, the current one first)")
    parser.add_argument("--work", help="folder for the exports (default: a temporary folder, removed after)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.forwarded = ["--model", args.model, "--length", str(args.length), "--batch-size", str(args.batch_size),
                      "--warmup", str(args.warmup), "--repeats", str(args.repeats), "--threads", str(args.threads)]
    if args.data:
        args.forwarded += ["--data", args.data]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        work = pathlib.Path(args.work)
        tasks = {"prepare": prepare, "export_onnx": export_onnx}
        result = tasks[args.worker](args, work) if args.worker in tasks else measure(args.worker, args, work)
        print(json.dumps(result))
        return

    current = current_backend()
    backends = args.backends or [current, *(b for b in ("tensorflow", "jax", "torch") if b != current)]
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="export_benchmark-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(f"Exporting {args.model} to {work} ...", flush=True)
        info = run_worker("prepare", "tensorflow", args, work)
        if info is None:
            sys.exit("The SavedModel / TFLite export failed.")
        if "onnxruntime" in args.engines and run_worker("export_onnx", "torch", args, work) is None:
            args.engines = [e for e in args.engines if e != "onnxruntime"]
        rows = {}
        sizes = {"keras": pathlib.Path(args.model) / "model.keras", "saved_model": work / "saved_model",
                 **{engine: work / engine / "token_ids.tflite" for engine in TFLITE},
                 "onnxruntime": work / f"model_b{args.batch_size}.onnx"}
        print(f"{args.model}: classifier, {info['parameters'] / 1e6:.1f}M parameters; {info['max_length']} "
              f"tokens per input (padded); {args.threads} threads; median of {args.repeats} calls"
              + (f"; accuracy on {info['examples']} sentences of {args.data}" if args.data else ""))
        print(f"  {'engine':22} {'size MB':>8} {'latency b1 ms':>14} {'b{} seq/s'.format(args.batch_size):>10}"
              f" {'accuracy':>9}")
        for engine in args.engines:
            for backend in backends if engine == "keras" else ("tensorflow",):
                name = f"keras {backend}" if engine == "keras" else engine
                result = run_worker(engine, backend, args, work)
                if result is None:
                    continue
                rows[name] = {**result, "size": folder_size(sizes[engine])}
                print(format_row(name, rows[name]), flush=True)
        print_ratios(rows, f"keras {current}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def format_row(name, row):
    accuracy = f"{row['accuracy']:9.4f}" if "accuracy" in row else f"{'':9}"
    return (f"  {name:22} {row['size'] / 1e6:8.1f} {row['latency_ms']:14.2f} {row['throughput']:10.1f} {accuracy}")


def print_ratios(rows, keras_name):
    """Speed-ups of each engine over TFLite fp32 and over Keras on the current backend (> 1: faster)."""
    references = [(name, rows[name]) for name in ("tflite_fp32", keras_name) if name in rows]
    if not references:
        return
    print("\nSpeed-ups (latency b1 / throughput; > 1 is faster):")
    print(f"  {'engine':22}" + "".join(f"  {'vs ' + name:>24}" for name, _ in references))
    for name, row in rows.items():
        cells = [f"{ref['latency_ms'] / row['latency_ms']:5.2f}x / {row['throughput'] / ref['throughput']:5.2f}x"
                 for _, ref in references]
        print(f"  {name:22}" + "".join(f"  {cell:>24}" for cell in cells))


if __name__ == "__main__":
    main()
