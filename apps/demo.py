"""kbert end to end: fine-tune a sentiment classifier, evaluate it, export it to TFLite, run it on the edge.

    python apps/demo.py                                        # the whole story in about 10 minutes, any CPU
    python apps/demo.py --minutes 30                           # a bigger budget: more sentences, more accuracy
    python apps/demo.py --init bert_tiny --limit 64 --epochs 1 # a smoke run in under a minute
    python apps/demo.py "A gripping film." "Dull and far too long."   # your own sentences for the edge runner
    python apps/demo.py --backend tensorflow --precision float32   # another recipe (or KERAS_BACKEND=jax ...)

The default recipe is the one that gave the best validation accuracy within about 10 minutes on
a 2-core CPU (docs/results.md, "The demo's recipe"): torch (it fine-tunes MiniLM fastest on a CPU),
bfloat16 compute where the CPU has bfloat16 units (AVX-512 BF16 or AMX; elsewhere float32), and
as many steps over SST-2's training sentences as fit the budget (--minutes) on this machine, up to
--epochs passes: before fine-tuning, the demo times a few training steps of its own model and prints
its plan ("N steps: S sentences, about M minutes on this machine"); while fine-tuning, it times its
steps each minute and re-plans the steps left (`kbert.training.time_budget.TimeBudget`), so that the
demo ends within its budget however far the first timing was off; at the end it prints the time it
took beside the budget. --limit sets the sentences instead (and --epochs the passes, all of them).
$KERAS_BACKEND, when set, chooses the backend.

1. Fine-tune `BertClassifier` from --init (default: the real all-MiniLM-L6-v2 checkpoint), for the steps
   the budget allows, on SST-2's training sentences in a seeded order (`../shared/data/sst2/train.tsv`, or
   $KBERT_DATA_DIR/sst2), or, when that is absent, on kbert/data/samples/sentiment_sample.tsv (200
   hand-written sentences). A seeded split of the data is held out for validation (kbert.recipes.sentence.train).
2. Evaluate the Keras model: validation accuracy, file size, latency of one raw sentence.
3. Export string-in TFLite models (tokenizer in the graph), float32 and dynamic-int8 (kbert.export).
   Export needs the TensorFlow backend: on it, this process exports; on JAX or torch, the saved
   .keras file is exported by apps/export.py in a TensorFlow-backend process.
4. Run both .tflite files with the edge runner (apps/edge_predict.py: LiteRT, in a process without
   TensorFlow's Python modules): validation accuracy, latency, and labels for a few raw sentences.
Then print one table (model | accuracy | file size | latency) and write it to OUT/demo.json
(with --json, also printed on stdout as one line; the story then goes to stderr).

Everything lands in --out: the run folder of step 1 (model.keras, vocab.txt, metrics.json,
curves.png, README.md, history.csv, logs/), validation.tsv, tflite_fp32/ and tflite_int8/ (each:
text.tflite, token_ids.tflite, vocab.txt, export.json), demo.json. Each is written whole or not
at all; --reuse skips step 1 when --out already holds a trained model (e.g. after an interrupted
export). Fine-tuning prints a line every 30 s with the time left (a bar on a terminal) and backs
up every 2 minutes: killed, the same command resumes where the backup stands.
"""

import argparse
import functools
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np  # this module imports neither Keras nor TensorFlow at the top: the edge worker runs it

from app_cli import app_parser, emit, for_people, parse_args
from cli_errors import run
from kbert_core.cpu import bfloat16_units, cpu_summary, describe_cpu
from task_cli import positive_float, positive_int, sequence_length

APPS = pathlib.Path(__file__).resolve().parent
VALIDATION_FILE = "validation.tsv"
EXPORTS = {"TFLite fp32": ("tflite_fp32", "none"), "TFLite dynamic-int8": ("tflite_int8", "dynamic-int8")}
BACKENDS = ("tensorflow", "jax", "torch")
# What the steps after fine-tuning take, for the plan: loading, evaluating, two TFLite exports in a TensorFlow
# process and the edge runner (47 s on the 2-core AMD EPYC of docs/results.md, whatever the precision; 109 s there
# while others' tests ran), and the fit's last validation and run folder.
SECONDS_AFTER_FINE_TUNING = 60
PROBE_BATCHES = 6  # training steps the plan times (after as many untimed ones, which compile)
BUDGET_EPOCHS = 3  # the passes over the training sentences the budget may reach (--epochs' default with it)
BACKUP_MINUTES = 2.0
EXAMPLES = [
    "An utterly charming film with a wonderful cast.",
    "A tedious mess that goes nowhere.",
    "Not bad at all.",
    "The plot is thin, but the performances carry it.",
    "I wanted to love it, but it bored me.",
]


