"""Quantized NER and QA models beside float32: entity F1 or SQuAD EM/F1, file size and batch-1 latency.

    python benchmarks/quantized_accuracy.py --model saved_models/conll_minilm --data ../shared/data/conll2003/valid.txt
    python benchmarks/quantized_accuracy.py --model saved_models/squad_minilm      # its own held-out articles
    python benchmarks/quantized_accuracy.py --model saved_models/conll_minilm --limit 100 --quantize none dynamic-int8

The run folder (apps/ner.py or apps/qa.py, trained under any backend) is loaded under TensorFlow
by `kbert.export`, and its token-id TFLite model is written once per --quantize to --work
(default: a temporary folder, removed after). The Keras model and each .tflite file are then
scored by the evaluation apps/ner.py and apps/qa.py use: `kbert.recipes.ner.evaluate_sentences` (entity
F1 as conlleval counts it) or `kbert.recipes.qa.evaluate_examples` (official SQuAD v1.1 exact match and
F1). The .tflite files run in apps/edge_predict.py's `EdgeModel` (LiteRT), windows padded to the
model's fixed length. NER data defaults to the run's validation file; QA data is always the
run's held-out articles, carved again from its SQuAD file by `kbert.recipes.qa.run_split` (--data only
points at another copy of that file). Latency: one real window padded to the model's length (batch 1),
median of --repeats calls after --warmup, in this process, on --threads CPU threads.

An engine that fails to export or to run is a row with its error; the others still run.
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

os.environ["KERAS_BACKEND"] = "tensorflow"  # before Keras loads: export needs TensorFlow

import tensorflow as tf  # noqa: E402

from backbone_benchmark import time_calls  # noqa: E402  (benchmarks/ is this script's folder)
from kbert.data.readers.conll import read_conll  # noqa: E402
from kbert.export import QUANTIZATIONS, export_tflite, load_exportable  # noqa: E402
from kbert.recipes import ner as ner_recipe, qa as qa_recipe  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "apps"))
from edge_predict import EdgeModel  # noqa: E402  (apps/edge_predict.py: the LiteRT runner)

ENGINE_NAMES = {"none": "tflite fp32", "float16": "tflite float16", "dynamic-int8": "tflite dynamic-int8"}
KERAS = "keras fp32"


def load_data(args, folder, model, spec):
    """(task, evaluation data, description) of the run folder `folder`."""
    metrics = json.loads((folder / "metrics.json").read_text())
    if spec.model_kind == "token_classifier":
        data = args.data or metrics.get("valid")
        if not data or not pathlib.Path(data).is_file():
            raise SystemExit(f"{folder}: pass --data (a CoNLL file); the run's validation was {data!r}.")
        sentences = read_conll(data, label_names=model.label_names)
        sentences = sentences.take(range(len(sentences))[: args.limit])
        return "ner", sentences, f"{len(sentences)} sentences of {data}"
    if spec.model_kind == "question_answerer":
        _, valid = qa_recipe.run_split(folder, args.data)
        valid = valid[: args.limit]
        return "qa", valid, f"{len(valid)} questions of the run's held-out articles ({metrics['valid']})"
    raise SystemExit(f"{folder}: an NER or QA run folder is needed, got a {spec.model_kind}.")


def evaluate(task, model, runner, data, batch_size):
    """The task's scores, in %, of `model`'s answers with its outputs computed by `runner` (the model, or an
    `EdgeModel` on its export): NER entity F1 (and precision, recall); QA exact match and F1."""
    if task == "ner":
        scores = ner_recipe.evaluate_sentences(model, data, batch_size, runner=runner)
        return {name: 100 * scores[name] for name in ("f1", "precision", "recall")}
    scores, _ = qa_recipe.evaluate_examples(model, data, batch_size, runner=runner)
    return {"exact_match": scores["exact_match"], "f1": scores["f1"]}


def latency_batch(task, tokenizer, spec, data):
    """One real window of the data, padded to the model's length (batch 1)."""
    if task == "ner":
        text = data.texts()[0]
        return tokenizer([text], max_length=spec.max_length, padding="max_length")
    example = data[0]
    return tokenizer([example.question], [example.context], max_length=spec.max_length, padding="max_length",
                     truncation="only_second")


def run_engine(name, runner, model, args, task, data, batch):
    """Scores and batch-1 latency of one engine (`runner`: the Keras `model`, or an `EdgeModel` on its export); an
    exception becomes the row's error."""
    start = time.perf_counter()
    try:
        row = {"engine": name, "metrics": evaluate(task, model, runner, data, args.batch_size)}
        seconds = time.perf_counter() - start
        timing = time_calls(runner.predict_on_batch, batch, args.warmup, args.repeats)
        row["latency_ms"] = 1000 / timing["seq_per_s"]
        row["evaluate_s"] = round(seconds, 1)
    except Exception as error:  # LiteRT and the converter raise many types: report, go on
        row = {"engine": name, "error": f"{type(error).__name__}: {error}"}
    print(f"  {name}: {describe(row)}", flush=True)
    return row


