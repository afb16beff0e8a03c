"""Pretraining objectives at equal compute (issue 54's aim): the same wall-clock budget for each, then SST-2.

Each objective pretrains the same small encoder (--preset) from random weights on the same corpus (default
../shared/data/imdb/unsup.txt) for --budget-minutes of training steps (`apps/pretrain.py --minutes`: it stops at the
step that ends on the budget, the learning rate decaying to 0 there; the budget counts from the fit's start, its
compilation included), for every seed of --seeds; each backbone is then
fine-tuned (`apps/sentiment.py train --init`) on --sizes SST-2 sentences and scored on one fixed validation split.

    python benchmarks/pretraining_objectives.py                       # the aim: 6 objectives x 3 seeds x 20 min
    python benchmarks/pretraining_objectives.py --objectives mlm,electra --budget-minutes 5
    python benchmarks/pretraining_objectives.py --jobs 2      # two runs at a time, each on a core of its own
    python benchmarks/pretraining_objectives.py --budget-minutes 0.2 --seeds 1 --sizes 64 --objectives mlm,electra \\
        --preset bert_tiny --corpus-lines 2000 --validation-size 200 --out saved_models/objectives_smoke  # smoke

The objectives (all on one vocabulary, learned once from the corpus, and the same data stream for a seed):
  nsp       masked LM + next-sentence prediction (BERT)
  mlm       masked LM alone (RoBERTa's recipe)
  sop       masked LM + sentence-order prediction (ALBERT)
  span      SpanBERT's span masking, masked LM alone (--mask-unit span)
  span_sbo  the same with the span-boundary objective (--span-boundary-objective)
  electra   ELECTRA's replaced-token detection (--objective electra; the discriminator is the backbone)
and `random`, the same encoder at random init (apps/pretrain.py --steps 0), fine-tuned the same way: the baseline.

Validation: SST-2's GLUE dev set is kept apart from ../shared/data (its README), so --validation-size sentences of
train.tsv, drawn once (seed 1234), are held out into OUT/sst2_valid.tsv and every fine-tuning (each objective, seed and
size) is scored on them; the rest, OUT/sst2_train.tsv, is what --limit draws from (apps/sentiment.py's seeded subset).
The fine-tuning keeps the epoch of best validation accuracy (apps/sentiment.py's early stopping): the same for every
backbone, so the comparison is fair, though each figure is slightly optimistic.

Resumable: a pretraining run whose metrics.json records its time budget, and a fine-tuning run with a metrics.json, are
read back, not run again; an interrupted pretraining run starts over (a budget is of one uninterrupted fit). A rerun
with other settings than OUT/benchmark.json's is refused (use another --out). Steps and tokens depend on the machine:
run it on a quiet one (other jobs steal the budget). --jobs N runs N pretraining and fine-tuning runs at a time, each
pinned to a core of its own with one thread (so that a budget is one core's, whatever runs beside it): N times fewer
hours on a machine of N cores. Writes OUT/results.json and OUT/results.md (the table printed).
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import queue
import random
import statistics
import subprocess
import sys
import threading

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kbert_core.cpu import cpu_summary, describe_cpu  # noqa: E402  (numpy/stdlib only: no Keras in this process)

# name: the apps/pretrain.py options beside the common ones
OBJECTIVES = {
    "nsp": ["--objective", "nsp"],
    "mlm": ["--objective", "mlm"],
    "sop": ["--objective", "sop"],
    "span": ["--objective", "mlm", "--mask-unit", "span"],
    "span_sbo": ["--objective", "mlm", "--mask-unit", "span", "--span-boundary-objective"],
    "electra": ["--objective", "electra"],
}
BASELINE = "random"
PRINTING = threading.Lock()  # `say`: one run's line at a time
STEP_CAP = 1_000_000  # --steps: never reached within a budget; the budget ends the run
VALIDATION_SEED = 1234
# one thread for each library a run may compute with (with --jobs above 1, a run has one core)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-minutes", type=float, default=20.0,
                        help="wall-clock minutes of training steps for each objective and seed (default: %(default)s)")
    parser.add_argument("--objectives", default=",".join(OBJECTIVES),
                        help=f"comma-separated, of {', '.join(OBJECTIVES)} (default: all)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default: %(default)s)")
    parser.add_argument("--sizes", default="1000,4000", help="SST-2 training sentences, comma-separated "
                                                             "(default: %(default)s)")
    parser.add_argument("--preset", default="bert_mini", help="the encoder, of kbert.config.PRESETS "
                                                              "(default: %(default)s)")
    parser.add_argument("--corpus", help="pretraining text (default: $KBERT_DATA_DIR/imdb/unsup.txt)")
    parser.add_argument("--corpus-lines", type=int,
                        help="pretrain on the first N lines of --corpus only (copied into OUT; for smoke runs)")
    parser.add_argument("--data", help="SST-2 train.tsv (default: $KBERT_DATA_DIR/sst2/train.tsv)")
    parser.add_argument("--validation-size", type=int, default=6735,
                        help="SST-2 sentences held out for scoring, 10%% of train.tsv (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="pretraining batch (default: %(default)s)")
    parser.add_argument("--seq-len", type=int, default=128, help="pretraining tokens a row (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=5e-4,
                        help="pretraining peak learning rate (small encoders: ELECTRA-Small's) (default: %(default)s)")
    parser.add_argument("--warmup-steps", type=int, default=200, help="pretraining warmup (default: %(default)s)")
    parser.add_argument("--checkpoint-every", type=int, default=1000,
                        help="pretraining steps between held-out scores and backups (default: %(default)s)")
    parser.add_argument("--finetune-lr", type=float, default=3e-4, help="(default: %(default)s)")
    parser.add_argument("--finetune-epochs", default="auto",
                        help="comma-separated, one for each of --sizes (default auto: 6 up to 1,000 sentences, else 3)")
    parser.add_argument("--max-length", type=int, default=64,
                        help="fine-tuning tokens a sentence (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs at a time, each pinned to a core of its own with one thread; 1: one run on every "
                             "core (default: %(default)s)")
    parser.add_argument("--out", default="saved_models/pretraining_objectives", help="(default: %(default)s)")
    return parser


def main(argv=None):
    parser_ = parser()
    args = parser_.parse_args(argv)
    objectives = [name for name in args.objectives.split(",") if name]
    unknown = [name for name in objectives if name not in OBJECTIVES]
    if unknown or not objectives:
        parser_.error(f"--objectives {args.objectives}: give names of {', '.join(OBJECTIVES)}")
    sizes = [int(size) for size in args.sizes.split(",")]
    epochs = ([6 if size <= 1000 else 3 for size in sizes] if args.finetune_epochs == "auto"
              else [int(each) for each in args.finetune_epochs.split(",")])
    if len(epochs) != len(sizes):
        parser_.error(f"--finetune-epochs gives {len(epochs)} values for {len(sizes)} --sizes")
    if not args.budget_minutes > 0 or args.seeds < 1:
        parser_.error("--budget-minutes must be above 0 and --seeds at least 1")
    usable = len(os.sched_getaffinity(0))
    if not 1 <= args.jobs <= usable:
        parser_.error(f"--jobs {args.jobs}: give 1 to {usable}, the cores this process may use")
    out, corpus, train, valid = set_up(args)
    machine = describe_cpu()
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    print(f"machine: {cpu_summary(machine)}; backend {backend}; {args.preset}, {args.budget_minutes} min an objective"
          + (f"; {args.jobs} runs at a time, a core each" if args.jobs > 1 else ""), flush=True)

    cores = Cores(args.jobs)
    vocabulary = pretrain(args, out, corpus, "vocabulary", 0, None, cores)["folder"] / "vocab.txt"

    def objective_run(name, seed):  # one dict: pretrained, then fine-tuned on each size
        run = pretrain(args, out, corpus, name, seed, vocabulary, cores)
        for size, size_epochs in zip(sizes, epochs):
            run[f"accuracy_{size}"] = fine_tune(args, out, run, size, size_epochs, seed, train, valid, cores)
        say(f"{name} seed {seed}: {run['steps']:,} steps, " + ", ".join(
            f"{size} sentences {run[f'accuracy_{size}']:.2%}" for size in sizes))
        return {key: value for key, value in run.items() if key != "folder"}

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(objective_run, name, seed) for seed in range(args.seeds)
                   for name in [BASELINE, *objectives]]
        try:
            runs = [future.result() for future in futures]
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    write_results(out, format_table(runs, [BASELINE, *objectives], sizes, args, machine, backend),
                  {"settings": vars(args), "machine": machine, "backend": backend, "validation": str(valid),
                   "runs": runs})


def say(line):
    """Prints `line` whole, its newline with it: the runs report from threads of their own."""
    with PRINTING:
        print(line, flush=True)


def write_results(out, table, results):
    """Prints `table` and writes it to OUT/results.md, and `results` to OUT/results.json."""
    print()
    print(table)
    (out / "results.md").write_text(table + "\n")
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"Wrote {out / 'results.md'} and {out / 'results.json'}")


def set_up(args):
    """`(out, corpus, train, valid)` of `args`: the output folder (made, its settings checked: `check_settings`), the
    pretraining corpus (`corpus_file`) and SST-2's train and validation files (`validation_split`)."""
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    check_settings(out, args)
    data_dir = pathlib.Path(os.environ.get("KBERT_DATA_DIR", ROOT.parent / "shared" / "data"))
    corpus = corpus_file(args, out, data_dir)
    train, valid = validation_split(pathlib.Path(args.data or data_dir / "sst2" / "train.tsv"), out,
                                    args.validation_size)
    return out, corpus, train, valid


