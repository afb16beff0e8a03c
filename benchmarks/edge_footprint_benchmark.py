"""What each edge path needs installed, how fast it answers first, and dynamic-int8 against fp32 (issue 23).

    python benchmarks/edge_footprint_benchmark.py --sizes-only      # packages and megabytes only, nothing timed
    python benchmarks/edge_footprint_benchmark.py                   # the whole table, on a quiet machine
    python benchmarks/edge_footprint_benchmark.py --classifier saved_models/sst2 --ner "" --qa "" --backbone ""

Edge paths (`PATHS`), each run on what its runtime takes:
- `litert_token_ids`: `token_ids.tflite` and kbert_core's pure-Python WordPiece, windows and
  decoding (`kbert_edge.EdgeModel`, as apps/edge_predict.py) on ai-edge-litert and numpy;
- `litert_text`: `text.tflite` with tensorflow-text's TFLite kernels (`EdgeModel` loads them from
  the tensorflow-text and tensorflow wheels), on ai-edge-litert;
- `mediapipe`: `token_ids_metadata.tflite` in MediaPipe `TextClassifier` / `TextEmbedder`;
- `task_library`: `token_ids_metadata.tflite` in the TFLite Task Library `BertNLClassifier` /
  `BertQuestionAnswerer` (a 384-token export: the only length it feeds).
The last two run in `.venv-edge-clients` (tools/edge_clients_venv.sh).

Footprint: each path's packages with their dependency closure (`Requires-Dist` without extras,
as pip installs them), measured in the virtualenv it runs from: the bytes of the files each
distribution's RECORD lists. Cold start: a fresh process per path and task that imports the
runtime, loads the model and answers one input (`import s`, `load + first s`; `process s` is
the whole process, Python's own start included, seen from here). Latency: batch 1, median of
--repeats calls on that input after --warmup. Ratios are against `litert_token_ids` in the same
run (> 1: that path is slower or bigger).

Quantization: batch-1 latency of `token_ids.tflite` in dynamic-int8 against fp32, each in a
fresh process on --threads threads, on the same inputs: one full window of --length tokens for
every task, and for NER and QA a --long-chars character text read through all its windows
(`EdgeModel.predict` / `answer_question`, one window per call). Accuracy of the same two files
is `benchmarks/quantized_accuracy.py`'s (NER entity F1, SQuAD F1; --accuracy runs it) and
`benchmarks/export_benchmark.py --data`'s (SST-2 accuracy); the commands are printed.

Aims (issue 23): `litert_token_ids` needs ai-edge-litert + numpy only and answers its first
prediction in under 1 s; dynamic-int8 at least 2x fp32 on 2 threads, accuracy within 1 point.
Models default to the run folders of docs/results.md; pass "" to leave a task out. This file
imports the standard library only at the top: its workers also run in .venv-edge-clients.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
KBERT_PYTHON = ROOT / ".venv" / "bin" / "python"
CLIENTS_PYTHON = ROOT / ".venv-edge-clients" / "bin" / "python"
TASKS = ("classifier", "backbone", "token_classifier", "question_answerer")
# path -> (model file, the virtualenv's Python, the packages it installs, the tasks it serves)
PATHS = {
    "litert_token_ids": ("token_ids.tflite", KBERT_PYTHON, ("ai-edge-litert", "numpy"), TASKS),
    "litert_text": ("text.tflite", KBERT_PYTHON, ("ai-edge-litert", "numpy", "tensorflow-text"), TASKS),
    "mediapipe": ("token_ids_metadata.tflite", CLIENTS_PYTHON, ("mediapipe",), ("classifier", "backbone")),
    "task_library": ("token_ids_metadata.tflite", CLIENTS_PYTHON, ("tflite-support",),
                     ("classifier", "question_answerer")),
}
REFERENCE = "litert_token_ids"
TASK_LIBRARY_QA_LENGTH = 384  # kbert.export.runtimes.TASK_LIBRARY_QA_LENGTH (not imported: no TensorFlow here)
QUANTIZE = ("none", "dynamic-int8")
SENTENCE = "Angela Merkel visited Paris, and the film she saw there was gripping and beautifully acted."
QUESTION = "Who visited Paris?"
PARAGRAPH = ("Angela Merkel visited Paris in the spring, where she met the French president at the Elysee "
             "Palace. The two leaders discussed trade, energy and the future of the European Union, and "
             "later watched a film about the history of the city. Critics called the film gripping, "
             "though some found its second half long and dull. ")


def long_text(chars):
    """PARAGRAPH repeated and cut to `chars` characters, at a word boundary."""
    text = PARAGRAPH * (chars // len(PARAGRAPH) + 1)
    return text[: text.rfind(" ", 0, chars)]


# ---------------------------------------------------------------- workers (each in a fresh process)

def installed_sizes(packages):
    """This Python's distributions needed by `packages` (their Requires-Dist closure, no extras): {name: bytes}."""
    import importlib.metadata as metadata

    def requirement_names(name):
        names = []
        for line in metadata.requires(name) or []:
            requirement, _, marker = line.partition(";")
            if "extra" in marker:  # extras are not installed by a plain `pip install name`
                continue
            if marker.strip() and not _marker_holds(marker):
                continue
            names.append(re.split(r"[\s<>=!~;(\[]", requirement.strip(), maxsplit=1)[0])
        return names

    sizes, missing, todo = {}, [], list(packages)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in sizes or name in missing:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        sizes[name] = sum(path.stat().st_size for path in map(dist.locate_file, dist.files or [])
                          if path.is_file())
        todo += requirement_names(name)
    return {"sizes": sizes, "missing": missing, "python": sys.version.split()[0]}


