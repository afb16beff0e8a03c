"""Distillation for a phone (issue 54's aim): a student of at most a quarter of the teacher's parameters, distilled
from the demo's teacher, against the same student fine-tuned on the labels alone; accuracy on the validation split,
int8 TFLite size and one-sentence latency, with ratios to the teacher.

    python benchmarks/distill_benchmark.py                                   # the aim: MiniLM on SST-2 (hours on a CPU)
    python benchmarks/distill_benchmark.py --teacher saved_models/demo       # a teacher trained already
    python benchmarks/distill_benchmark.py --init bert_tiny --data kbert/data/samples/sentiment_sample.tsv \\
        --teacher-epochs 1 --epochs 1 --max-length 16 --unlabeled-lines 20 --repeats 3 \\
        --student '{"num_layers": 1, "hidden_dim": 32, "num_heads": 2, "intermediate_dim": 64}'   # a smoke run

1. The teacher: --teacher, or --init (default all-MiniLM-L6-v2) fine-tuned on --data (SST-2's training sentences)
   by kbert.recipes.sentence.train, as apps/sentiment.py trains it, into WORK/teacher (kept: a rerun reuses it).
2. The student distilled (kbert.recipes.distillation.train, as apps/distill.py runs it) from the teacher on the same
   training sentences and --unlabeled texts the teacher labels (default: the first --unlabeled-lines of
   ../shared/data/imdb/unsup.txt), at --temperature and --alpha, into WORK/distilled.
3. The same student (the same architecture, initial weights and settings) on the labels alone: the same recipe at
   alpha 0 without unlabeled texts (its loss is then the cross-entropy of the labels), into WORK/labels_only.
   All three hold out the same seeded validation split of --data (--validation-fraction, --seed).
4. Each exported to dynamic-int8 TFLite with the tokenizer in the graph (apps/export.py, TensorFlow), then in a
   process without TensorFlow (kbert_edge.EdgeModel, LiteRT): the int8 file's accuracy on the validation split and
   its latency on one raw sentence, the median of --repeats calls.
Then one table, with each student's ratios to the teacher and the aims (parameters <= 1/4, accuracy >= 97% of the
teacher's, int8 file <= 1/4, >= 2x as fast), written also to WORK/results.json. Training runs on $KERAS_BACKEND.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "apps"))
from demo import median_ms  # noqa: E402  (the demo times its one sentence so; it imports no Keras at the top)

SENTENCE = "An utterly charming film with a wonderful cast."
# 4 layers of width 128 on 64-wide embeddings projected up (ALBERT's embedding_dim): 2.8M parameters, 12% of
# all-MiniLM-L6-v2's 22.7M (its embeddings alone are 11.7M). With 128-wide embeddings (4.8M) the int8 text.tflite is
# 0.31x the teacher's: every text.tflite holds the same ~3.1 MB of tokenizer tables.
DEFAULT_STUDENT = ('{"num_layers": 4, "hidden_dim": 128, "num_heads": 2, "intermediate_dim": 512, '
                   '"embedding_dim": 64}')
MODELS = ("teacher", "distilled", "labels_only")


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="saved_models/distill_benchmark", help="folder of the runs and exports")
    parser.add_argument("--teacher", help="a fine-tuned sentiment run folder (default: train one into WORK/teacher)")
    parser.add_argument("--init", default="all_minilm_l6_v2", help="the teacher's start (default: %(default)s)")
    parser.add_argument("--data", help="sentence<TAB>label TSV (default: ../shared/data/sst2/train.tsv)")
    parser.add_argument("--limit", type=int, help="train on a seeded subset of this many sentences")
    parser.add_argument("--validation-fraction", type=float, default=0.1, help="held out (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the split, the shuffles, the heads (default: %(default)s)")
    parser.add_argument("--max-length", type=int, default=64, help="tokens per sentence (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per step (default: %(default)s)")
    parser.add_argument("--teacher-epochs", type=int, default=1, help="the teacher's passes (default: %(default)s)")
    parser.add_argument("--teacher-lr", type=float, default=5e-5, help="the demo's (default: %(default)s)")
    parser.add_argument("--student", default=DEFAULT_STUDENT,
                        help="a JSON object of BertConfig fields, or what apps/distill.py --student takes "
                             "(default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=3, help="each student's passes (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=3e-4,
                        help="each student's peak learning rate (random weights learn faster) (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=2.0, help="(default: %(default)s)")
    parser.add_argument("--alpha", type=float, default=0.5, help="the teacher's weight (default: %(default)s)")
    parser.add_argument("--unlabeled", help="texts the teacher labels, a line each (default: "
                                            "../shared/data/imdb/unsup.txt; 'none' for none)")
    parser.add_argument("--unlabeled-lines", type=int, default=20000, help="of --unlabeled (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=50, help="timed one-sentence calls (default: %(default)s)")
    parser.add_argument("--edge-worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    args = parser().parse_args(argv)
    work = pathlib.Path(args.work)
    if args.edge_worker:  # step 4's measures, in a process without TensorFlow
        print(json.dumps(edge_results(work, args.repeats)))
        return
    work.mkdir(parents=True, exist_ok=True)
    data = args.data or default_path("sst2/train.tsv")
    unlabeled = None if args.unlabeled == "none" else args.unlabeled or default_path("imdb/unsup.txt", needed=False)
    runs = train_models(args, work, data, unlabeled)
    keras_rows = write_validation(args, work, data, runs)
    for name, run in runs.items():
        export(run, work / "int8" / name)
    edge = run_edge_worker(work, args.repeats)
    rows = {name: {**keras_rows[name], **edge[name]} for name in MODELS}
    print()
    print(format_table(rows))
    print(aims(rows))
    results = {"rows": rows, "settings": {key: value for key, value in vars(args).items() if key != "edge_worker"},
               "data": str(data), "unlabeled": None if unlabeled is None else str(unlabeled)}
    (work / "results.json").write_text(json.dumps(results, indent=2))
    print(f"Wrote {work / 'results.json'}")


def default_path(relative, needed=True):
    from kbert.paths import data_dir

    path = data_dir() / relative
    if not path.is_file():
        if needed:
            sys.exit(f"{path} not found: give --data.")
        print(f"{path} not found: no unlabeled texts.")
        return None
    return path


def train_models(args, work, data, unlabeled):
    """Steps 1-3: {model name: run folder}."""
    from kbert.recipes import SENTIMENT, distillation, sentence

    common = dict(max_length=args.max_length, batch_size=args.batch_size, limit=args.limit, seed=args.seed,
                  validation_fraction=args.validation_fraction, verbose="lines")
    teacher = pathlib.Path(args.teacher) if args.teacher else work / "teacher"
    if args.teacher or (teacher / "model.keras").is_file():
        print(f"The teacher: {teacher}")
    else:
        step("1/4", f"fine-tune the teacher from {args.init}")
        sentence.train(SENTIMENT, data, args.init, teacher, epochs=args.teacher_epochs, learning_rate=args.teacher_lr,
                       **common)
    student = student_argument(args.student)
    runs = {"teacher": teacher}
    for name, alpha, texts, title in (("distilled", args.alpha, unlabeled, "2/4 distil the student"),
                                      ("labels_only", 0.0, None, "3/4 the same student on the labels alone")):
        runs[name] = work / name
        if (runs[name] / "model.keras").is_file():
            print(f"{name}: {runs[name]} (trained already)")
            continue
        step(*title.split(" ", 1))
        distillation.train(teacher, data, student, runs[name], temperature=args.temperature, alpha=alpha,
                           unlabeled=texts, unlabeled_lines=args.unlabeled_lines if texts else None,
                           epochs=args.epochs, learning_rate=args.lr, **common)
    return runs


def student_argument(text):
    """--student: a JSON object as a dict of BertConfig fields, anything else as it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def write_validation(args, work, data, runs):
    """WORK/validation.tsv: the validation split every run held out (checked); returns each model's parameter count
    and Keras validation accuracy (its run's best epoch), by name."""
    from kbert.data.readers.seeded_split import training_and_validation
    from kbert.data.readers.sentence_table import read_sentences
    from kbert.recipes import SENTIMENT
    from kbert.saving import load_run

    examples = read_sentences(data, label_names=SENTIMENT.label_names)
    _, valid = training_and_validation(examples, None, args.validation_fraction, args.seed, args.limit, None)
    rows = {}
    for name, run in runs.items():
        metrics = json.loads((run / "metrics.json").read_text())
        if metrics["validation_examples"] != len(valid):
            sys.exit(f"{run} held out {metrics['validation_examples']} sentences, not the {len(valid)} of this split: "
                     "give the teacher's --seed, --validation-fraction and --limit.")
        rows[name] = {"parameters": load_run(run).count_params(), "keras_accuracy": metrics["validation"]["accuracy"]}
    (work / "validation.tsv").write_text("".join(f"{text}\t{valid.label_names[label]}\n"
                                                 for text, label in zip(valid.texts, valid.labels)), "utf-8")
    return rows