def check_settings(out, args):
    """Refuses a rerun into `out` with other settings than the benchmark's first run there (its results would mix)."""
    settings = {key: value for key, value in vars(args).items() if key not in ("objectives", "families", "seeds",
                                                                              "sizes", "finetune_epochs", "out")}
    path = out / "benchmark.json"
    if path.is_file():
        before = json.loads(path.read_text())
        changed = [f"{key} {before.get(key)} -> {value}" for key, value in settings.items() if before.get(key) != value]
        if changed:
            sys.exit(f"{path}: this benchmark ran with other settings ({'; '.join(changed)}): give another --out.")
    else:
        path.write_text(json.dumps(settings, indent=2))


def corpus_file(args, out, data_dir):
    corpus = pathlib.Path(args.corpus or data_dir / "imdb" / "unsup.txt")
    if not corpus.is_file():
        sys.exit(f"{corpus} not found: set KBERT_DATA_DIR or give --corpus.")
    if args.corpus_lines is None:
        return corpus
    cut = out / f"corpus_{args.corpus_lines}.txt"
    if not cut.is_file():
        with corpus.open(encoding="utf-8") as source:
            lines = [line for _, line in zip(range(args.corpus_lines), source)]
        cut.write_text("".join(lines), encoding="utf-8")
    return cut