def _marker_holds(marker):
    try:
        from packaging.markers import Marker
    except ImportError:  # no packaging here: count the requirement
        return True
    return Marker(marker).evaluate({"extra": ""})


def export_models(args, work):
    """TensorFlow backend (kbert's Python): fp32 and dynamic-int8 exports of every task given."""
    os.environ["KERAS_BACKEND"] = "tensorflow"
    sys.path.insert(0, str(ROOT))
    import dataclasses

    from kbert.export import ExportError, export_tflite, load_exportable
    from kbert.export import runtimes

    done = {}
    for task, source in models(args).items():
        try:
            model, tokenizer, spec = load_exportable(source, max_length=args.length)
            metadata = task in ("classifier", "backbone") and runtimes.unsupported(model, tokenizer, spec) is None
            for quantize in QUANTIZE:
                export_tflite(model, tokenizer, spec, work / task / quantize, quantize, metadata=metadata)
            done[task] = {"parameters": model.count_params(), "max_length": spec.max_length}
        except Exception as error:  # a task that cannot be exported is a row with its error
            done[task] = {"error": f"{type(error).__name__}: {str(error)[-500:]}"}
            continue
        if task == "question_answerer":  # the Task Library reads 384 tokens: a file of its own
            spec = dataclasses.replace(spec, max_length=TASK_LIBRARY_QA_LENGTH)
            try:
                if reason := runtimes.unsupported(model, tokenizer, spec):
                    raise ExportError(reason)
                export_tflite(model, tokenizer, spec, work / task / "task_library", text_model=False, metadata=True)
            except Exception as error:
                done[task]["task_library"] = f"no Task Library file: {type(error).__name__}: {str(error)[-300:]}"
    return done


def predictor(path_name, task, model_path, threads):
    """A function of no arguments that answers this task's input on `path_name`'s runtime."""
    text, context = SENTENCE, PARAGRAPH
    if path_name.startswith("litert"):
        sys.path.insert(0, str(ROOT))
        from kbert_edge import EdgeModel

        model = EdgeModel(model_path, num_threads=threads)
        if task == "question_answerer":
            return lambda: model.answer_question(QUESTION, context)
        return lambda: model.predict([text])
    if path_name == "mediapipe":
        from mediapipe.tasks import python as tasks
        from mediapipe.tasks.python import text as mp_text

        base = tasks.BaseOptions(model_asset_path=str(model_path))
        if task == "classifier":
            model = mp_text.TextClassifier.create_from_options(mp_text.TextClassifierOptions(base_options=base))
            return lambda: model.classify(text)
        model = mp_text.TextEmbedder.create_from_options(mp_text.TextEmbedderOptions(base_options=base))
        return lambda: model.embed(text)
    from tflite_support.task import text as tl_text

    if task == "classifier":
        model = tl_text.BertNLClassifier.create_from_file(str(model_path))
        return lambda: model.classify(text)
    model = tl_text.BertQuestionAnswerer.create_from_file(str(model_path))
    return lambda: model.answer(context, QUESTION)