def export(run, out):
    """Step 4's export: dynamic-int8 TFLite of the run folder `run`, tokenizer in the graph (apps/export.py)."""
    command = [sys.executable, str(ROOT / "apps" / "export.py"), "--model", str(run), "--format", "tflite",
               "--quantize", "dynamic-int8", "--out", str(out), "--overwrite"]
    result = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    if result.returncode:
        sys.exit(f"apps/export.py failed on {run} (exit {result.returncode}).")


def run_edge_worker(work, repeats):
    command = [sys.executable, __file__, "--edge-worker", "--work", str(work), "--repeats", str(repeats)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"the edge worker failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def edge_results(work, repeats, batch_size=32):
    """{model: accuracy on WORK/validation.tsv, size and one-sentence latency of its int8 text.tflite, and the size
    of its token_ids.tflite (the model without the tokenizer's tables, which are the same in every text.tflite)}."""
    sys.path.insert(0, str(ROOT))
    from kbert_edge import EdgeModel

    rows = [line.rsplit("\t", 1) for line in (work / "validation.tsv").read_text("utf-8").splitlines()]
    texts, labels = [text for text, _ in rows], [label for _, label in rows]
    results = {}
    for name in MODELS:
        path = work / "int8" / name / "text.tflite"
        model = EdgeModel(path)
        predicted = [answer["label"] for start in range(0, len(texts), batch_size)
                     for answer in model.predict(texts[start : start + batch_size])]
        results[name] = {"accuracy": sum(p == label for p, label in zip(predicted, labels)) / len(labels),
                         "size": path.stat().st_size, "model_size": (path.parent / "token_ids.tflite").stat().st_size,
                         "latency_ms": median_ms(lambda: model.predict([SENTENCE]), repeats)}
    return results


def step(number, title):
    print(f"\n[{number}] {title}", flush=True)


def format_table(rows):
    """The models (accuracy: Keras's, then the int8 file's; size and latency: the int8 file's), each student's
    ratios to the teacher beside them (accuracy: the int8 files').

    >>> rows = {"teacher": {"parameters": 20e6, "keras_accuracy": 0.91, "accuracy": 0.9, "size": 23e6,
    ...                     "model_size": 20e6, "latency_ms": 10.0},
    ...         "distilled": {"parameters": 4e6, "keras_accuracy": 0.88, "accuracy": 0.882, "size": 7e6,
    ...                       "model_size": 4e6, "latency_ms": 2.5}}
    >>> print(format_table(rows))
    model        parameters    accuracy  int8 accuracy    text.tflite     token_ids.tflite  latency
    teacher      20.0M         91.00%    90.00%           23.0 MB         20.0 MB           10.0 ms
    distilled    4.0M (0.20x)  88.00%    88.20% (98.0%)   7.0 MB (0.30x)  4.0 MB (0.20x)    2.5 ms (4.0x faster)
    """
    teacher = rows["teacher"]
    lines = [f"{'model':12} {'parameters':13} {'accuracy':9} {'int8 accuracy':16} {'text.tflite':15} "
             f"{'token_ids.tflite':17} latency"]
    for name, row in rows.items():
        cells = [f"{row['parameters'] / 1e6:.1f}M", f"{row['accuracy']:.2%}", f"{row['size'] / 1e6:.1f} MB",
                 f"{row['model_size'] / 1e6:.1f} MB", f"{row['latency_ms']:.1f} ms"]
        if name != "teacher":
            cells[0] += f" ({row['parameters'] / teacher['parameters']:.2f}x)"
            cells[1] += f" ({row['accuracy'] / teacher['accuracy']:.1%})"
            cells[2] += f" ({row['size'] / teacher['size']:.2f}x)"
            cells[3] += f" ({row['model_size'] / teacher['model_size']:.2f}x)"
            cells[4] += f" ({teacher['latency_ms'] / row['latency_ms']:.1f}x faster)"
        lines.append(f"{name:12} {cells[0]:13} {row['keras_accuracy']:<9.2%} {cells[1]:16} {cells[2]:15} {cells[3]:17} "
                     f"{cells[4]}")
    return "\n".join(lines)


def aims(rows):
    """Whether the distilled student meets issue 54's aims, and how it compares with the labels alone.

    >>> rows = {"teacher": {"parameters": 20, "accuracy": 0.9, "size": 23, "model_size": 20, "latency_ms": 10.0},
    ...         "distilled": {"parameters": 4, "accuracy": 0.88, "size": 7, "model_size": 4, "latency_ms": 4.0},
    ...         "labels_only": {"parameters": 4, "accuracy": 0.85, "size": 7, "model_size": 4, "latency_ms": 4.0}}
    >>> print(aims(rows))
    aims (the distilled student): parameters <= 1/4: yes; accuracy >= 97% of the teacher's: yes (97.8%); int8 file \
<= 1/4: text.tflite no (0.30x), token_ids.tflite yes (0.20x); >= 2x as fast: yes (2.5x); distilled 88.00% vs the \
labels alone 85.00% (+3.00 points)
    """
    teacher, student = rows["teacher"], rows["distilled"]
    yes = {True: "yes", False: "no"}
    retained, speed = student["accuracy"] / teacher["accuracy"], teacher["latency_ms"] / student["latency_ms"]
    ratio = {key: student[key] / teacher[key] for key in ("parameters", "size", "model_size")}
    quarter = {key: yes[value <= 0.25] for key, value in ratio.items()}
    line = (f"aims (the distilled student): parameters <= 1/4: {quarter['parameters']}; accuracy >= 97% of the "
            f"teacher's: {yes[retained >= 0.97]} ({retained:.1%}); int8 file <= 1/4: text.tflite {quarter['size']} "
            f"({ratio['size']:.2f}x), token_ids.tflite {quarter['model_size']} ({ratio['model_size']:.2f}x); >= 2x as "
            f"fast: {yes[speed >= 2]} ({speed:.1f}x)")
    if "labels_only" in rows:
        other = rows["labels_only"]["accuracy"]
        line += (f"; distilled {student['accuracy']:.2%} vs the labels alone {other:.2%} "
                 f"({100 * (student['accuracy'] - other):+.2f} points)")
    return line


if __name__ == "__main__":
    main()