def validation_split(data, out, size):
    """(training file, validation file) in `out`: `size` rows of `data` drawn once with VALIDATION_SEED, the rest."""
    if not data.is_file():
        sys.exit(f"{data} not found: set KBERT_DATA_DIR or give --data.")
    train, valid = out / "sst2_train.tsv", out / "sst2_valid.tsv"
    if not (train.is_file() and valid.is_file()):
        header, *rows = data.read_text(encoding="utf-8").splitlines(keepends=True)
        if not 0 < size < len(rows):
            sys.exit(f"--validation-size {size}: {data} has {len(rows)} rows.")
        chosen = set(random.Random(VALIDATION_SEED).sample(range(len(rows)), size))
        valid.write_text(header + "".join(row for i, row in enumerate(rows) if i in chosen), encoding="utf-8")
        train.write_text(header + "".join(row for i, row in enumerate(rows) if i not in chosen), encoding="utf-8")
    return train, valid


def pretrain(args, out, corpus, name, seed, vocabulary, cores):
    """One apps/pretrain.py run (read back when whole): {objective, seed, steps, tokens, held-out scores, folder}.
    "vocabulary" learns the shared vocabulary (0 steps); `BASELINE` saves the random init (0 steps)."""
    folder = out / "pretrain" / (name if name == "vocabulary" else f"{name}_seed{seed}")
    metrics_file = folder / "metrics.json"
    untrained = name in ("vocabulary", BASELINE)
    whole = metrics_file.is_file() and (folder / "backbone.keras").is_file() and (
        untrained or "time_budget" in json.loads(metrics_file.read_text()))
    if not whole:
        command = [sys.executable, str(ROOT / "apps" / "pretrain.py"), "--corpus", str(corpus), "--run", folder.name,
                   "--output", str(folder.parent), "--preset", args.preset, "--seed", str(seed),
                   "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len), "--lr", str(args.lr),
                   "--restart", "--quiet"]
        if vocabulary:
            command += ["--vocab", str(vocabulary)]
        if untrained:
            command += ["--steps", "0", "--objective", "mlm", "--holdout-fraction", "0"]
        else:
            steps = STEP_CAP - STEP_CAP % args.checkpoint_every
            command += [*OBJECTIVES[name], "--steps", str(steps), "--checkpoint-every", str(args.checkpoint_every),
                        "--warmup-ratio", str(args.warmup_steps / steps), "--minutes", str(args.budget_minutes)]
        say(f"pretraining {folder.name}: {' '.join(command[2:])}")
        cores.run(command)
    metrics = json.loads(metrics_file.read_text())
    steps = metrics.get("steps", 0)
    return {"objective": name, "seed": seed, "steps": steps, "tokens": steps * args.batch_size * args.seq_len,
            "fit_seconds": metrics.get("fit_seconds"), "held_out": metrics.get("end"), "folder": folder}