def cold_start(args):
    """Import, load, first prediction and batch-1 latency of one path on one task, in this fresh process."""
    start = time.perf_counter()
    if args.path.startswith("litert"):
        from ai_edge_litert import interpreter  # noqa: F401
    elif args.path == "mediapipe":
        from mediapipe.tasks.python import text  # noqa: F401
    else:
        from tflite_support.task import text  # noqa: F401,F811
    imported = time.perf_counter()
    call = predictor(args.path, args.task, args.model_file, args.threads)
    call()
    first = time.perf_counter()
    return {"import_s": imported - start, "first_s": first - imported,
            "latency_ms": latency_ms(call, args)}


def quantized_latency(args):
    """Batch-1 latency of token_ids.tflite on one window of --length tokens, or on a --long-chars text."""
    sys.path.insert(0, str(ROOT))
    from kbert_edge import EdgeModel

    model = EdgeModel(args.model_file, num_threads=args.threads)
    if args.input == "window":
        text = long_text(20 * model.max_length)  # more than a window: the window is full
        pairs = None
        if model.model_kind == "question_answerer":
            text, pairs = QUESTION, text
        batch = model.tokenizer.encode([text], None if pairs is None else [pairs], model.max_length)
        batch = {key: batch[key] for key in ("token_ids", "segment_ids", "padding_mask")}
        call, windows = (lambda: model.run_ids(batch)), 1
    elif model.model_kind == "question_answerer":
        context = long_text(args.long_chars)
        call = lambda: model.answer_question(QUESTION, context)  # noqa: E731
        windows = call()["windows"]
    else:
        text = long_text(args.long_chars)
        call = lambda: model.predict([text])  # noqa: E731
        windows = call()[0]["windows"]
    return {"latency_ms": latency_ms(call, args), "windows": windows}


def latency_ms(call, args):
    """Median milliseconds of --repeats calls after --warmup, by apps/demo.py's `median_ms`."""
    sys.path.insert(0, str(ROOT / "apps"))
    from demo import median_ms  # the standard library and numpy at its top, which every path has

    return median_ms(call, args.repeats, args.warmup)


# ---------------------------------------------------------------- driver

def models(args):
    return {task: source for task, source in (("classifier", args.classifier), ("backbone", args.backbone),
                                              ("token_classifier", args.ner), ("question_answerer", args.qa))
            if source}


def run_worker(python, worker, args, **options):
    """Runs this file's `worker` in `python` in a fresh process; (its JSON result or None, the process's seconds)."""
    command = [str(python), __file__, "--worker", worker, "--threads", str(args.threads), "--warmup",
               str(args.warmup), "--repeats", str(args.repeats), "--length", str(args.length),
               "--long-chars", str(args.long_chars), "--classifier", args.classifier, "--backbone", args.backbone,
               "--ner", args.ner, "--qa", args.qa]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if result.returncode:
        print(f"  {worker} {options} failed ({result.returncode}): {result.stderr.strip()[-600:]}", file=sys.stderr)
        return None, seconds
    return json.loads(result.stdout.strip().splitlines()[-1]), seconds


def footprint(args):
    """{path: {"sizes": {package: bytes}, "missing": [...]}} and the table of it."""
    rows = {}
    for name, (_, python, packages, _) in PATHS.items():
        if not pathlib.Path(python).is_file():
            rows[name] = {"error": f"{python} does not exist (tools/edge_clients_venv.sh makes .venv-edge-clients)"}
            continue
        rows[name] = run_worker(python, "sizes", args, packages=",".join(packages))[0] or {"error": "failed"}
    reference = sum(rows.get(REFERENCE, {}).get("sizes", {}).values())
    print(f"\nInstalled footprint (dependency closure, RECORD bytes; the model file not included)")
    print(f"  {'path':18} {'packages':>8} {'MB':>9} {'vs ' + REFERENCE:>22}  closure")
    for name, row in rows.items():
        if "error" in row:
            print(f"  {name:18} {row['error']}")
            continue
        total = sum(row["sizes"].values())
        ratio = f"{total / reference:.1f}x" if reference else ""
        closure = ", ".join(f"{package} {size / 1e6:.1f}" for package, size in
                            sorted(row["sizes"].items(), key=lambda item: -item[1]))
        missing = f"; not installed: {', '.join(row['missing'])}" if row["missing"] else ""
        print(f"  {name:18} {len(row['sizes']):8d} {total / 1e6:9.1f} {ratio:>22}  {closure}{missing}")
    python_files = [*(ROOT / "kbert_core").glob("*.py"), *(ROOT / "kbert_edge").glob("*.py"),
                    ROOT / "apps" / "edge_predict.py"]
    print(f"  (litert_token_ids also ships kbert_core/, kbert_edge/ and apps/edge_predict.py: "
          f"{sum(p.stat().st_size for p in python_files) / 1e3:.0f} kB of Python)")
    return rows