def describe(row):
    if "error" in row:
        return f"failed: {row['error'][:200]}"
    return ", ".join(f"{key} {value:.2f}" for key, value in row["metrics"].items())


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="an NER or QA run folder (apps/ner.py, apps/qa.py)")
    parser.add_argument("--data", help="NER: a CoNLL file (default: the run's validation file); QA: the run's "
                        "SQuAD JSON, if it moved (the held-out articles are always the run's own)")
    parser.add_argument("--quantize", nargs="+", default=list(QUANTIZATIONS), choices=QUANTIZATIONS,
                        help="TFLite models to compare (default: all)")
    parser.add_argument("--limit", type=int, help="score only the first N sentences / questions")
    parser.add_argument("--batch-size", type=int, default=64, help="evaluation batch (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=10, help="timed calls, median (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="CPU threads for TensorFlow and LiteRT (default: %(default)s)")
    parser.add_argument("--work", help="folder for the exports, kept (default: a temporary folder)")
    parser.add_argument("--json-out", help="also write the table as JSON to this file")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    folder = pathlib.Path(args.model)
    model, tokenizer, spec = load_exportable(folder)
    task, data, described = load_data(args, folder, model, spec)
    batch = latency_batch(task, tokenizer, spec, data)
    print(f"{folder}: {spec.model_kind}, {model.count_params() / 1e6:.1f}M parameters, {spec.max_length} tokens per "
          f"window; scored on {described}; latency: batch 1, median of {args.repeats}, {args.threads} thread(s)",
          flush=True)
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="quantized_accuracy-"))
    rows = []
    try:
        rows.append({**run_engine(KERAS, model, model, args, task, data, batch),
                     "size_bytes": (folder / "model.keras").stat().st_size})
        for quantize in args.quantize:
            name, out = ENGINE_NAMES[quantize], work / quantize
            try:
                start = time.perf_counter()
                export_tflite(model, tokenizer, spec, out, quantize, text_model=False)
                export_s = round(time.perf_counter() - start, 1)
                row = run_engine(name, EdgeModel(out / "token_ids.tflite", args.threads), model, args, task, data,
                                 batch)
                row.update(size_bytes=(out / "token_ids.tflite").stat().st_size, export_s=export_s)
            except Exception as error:  # the export failed: say so in the table
                row = {"engine": name, "error": f"{type(error).__name__}: {error}"}
                print(f"  {name}: {describe(row)}", flush=True)
            rows.append({"quantize": quantize, **row})
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    add_comparisons(rows)
    print_table(rows, task, described)
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(
            {"model": str(folder), "task": task, "data": described, "max_length": spec.max_length,
             "threads": args.threads, "rows": rows}, indent=2))


def add_comparisons(rows):
    """Metric deltas (points) against Keras fp32 and TFLite fp32, and speed-up over TFLite fp32."""
    references = {row["engine"]: row for row in rows if "metrics" in row}
    for row in rows:
        if "metrics" not in row:
            continue
        for reference, key in ((KERAS, "delta_vs_keras"), (ENGINE_NAMES["none"], "delta_vs_tflite_fp32")):
            if reference in references:
                row[key] = {m: row["metrics"][m] - references[reference]["metrics"][m] for m in row["metrics"]}
        if ENGINE_NAMES["none"] in references:
            row["speedup_vs_tflite_fp32"] = references[ENGINE_NAMES["none"]]["latency_ms"] / row["latency_ms"]


def print_table(rows, task, described):
    shown = ("f1",) if task == "ner" else ("exact_match", "f1")
    metric = "entity F1" if task == "ner" else "EM / F1"
    cells = lambda values: " / ".join(f"{values[m]:+.2f}" for m in shown)  # noqa: E731
    print(f"\n{metric} (%) on {described}")
    print(f"{'engine':20} {metric:>13} {'vs Keras':>15} {'vs TFLite fp32':>15} {'size MB':>8} "
          f"{'latency ms':>10} {'speed-up':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['engine']:20} failed: {row['error'][:300]}")
            continue
        value = " / ".join(f"{row['metrics'][m]:.2f}" for m in shown)
        versus = [cells(row[key]) if key in row else "" for key in ("delta_vs_keras", "delta_vs_tflite_fp32")]
        speedup = f"{row['speedup_vs_tflite_fp32']:.2f}x" if "speedup_vs_tflite_fp32" in row else ""
        print(f"{row['engine']:20} {value:>13} {versus[0]:>15} {versus[1]:>15} {row['size_bytes'] / 1e6:8.1f} "
              f"{row['latency_ms']:10.2f} {speedup:>8}")
    if any(row["engine"] == KERAS for row in rows):
        print("(the Keras size is model.keras, which may also hold the optimizer's state)")


if __name__ == "__main__":
    main()