def fine_tune(args, out, run, size, epochs, seed, train, valid, cores):
    """The validation accuracy of `run`'s backbone fine-tuned on `size` sentences (read back if done)."""
    folder = out / "finetune" / f"{run['objective']}_seed{seed}_{size}"
    if not (folder / "metrics.json").is_file():
        command = [sys.executable, str(ROOT / "apps" / "sentiment.py"), "train", "--data", str(train), "--valid",
                   str(valid), "--validation-limit", str(args.validation_size), "--init", str(run["folder"]),
                   "--out", str(folder), "--limit", str(size), "--epochs", str(epochs), "--batch-size", "32",
                   "--patience", "3", "--lr", str(args.finetune_lr), "--max-length", str(args.max_length),
                   "--seed", str(seed), "--quiet"]
        cores.run(command)
    return json.loads((folder / "metrics.json").read_text())["validation"]["accuracy"]


class Cores:
    """Runs commands on this machine's cores: with `jobs` 1, one at a time on all of them; above 1, each on a core of
    its own with one thread (`ONE_THREAD`), `jobs` at a time (one `run` a thread of a pool of `jobs`).

    >>> Cores(1).run([sys.executable, "-c", "pass"])
    """

    def __init__(self, jobs):
        self.jobs, self.free = jobs, queue.Queue()
        for core in sorted(os.sched_getaffinity(0))[:jobs]:
            self.free.put(core)

    def run(self, command):
        """Runs `command` (its output dropped; a failure raises), on a free core once one is."""
        if self.jobs == 1:
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            return
        core = self.free.get()
        try:
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **ONE_THREAD},
                           preexec_fn=lambda: os.sched_setaffinity(0, {core}))
        finally:
            self.free.put(core)


def spread(values):
    """'mean ± standard deviation' in percent (the deviation of the seeds: 0 for one).

    >>> spread([0.8, 0.82, 0.84])
    '82.0 ± 2.0'
    """
    deviation = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.1f} ± {100 * deviation:.1f}"


def format_table(runs, names, sizes, args, machine, backend):
    seeds = sorted({run["seed"] for run in runs})
    lines = [f"Pretraining objectives at equal compute: {args.budget_minutes} min of training steps each, "
             f"{args.preset}, batch {args.batch_size} x {args.seq_len} tokens, peak lr {args.lr}; SST-2 accuracy (%) "
             f"on {args.validation_size} held-out sentences, mean ± std over {len(seeds)} seed(s).",
             f"Machine: {cpu_summary(machine)}; backend {backend}"
             + (f"; {args.jobs} runs at a time, each on a core of its own with one thread." if args.jobs > 1 else "."),
             "",
             "| objective | " + " | ".join(f"SST-2 {size}" for size in sizes) + " | steps | tokens (M) |",
             "|---|" + "---|" * (len(sizes) + 2)]
    for name in names:
        chosen = [run for run in runs if run["objective"] == name]
        steps = statistics.mean(run["steps"] for run in chosen)
        tokens = statistics.mean(run["tokens"] for run in chosen) / 1e6
        lines.append(f"| {name} | " + " | ".join(spread([run[f"accuracy_{size}"] for run in chosen])
                                                 for size in sizes) + f" | {steps:,.0f} | {tokens:,.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