def model_file(work, path_name, task):
    file_name = PATHS[path_name][0]
    if path_name == "task_library" and task == "question_answerer":
        return work / task / "task_library" / file_name
    return work / task / "none" / file_name


def cold_starts(args, work, exported):
    print(f"\nCold start (fresh process each) and batch-1 latency, fp32, {args.threads} thread(s), median of "
          f"{args.repeats} after {args.warmup}; ratios vs {REFERENCE} on the same task (> 1: slower)")
    print(f"  {'task':18} {'path':18} {'model MB':>8} {'import s':>8} {'load+first s':>12} {'cold s':>7} "
          f"{'process s':>9} {'latency ms':>10} {'cold x':>7} {'latency x':>9}")
    results = {}
    for task in TASKS:
        if "error" in exported.get(task, {"error": ""}):
            continue
        for name, (_, python, _, tasks) in PATHS.items():
            path = model_file(work, name, task)
            if task not in tasks or not path.is_file() or not pathlib.Path(python).is_file():
                continue
            row, process = run_worker(python, "cold", args, path=name, task=task, model_file=path)
            if row is None:
                print(f"  {task:18} {name:18} failed (see above)")
                continue
            row.update(process_s=process, cold_s=row["import_s"] + row["first_s"], model_mb=path.stat().st_size / 1e6)
            results[task, name] = row
            reference = results.get((task, REFERENCE))
            cold_x = f"{row['cold_s'] / reference['cold_s']:.2f}" if reference else ""
            latency_x = f"{row['latency_ms'] / reference['latency_ms']:.2f}" if reference else ""
            print(f"  {task:18} {name:18} {row['model_mb']:8.1f} {row['import_s']:8.3f} {row['first_s']:12.3f} "
                  f"{row['cold_s']:7.3f} {row['process_s']:9.2f} {row['latency_ms']:10.2f} {cold_x:>7} "
                  f"{latency_x:>9}", flush=True)
    return results


def quantization(args, work, exported):
    print(f"\nDynamic-int8 vs fp32 token_ids.tflite, batch 1, {args.threads} thread(s), median of {args.repeats} "
          f"after {args.warmup}, each in a fresh process (aim: int8 at least 2x)")
    print(f"  {'task':18} {'input':22} {'windows':>7} {'fp32 ms':>9} {'int8 ms':>9} {'speed-up':>8}")
    results = {}
    for task in TASKS:
        if "error" in exported.get(task, {"error": ""}):
            continue
        inputs = ["window"] + (["long"] if task in ("token_classifier", "question_answerer") else [])
        for kind in inputs:
            row = {}
            for quantize in QUANTIZE:
                out, _ = run_worker(KBERT_PYTHON, "quant", args, model_file=work / task / quantize / "token_ids.tflite",
                                    input=kind)
                if out:
                    row[quantize] = out
            if len(row) < 2:
                print(f"  {task:18} {kind:22} failed (see above)")
                continue
            results[task, kind] = row
            label = f"{exported[task]['max_length']} tokens" if kind == "window" else f"{args.long_chars} chars"
            fp32, int8 = row["none"]["latency_ms"], row["dynamic-int8"]["latency_ms"]
            print(f"  {task:18} {label:22} {row['none']['windows']:7d} {fp32:9.2f} {int8:9.2f} {fp32 / int8:7.2f}x",
                  flush=True)
    return results