def parser():
    """The argparse parser of this app."""
    parser = app_parser(__doc__)
    parser.add_argument("sentences", nargs="*", help="raw sentences for the edge runner (default: five examples)")
    parser.add_argument("--out", default="saved_models/demo",
                        help="folder for the run and the exports")
    parser.add_argument("--init", default="all_minilm_l6_v2",
                        help="backbone to fine-tune: all_minilm_l6_v2, a preset such as bert_tiny (random "
                        "weights), or a folder")
    parser.add_argument("--data", help="a sentence<TAB>label TSV (default: ../shared/data/sst2/train.tsv when "
                        "present, else kbert/data/samples/sentiment_sample.tsv)")
    parser.add_argument("--backend", choices=BACKENDS, default=os.environ.get("KERAS_BACKEND", "torch"),
                        help="Keras backend of the fine-tuning ($KERAS_BACKEND when set, else torch, the fastest "
                        "here); export always runs on TensorFlow")
    parser.add_argument("--precision", choices=("auto", "float32", "bfloat16"), default="auto",
                        help="compute dtype of the fine-tuning; auto: bfloat16 on torch when the CPU has bfloat16 "
                        "units (XLA runs bfloat16 no faster than float32 on CPU), else float32. This machine: "
                        f"{cpu_summary()}")
    parser.add_argument("--minutes", type=positive_float, default=10.0,
                        help="the demo's budget, set-up excluded: it times a few training steps on this machine, "
                        "fine-tunes for as many steps as fit (SST-2 has 66,849 training sentences) and re-plans "
                        "them each minute from its own steps")
    parser.add_argument("--limit", type=positive_int,
                        help="training sentences, a seeded subset, and no budget (default: the steps --minutes "
                        "allows)")
    parser.add_argument("--epochs", type=positive_int,
                        help=f"passes over the training sentences: at most (default {BUDGET_EPOCHS}), the budget "
                        "ending the last where it falls; with --limit, all of them (default 1)")
    parser.add_argument("--valid-size", type=positive_int, default=500,
                        help="sentences held out for validation, at most a fifth of the data")
    parser.add_argument("--max-length", type=sequence_length, default=64,
                        help="tokens per sentence in training and in the exports; 4 of SST-2's 67,349 sentences "
                        "are longer")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="sentences per step")
    parser.add_argument("--learning-rate", type=positive_float, default=5e-5,
                        help="peak learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split, the subset and the training")
    parser.add_argument("--repeats", type=positive_int, default=20, help="timed calls per latency, median reported")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress while fine-tuning (by default a bar on a terminal, else a line every 30 s "
                        "with the time left)")
    parser.add_argument("--reuse", action="store_true",
                        help="skip fine-tuning when --out already holds a model.keras; export and evaluate it")
    parser.add_argument("--edge-worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    arguments = parser()
    args = arguments.parse_args(argv)
    out = pathlib.Path(args.out)
    sentences = args.sentences or EXAMPLES
    if args.edge_worker:  # step 4, in a process of its own: LiteRT, not TensorFlow
        print(json.dumps(edge_results(out, sentences, args.repeats)))
        return
    os.environ["KERAS_BACKEND"] = args.backend  # before Keras starts
    args = parse_args(arguments, argv)  # and start Keras (quietly, without --verbose)
    import keras

    if keras.config.backend() != args.backend:  # only when a caller imported Keras before us
        arguments.error(f"--backend {args.backend}: Keras already runs on {keras.config.backend()} in this process")
    from kbert.saving import claim_run_folder

    # refused now, not after training, when --out cannot be written
    with claim_run_folder(out, "--out"), for_people(args):
        summary = demo(args, out, sentences)
    if args.json:
        emit(args, [summary])


def demo(args, out, sentences):
    """Steps 1 to 4 into the folder `out`, then the summary table (printed, and in OUT/demo.json, returned)."""
    start = time.perf_counter()
    import keras

    from kbert.optimizers.mixed_precision import compute_dtype_name

    seconds = {}
    step("1/4", "fine-tune")
    metrics = fine_tune(args, out, start)
    seconds["fine-tune"] = time.perf_counter() - start
    step("2/4", "evaluate the Keras model")
    keras_row, keras_predictions = keras_results(out, metrics, sentences, args.repeats)
    seconds["evaluate"] = time.perf_counter() - start - sum(seconds.values())
    step("3/4", "export string-in TFLite, float32 and dynamic-int8")
    export_tflite_models(out, json_lines=args.json)
    seconds["export"] = time.perf_counter() - start - sum(seconds.values())
    step("4/4", "run the .tflite files with the edge runner (apps/edge_predict.py, LiteRT)")
    edge = run_edge_worker(out, sentences, args.repeats)
    seconds["edge"] = time.perf_counter() - start - sum(seconds.values())

    predictions = {"Keras": keras_predictions, **{name: edge[name].pop("predictions") for name in EXPORTS}}
    rows = {f"Keras ({keras.config.backend()})": keras_row, **{name: edge[name] for name in EXPORTS}}
    print(f"\n{len(sentences)} raw sentences (label and probability):")
    print(format_predictions(sentences, predictions))
    print(trust_line(keras_row["accuracy"], metrics["validation_examples"]))
    plan = metrics.get("planned")
    trained = (f"{plan['sentences_trained']:,} of {metrics['train_examples']:,} training sentences, "
               f"{plan['steps_trained']:,} steps" if plan else
               f"{metrics['train_examples']:,} training sentences, {metrics['hyperparameters']['epochs']} epoch(s)")
    print(f"\nSentiment from {metrics['init']}, {trained}, "
          f"{compute_dtype_name(metrics['hyperparameters']['mixed_precision'])} on {metrics['backend']}, "
          f"on {metrics['data']}")
    print(f"accuracy on {metrics['validation_examples']} held-out sentences; latency: one raw sentence to "
          f"probabilities, tokenizer included, padded to {metrics['max_length']} tokens, median of {args.repeats}")
    print(format_table(rows))
    print(f"(model.keras holds the weights, {keras_row['weights'] / 1e6:.1f} MB, the architecture and the tokenizer; "
          f"not the optimizer's state)")
    total = time.perf_counter() - start
    budget = f"; budget {args.minutes:g} min" if plan else ""
    print(f"\nWall time {total / 60:.1f} min{budget} (" + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) +
          f"); validation accuracy {keras_row['accuracy']:.1%}")
    print(f"On a device: python apps/edge_predict.py {out / EXPORTS['TFLite dynamic-int8'][0] / 'text.tflite'} "
          f"\"a gripping film\"")
    from kbert.saving import write_json_atomic

    summary = {"rows": rows, "sentences": sentences, "predictions": predictions,
               "seconds": {**seconds, "total": total}, "budget_minutes": args.minutes, "plan": metrics.get("planned"),
               "run": {k: metrics[k] for k in ("init", "data", "backend", "train_examples", "validation_examples",
                                               "max_length")}, "machine": describe_cpu(),
               "precision": compute_dtype_name(metrics["hyperparameters"]["mixed_precision"])}
    write_json_atomic(out / "demo.json", summary)
    return summary