def accuracy(args):
    """Prints the accuracy commands of all three tasks; with --accuracy runs quantized_accuracy.py for NER and QA."""
    commands = {task: [".venv/bin/python", "benchmarks/quantized_accuracy.py", "--model", source,
                       "--quantize", *QUANTIZE, "--threads", str(args.threads)]
                for task, source in (("token_classifier", args.ner), ("question_answerer", args.qa)) if source}
    print("\nAccuracy of the same fp32 and dynamic-int8 files (aim: within 1 point):")
    if args.classifier:
        print(f"  classifier: .venv/bin/python benchmarks/export_benchmark.py --model {args.classifier} --data "
              f"{args.classifier}/validation.tsv --engines tflite_fp32 tflite_dynamic_int8 --threads {args.threads}")
    for task, command in commands.items():
        print(f"  {task}: {' '.join(command)}")
    if not args.accuracy:
        print("  (--accuracy runs the NER and QA commands here)")
        return
    for task, command in commands.items():
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            result = subprocess.run([str(KBERT_PYTHON), str(ROOT / command[1]), *command[2:], "--json-out", out.name],
                                    capture_output=True, text=True)
            if result.returncode:
                print(f"  {task}: failed: {result.stderr.strip()[-500:]}")
                continue
            rows = {row["engine"]: row for row in json.loads(pathlib.Path(out.name).read_text())["rows"]}
        int8 = rows.get("tflite dynamic-int8", {})
        delta = int8.get("delta_vs_tflite_fp32", {}).get("f1")
        print(f"  {task}: F1 fp32 {rows.get('tflite fp32', {}).get('metrics', {}).get('f1', float('nan')):.2f}, "
              f"dynamic-int8 {int8.get('metrics', {}).get('f1', float('nan')):.2f} "
              f"({'failed' if delta is None else f'{delta:+.2f} points'})")


def aims(sizes, cold, quantized):
    print("\nAims:")
    closure = sorted(sizes.get(REFERENCE, {}).get("sizes", {}))
    print(f"  {REFERENCE} installs {', '.join(closure) or '?'} (aim: ai-edge-litert + numpy only)")
    for (task, name), row in cold.items():
        if name == REFERENCE:
            print(f"  {task}: first prediction {row['process_s']:.2f} s after the process started "
                  f"(import + load + first {row['cold_s']:.2f} s) (aim: < 1 s): "
                  f"{'met' if row['process_s'] < 1 else 'missed'}")
    for (task, kind), row in quantized.items():
        speedup = row["none"]["latency_ms"] / row["dynamic-int8"]["latency_ms"]
        print(f"  {task} {kind}: dynamic-int8 {speedup:.2f}x fp32 (aim: >= 2x): {'met' if speedup >= 2 else 'missed'}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", default="saved_models/demo", help="classifier run (default: %(default)s)")
    parser.add_argument("--backbone", default="all_minilm_l6_v2", help="backbone for embeddings (default: %(default)s)")
    parser.add_argument("--ner", default="saved_models/conll_minilm", help="NER run folder (default: %(default)s)")
    parser.add_argument("--qa", default="saved_models/squad_minilm", help="QA run folder (default: %(default)s)")
    parser.add_argument("--length", type=int, default=128, help="tokens per window (default: %(default)s)")
    parser.add_argument("--long-chars", type=int, default=2000, help="NER/QA long input (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="LiteRT threads (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls, median (default: %(default)s)")
    parser.add_argument("--sizes-only", action="store_true", help="only the installed footprint: no export, no timing")
    parser.add_argument("--accuracy", action="store_true", help="also run benchmarks/quantized_accuracy.py")
    parser.add_argument("--work", help="folder for the exports, kept (default: a temporary folder)")
    for hidden in ("worker", "path", "task", "model-file", "input", "packages"):
        parser.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        workers = {"sizes": lambda: installed_sizes(args.packages.split(",")), "cold": lambda: cold_start(args),
                   "quant": lambda: quantized_latency(args),
                   "export": lambda: export_models(args, pathlib.Path(args.work))}
        print(json.dumps(workers[args.worker]()))
        return
    sizes = footprint(args)
    if args.sizes_only:
        return
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="edge_footprint-"))
    try:
        print(f"\nExporting {models(args)} (fp32, dynamic-int8) to {work} ...", flush=True)
        exported, seconds = run_worker(KBERT_PYTHON, "export", args, work=work)
        for task, row in (exported or {}).items():
            described = row.get("error") or f"{row['parameters'] / 1e6:.1f}M parameters, {row['max_length']} tokens"
            print(f"  {task}: {described}" + (f"; {row['task_library']}" if "task_library" in row else ""))
        print(f"  ({seconds:.0f} s)")
        exported = exported or {}
        cold = cold_starts(args, work, exported)
        quantized = quantization(args, work, exported)
        accuracy(args)
        aims(sizes, cold, quantized)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