def step(number, title):
    print(f"\n[{number}] {title}", flush=True)


def default_data():
    from kbert.paths import data_dir, samples_dir

    sst2 = data_dir() / "sst2" / "train.tsv"
    if sst2.is_file():
        return sst2
    print(f"{sst2} not found: training on the shipped sample of 200 hand-written sentences.")
    return samples_dir() / "sentiment_sample.tsv"


def trains_in_bfloat16(precision, backend, cpu_flags=None):
    """Whether to fine-tune in bfloat16: as asked, or for "auto", on torch when the CPU has bfloat16 units
    (`kbert_core.cpu.bfloat16_units`; `cpu_flags`: this CPU's by default).

    >>> trains_in_bfloat16("auto", "torch", cpu_flags={"avx512_bf16"}), trains_in_bfloat16("auto", "jax", {"amx_bf16"})
    (True, False)
    >>> trains_in_bfloat16("auto", "torch", cpu_flags=set()), trains_in_bfloat16("bfloat16", "jax")
    (False, True)
    """
    if precision != "auto":
        return precision == "bfloat16"
    return backend == "torch" and bool(bfloat16_units(cpu_flags))


def fine_tune(args, out, started):
    """Step 1: trains (or, with --reuse, finds) the run folder; writes OUT/validation.tsv. Returns its metrics,
    with the plan (`plan_steps`, and the re-plans of the fit's `TimeBudget`) as "planned" (None with --limit or
    --reuse). `started`: the demo's start (time.perf_counter()), which the budget counts from."""
    from kbert.data import read_sentence_tsv
    from kbert.optimizers.mixed_precision import compute_dtype_name
    from kbert.saving import SettingsChangedError, atomic_file
    from kbert.recipes import SENTIMENT, sentence
    from kbert.training.time_budget import TimeBudget

    metrics_file = out / "metrics.json"
    if args.reuse and (out / "model.keras").is_file() and metrics_file.is_file():
        print(f"--reuse: {out} holds a trained model; not fine-tuning.")
        metrics = json.loads(metrics_file.read_text())
        data, seed, valid_size = metrics["data"], metrics["hyperparameters"]["seed"], metrics["validation_examples"]
        examples = read_sentence_tsv(data, label_names=metrics["label_names"])
    else:
        data = args.data or default_data()
        examples = read_sentence_tsv(data, label_names=SENTIMENT.label_names)
        seed, valid_size = args.seed, min(args.valid_size, len(examples) // 5)
        mixed_precision = trains_in_bfloat16(args.precision, args.backend)
        print(f"{compute_dtype_name(mixed_precision)} on {args.backend} ({describe_precision(args)}); "
              f"this machine: {cpu_summary()}.", flush=True)
        epochs = args.epochs or (1 if args.limit else BUDGET_EPOCHS)
        plan, budget = None, []
        if args.limit is None:
            train_examples, _ = examples.split(valid_size / len(examples), seed)
            plan = plan_steps(args, epochs, train_examples, valid_size, mixed_precision, started)
            budget = [TimeBudget(started + 60 * args.minutes - SECONDS_AFTER_FINE_TUNING, plan["steps"],
                                 plan["epoch_end_seconds"])]
        train = functools.partial(
            sentence.train, SENTIMENT, data, args.init, out, epochs=epochs, batch_size=args.batch_size,
            learning_rate=args.learning_rate, max_length=args.max_length, limit=args.limit,
            mixed_precision=mixed_precision, validation_fraction=valid_size / len(examples), seed=seed,
            backup_minutes=BACKUP_MINUTES, callbacks=budget, verbose=0 if args.quiet else "auto")
        try:
            metrics = train()
        except SettingsChangedError as error:  # other settings than the backup's: the demo starts over
            names = ", ".join(name for name, _, _ in error.changes)
            print(f"The backup of an interrupted demo run has other settings ({names}): fine-tuning starts over.")
            metrics = train(restart=True)
        if budget:
            plan = {**plan, "replans": budget[0].plans[1:], "steps_trained": budget[0].steps,
                    "sentences_trained": min(budget[0].steps * args.batch_size, metrics["train_examples"])}
            print(f"Fine-tuned {budget[0].steps:,} steps (first plan {plan['steps']:,}; re-planned from the steps' "
                  f"own time {len(plan['replans'])} time(s)): {plan['sentences_trained']:,} of "
                  f"{metrics['train_examples']:,} training sentences.", flush=True)
        metrics["planned"] = plan
    # The same seeded split as `train` held out, for the edge runner to score the exports on.
    _, valid = examples.split(valid_size / len(examples), seed)
    assert len(valid) == metrics["validation_examples"], (len(valid), metrics["validation_examples"])
    with atomic_file(out / VALIDATION_FILE) as partial:
        partial.write_text("sentence\tlabel\n" + "".join(
            f"{text}\t{valid.label_names[label]}\n" for text, label in zip(valid.texts, valid.labels)), "utf-8")
    return metrics


def describe_precision(args):
    """Why the fine-tuning computes in the dtype it does, in words.

    >>> import argparse
    >>> describe_precision(argparse.Namespace(precision="float32", backend="torch"))
    'as --precision asked'
    """
    if args.precision != "auto":
        return "as --precision asked"
    if args.backend != "torch":
        return f"--precision auto: float32 on {args.backend}, whose CPU compilers run bfloat16 no faster"
    units = bfloat16_units()
    return (f"--precision auto: the CPU has {' and '.join(units)}" if units else
            "--precision auto: the CPU has no bfloat16 units, where bfloat16 is emulated and slower")


def plan_steps(args, epochs, train_examples, valid_size, mixed_precision, started):
    """The first plan of the steps that fit the budget: times `PROBE_BATCHES` training steps of the demo's
    model (a copy, thrown away) on a seeded sample of `train_examples`, after as many untimed ones (they
    compile, on JAX and TensorFlow), and gives the fine-tuning what is left of --minutes since `started`
    (time.perf_counter()) less `SECONDS_AFTER_FINE_TUNING`, at most `epochs` passes (`steps_for_budget`).
    The fit's `TimeBudget` re-plans from its own steps. Prints the plan; returns it as a dict (steps,
    sentences, seconds_per_step, epoch_end_seconds, fine_tune_minutes)."""
    import keras

    from kbert.optimizers import mixed_compute
    from kbert.progress import duration
    from kbert.tasks import BertClassifier

    sample = train_examples.shuffled(args.seed + 1, min(len(train_examples), 2 * PROBE_BATCHES * args.batch_size))
    with mixed_compute(mixed_precision):
        model = BertClassifier.from_preset(args.init, num_classes=2, sequence_length=args.max_length)
    ends = [time.perf_counter()]  # then each step's end: the steps' own time, not the fit's start and end
    timer = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: ends.append(time.perf_counter()))
    model.fit(sample.texts, sample.labels, batch_size=args.batch_size, epochs=1, verbose=0, shuffle_seed=args.seed,
              callbacks=[timer])
    timed = ends[min(len(ends) // 2, len(ends) - 2):]  # the second half (a sample of one batch: the fit)
    seconds_per_step = (timed[-1] - timed[0]) / (len(timed) - 1)
    seconds_left = 60 * args.minutes - (time.perf_counter() - started) - SECONDS_AFTER_FINE_TUNING
    steps_per_epoch = -(-len(train_examples) // args.batch_size)
    epoch_end_seconds = valid_size / args.batch_size * seconds_per_step / 3  # a validation pass: forward passes
    steps = steps_for_budget(seconds_left, seconds_per_step, epoch_end_seconds, steps_per_epoch, epochs)
    sentences = min(len(train_examples), steps * args.batch_size)
    minutes = steps * seconds_per_step / 60
    print(f"Plan: {steps:,} steps of {args.batch_size} ({sentences:,} of {len(train_examples):,} training sentences, "
          f"{steps / steps_per_epoch:.1f} of at most {epochs} pass(es)), about {duration(60 * minutes)} of fine-tuning "
          f"on this machine ({seconds_per_step:.2f} s a step, timed over {len(timed) - 1} steps; re-planned each "
          f"minute from the steps' own time), {args.minutes:g} min in all (--minutes; --limit sets the sentences).",
          flush=True)
    return {"steps": steps, "sentences": sentences, "seconds_per_step": round(seconds_per_step, 3),
            "epoch_end_seconds": round(epoch_end_seconds, 1), "fine_tune_minutes": round(minutes, 1)}


def steps_for_budget(seconds_left, seconds_per_step, epoch_end_seconds, steps_per_epoch, epochs):
    """The training steps that fit `seconds_left` at `seconds_per_step`, with `epoch_end_seconds` (a
    validation pass) at each epoch's end (`kbert.training.time_budget.steps_that_fit`); at least one, at most
    `epochs` passes of `steps_per_epoch`.

    >>> steps_for_budget(510, 0.40, 2.0, 2074, 3), steps_for_budget(510, 0.17, 2.0, 2074, 3)
    (1270, 2976)
    >>> steps_for_budget(5000, 0.17, 2.0, 2074, 3), steps_for_budget(-30, 0.17, 2.0, 2074, 3)
    (6222, 1)
    """
    from kbert.training.time_budget import steps_that_fit

    steps = steps_that_fit(seconds_left, seconds_per_step, 0, epoch_end_seconds, steps_per_epoch,
                           steps_per_epoch * epochs)
    return max(steps, 1)


def keras_results(out, metrics, sentences, repeats):
    """Step 2: the Keras row of the table (accuracy from training's final evaluation) and its predictions."""
    import keras

    from kbert.saving import load_run

    model = load_run(out)
    predictions = [{"label": answer["label"], "probability": answer.get("probability")}
                   for answer in model.answers(sentences)]  # an empty sentence: no label, as everywhere
    accuracy = metrics["validation"]["accuracy"]
    print(f"Keras on {keras.config.backend()}: validation accuracy {accuracy:.4f}")
    weights = sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in model.weights)
    return {"accuracy": accuracy, "size": (out / "model.keras").stat().st_size, "weights": weights,
            "latency_ms": median_ms(lambda: model.answers(sentences[:1]), repeats)}, predictions


def export_tflite_models(out, json_lines=False):
    """Step 3: OUT/tflite_fp32 and OUT/tflite_int8, here on TensorFlow, else through apps/export.py
    (whose report goes to stderr with `json_lines`: stdout is the demo's JSON then)."""
    import keras

    if keras.config.backend() == "tensorflow":
        from kbert.export import export_tflite, load_exportable

        model, tokenizer, spec = load_exportable(out)
        for name, (folder, quantize) in EXPORTS.items():
            sizes = export_tflite(model, tokenizer, spec, out / folder, quantize)
            print(f"{name}: {out / folder / 'text.tflite'} ({sizes['text.tflite'] / 1e6:.1f} MB)")
        return
    print(f"Keras runs on {keras.config.backend()}: exporting {out / 'model.keras'} in a TensorFlow-backend "
          "process (apps/export.py).")
    for folder, quantize in EXPORTS.values():
        export = subprocess.run([sys.executable, str(APPS / "export.py"), "--model", str(out), "--format", "tflite",
                                 "--quantize", quantize, "--out", str(out / folder)],
                                env={**os.environ, "KERAS_BACKEND": "tensorflow"}, stdout=2 if json_lines else None)
        if export.returncode:
            sys.exit(f"apps/export.py failed (exit {export.returncode}) on {out}: see its message above.")


def run_edge_worker(out, sentences, repeats):
    """Step 4 in a fresh process: the edge runner loads LiteRT, not TensorFlow's Python modules."""
    command = [sys.executable, __file__, "--edge-worker", "--out", str(out), "--repeats", str(repeats),
               "--", *sentences]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        sys.exit(f"the edge runner failed (exit {result.returncode}): {last}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def edge_results(out, sentences, repeats, batch_size=32):
    """Accuracy on OUT/validation.tsv, file size, batch-1 latency and predictions of each text.tflite."""
    import edge_predict  # apps/edge_predict.py, beside this file

    lines = (out / VALIDATION_FILE).read_text("utf-8").splitlines()[1:]
    texts, labels = zip(*(line.rsplit("\t", 1) for line in lines))
    results = {}
    for name, (folder, _) in EXPORTS.items():
        path = out / folder / "text.tflite"
        model = edge_predict.EdgeModel(path)
        predicted = [r["label"] for start in range(0, len(texts), batch_size)
                     for r in model.predict(list(texts[start : start + batch_size]))]
        results[name] = {
            "accuracy": float(np.mean([p == label for p, label in zip(predicted, labels)])),
            "size": path.stat().st_size,
            "latency_ms": median_ms(lambda: model.predict(sentences[:1]), repeats),
            "predictions": [{"label": r["label"], "probability": r.get("probability")}
                            for r in model.predict(sentences)]}
    return results


def median_ms(call, repeats, warmup=3):
    """Median wall time of `call()` in milliseconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def format_table(rows):
    """The summary table: one row per model.

    Example:
    >>> print(format_table({"Keras": {"accuracy": 0.9, "size": 2_000_000, "latency_ms": 12.34}}))
    model                   accuracy   file size   latency batch 1
    Keras                     90.00%     2.0 MB          12.3 ms
    """
    lines = [f"{'model':22} {'accuracy':>9} {'file size':>11}   latency batch 1"]
    for name, row in rows.items():
        lines.append(f"{name:22} {row['accuracy']:>9.2%} {row['size'] / 1e6:>7.1f} MB {row['latency_ms']:>13.1f} ms")
    return "\n".join(lines)


def trust_line(accuracy, examples):
    """How far to trust the labels above: the fine-tuned model's accuracy on the held-out sentences.

    Example:
    >>> trust_line(0.836, 2000)
    'validation accuracy 83.6% on 2,000 held-out sentences (the fine-tuned Keras model)'
    """
    return f"validation accuracy {accuracy:.1%} on {examples:,} held-out sentences (the fine-tuned Keras model)"


def format_predictions(sentences, predictions, width=50):
    """Each sentence with each model's label and probability, side by side."""
    names = list(predictions)
    lines = [f"  {'sentence':{width}}" + "".join(f"  {name:>22}" for name in names)]
    for i, sentence in enumerate(sentences):
        text = sentence if len(sentence) <= width else sentence[: width - 1] + "…"
        cells = ["- (empty)" if p[i]["label"] is None else f"{p[i]['label']} {p[i]['probability']:.2f}"
                 for p in predictions.values()]
        lines.append(f"  {text:{width}}" + "".join(f"  {cell:>22}" for cell in cells))
    return "\n".join(lines)


if __name__ == "__main__":
    run(main)
