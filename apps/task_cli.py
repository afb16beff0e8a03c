"""The command line shared by the task apps (sentence, NER and QA): `train | evaluate | predict`,
each with --json and --verbose (`app_cli`), built by `task_parser` and run by `run_command`; and
the argument types that refuse a bad number before any work (also used by pretrain, demo, embed).
Imports neither Keras nor TensorFlow."""

import argparse
import contextlib
import math
import os
import pathlib
import sys

from app_cli import HelpFormatter, add_dtype_option, add_output_options, emit, for_people
from cli_errors import add_debug_option

# The recipes' settings that their arguments name otherwise (setting -> argument), for messages.
SETTING_OPTIONS = {"learning_rate": "lr", "label_names": "labels"}


def task_parser(description=None):
    """(parser, commands): an argparse parser whose `commands` take the subparsers.

    Example:
    >>> parser, commands = task_parser("A toy app.")
    >>> train = add_train_command(commands, "CoNLL file", "sentences", held_out=False)
    >>> args = parser.parse_args(["train", "--data", "a.txt", "--out", "run", "--progress", "2", "--json"])
    >>> args.command, args.epochs, args.lr, args.mixed_precision, args.progress, args.json, args.verbose
    ('train', 3, 3e-05, False, 2, True, False)
    >>> [parser.parse_args(["train", "--data", "a.txt", "--out", "run", *flags]).mixed_precision
    ...  for flags in (["--mixed-precision"], ["--mixed-precision", "float16", "--json"])]
    [True, 'float16']
    """
    parser = argparse.ArgumentParser(description=description, formatter_class=HelpFormatter)
    add_debug_option(parser)
    return parser, parser.add_subparsers(dest="command", required=True)


def add_train_command(commands, data_format, unit="examples", epochs=3, learning_rate=3e-5,
                      max_length=128, held_out=True):
    """Adds the `train` command with the options every task takes (`add_train_options`); returns it to add more.

    Args:
        commands: the subparsers of `task_parser`.
        data_format, unit, epochs, learning_rate, max_length, held_out: as `add_train_options`'s.
    """
    train = commands.add_parser("train", help="fine-tune and write a run folder", formatter_class=HelpFormatter)
    return add_train_options(train, data_format, unit, epochs, learning_rate, max_length, held_out)


def add_train_options(train, data_format, unit="examples", epochs=3, learning_rate=3e-5, max_length=128,
                      held_out=True, init=True):
    """Adds the options every task's training takes to `train` (the `train` command of a task app, or the parser of
    an app that only trains: apps/distill.py); returns it.

    Options: --data --init --out --epochs --batch-size --lr --max-length --mixed-precision
    --distribution --mesh --gradient-accumulation --remat (`add_distribution_options`) --limit
    --validation-limit --seed --progress --quiet --checkpoint-every --restart --json --verbose, and with
    `held_out` --valid --validation-fraction --patience (a validation set, seeded split of --data by
    default, watched by early stopping). `validation_limit(args)` reads --validation-limit.

    Args:
        train: an argparse parser.
        data_format: str. What --data (and --valid) hold, for the help.
        unit: str. What --limit counts ("examples", "sentences", "questions").
        epochs, learning_rate, max_length: the task's defaults.
        held_out: bool. Add the validation options.
        init: bool. Add --init (a distillation names its student otherwise).
    """
    train.add_argument("--data", required=True, help=f"training {data_format}")
    if held_out:
        train.add_argument("--valid", help=f"validation {data_format} (default: a seeded split of --data)")
    if init:
        train.add_argument("--init", default="all_minilm_l6_v2",
                           help="preset, 'all_minilm_l6_v2', a folder from apps/pretrain.py, or a run folder "
                                "of a fine-tuned model (of the same task and labels: trained further, head "
                                "included; of another: its backbone, with a new head)")
    train.add_argument("--out", required=True,
                       help="run folder to write (e.g. saved_models/NAME), checked before training; an existing "
                            "one must be a run folder (it is replaced at the end), and one run at a time writes it")
    train.add_argument("--epochs", type=positive_int, default=epochs, help="passes over the training data")
    train.add_argument("--batch-size", type=positive_int, default=32, help="examples per step")
    train.add_argument("--lr", type=positive_float, default=learning_rate, help="peak learning rate")
    train.add_argument("--max-length", type=sequence_length, default=max_length,
                       help="tokens per model input, specials included (at least 3)")
    add_mixed_precision_option(train)
    add_distribution_options(train)
    if held_out:
        train.add_argument("--validation-fraction", type=fraction, default=0.1,
                           help="share of --data held out for validation when --valid is not given")
        train.add_argument("--patience", type=non_negative_int, default=1, help="early stopping patience, in epochs")
    train.add_argument("--limit", type=positive_int, help=f"train on a seeded subset of this many {unit}")
    train.add_argument("--validation-limit", type=positive_int,
                       help=f"validate on a seeded subset of this many {unit} (default: --limit, else all)")
    train.add_argument("--seed", type=int, default=0, help="seeds the split, the subsets, the shuffles and the head")
    train.add_argument("--progress", type=_progress, default="auto",
                       help="0 none, 1 progress bar, 2 one line per epoch, lines (a line every 30 s with the time "
                            "left), auto (a bar on a terminal, else lines)")
    train.add_argument("--quiet", dest="progress", action="store_const", const=0, help="no progress: --progress 0")
    train.add_argument("--checkpoint-every", type=checkpoint_interval, default="5min", metavar="N|Mmin",
                       help="back the run up every N steps or every M minutes, within epochs too (and at each "
                            "epoch's end): after a kill, the same command resumes from the last backup, on the "
                            "batches the uninterrupted run had")
    train.add_argument("--restart", action="store_true",
                       help="start over: discard the backup an interrupted run of --out left (without it the run "
                            "resumes from the backup, and is refused, naming them, if settings changed)")
    add_output_options(train)
    return train


def add_class_weight_option(train, unit="example", classes="class", example="negative=3,positive=1"):
    """Adds --class-weight to the `train` command of a task with one class a `unit` (a classifier's example, a
    tagger's word: its `classes`, weighed as in `example`); `train_options` passes it on as the recipe's
    `class_weight`."""
    train.add_argument("--class-weight", type=class_weights, metavar="balanced|NAME=W,...",
                       help=f"weigh each {unit}'s loss by its {classes}: 'balanced' (a {classes}'s weight is the "
                            f"training {unit}s / (the {classes} names in them x that {classes}'s {unit}s), as "
                            f"scikit-learn's), or {classes} names (or ids) and weights, e.g. {example} (a {classes} "
                            "left out weighs 1)")
    return train


def class_weights(text):
    """argparse type of --class-weight: "balanced", or NAME=WEIGHT pairs separated by commas (a class's name, or its
    id: digits), each weight a finite number, 0 or more.

    Example:
    >>> class_weights("balanced"), class_weights("B-PER=2, O=0.5"), class_weights("1=3")
    ('balanced', {'B-PER': 2.0, 'O': 0.5}, {1: 3.0})
    """
    if text == "balanced":
        return text
    weights = {}
    for pair in text.split(","):
        name, equals, weight = pair.strip().rpartition("=")
        if not equals or not name:
            raise argparse.ArgumentTypeError(f"expected 'balanced' or NAME=WEIGHT pairs separated by commas "
                                             f"(negative=3,positive=1), got {pair.strip()!r}")
        weights[int(name) if name.isdigit() else name] = _checked(
            float, weight, lambda value: 0 <= value < math.inf, f"a finite weight, 0 or more, for {name!r}")
    return weights


def checkpoint_interval(text):
    """argparse type of --checkpoint-every: "200" (steps) -> {"backup_steps": 200}, "5min" -> {"backup_minutes": 5.0}.

    Example:
    >>> checkpoint_interval("200"), checkpoint_interval("2.5min")
    ({'backup_steps': 200}, {'backup_minutes': 2.5})
    """
    if text.endswith("min"):
        return {"backup_minutes": positive_float(text[: -len("min")])}
    try:
        return {"backup_steps": positive_int(text)}
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number of steps (200) or of minutes (5min), "
                                         f"got {text!r}") from None


def add_distribution_options(parser):
    """Adds --distribution, --mesh, --gradient-accumulation and --remat to a command that trains.

    Apply them with `apply_distribution(args)` once the arguments are read and before the
    model is built; pass `args.gradient_accumulation` and `args.remat` to the trainer.

    Example:
    >>> parser = add_distribution_options(argparse.ArgumentParser())
    >>> args = parser.parse_args(["--distribution", "model", "--mesh", "2x4", "--gradient-accumulation", "4"])
    >>> args.distribution, args.mesh, args.gradient_accumulation, args.remat
    ('model', (2, 4), 4, False)
    """
    parser.add_argument("--distribution", choices=("none", "data", "model"), default="none",
                        help="data = the model on every local device, each batch split over them "
                             "(keras.distribution on JAX, tf.distribute.MirroredStrategy on TensorFlow; torch: "
                             "one process per device, started by torchrun; JAX across processes: one per host, "
                             "each with KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, "
                             "KERAS_DISTRIBUTION_PROCESS_ID set; process 0 writes the run folder: "
                             "docs/distributed.md); model = the weights sharded Megatron-style over --mesh's "
                             "SHARDS (JAX)")
    parser.add_argument("--mesh", type=mesh_shape, metavar="RxS",
                        help="REPLICASxSHARDS for --distribution model, e.g. 2x4 on 8 devices: 2 copies of the "
                             "model, each split over 4 devices (the product must be the number of devices)")
    parser.add_argument("--gradient-accumulation", type=positive_int, default=1, metavar="N",
                        help="step the optimizer once every N batches on their mean gradient: the effective "
                             "batch is N x --batch-size")
    parser.add_argument("--remat", action="store_true",
                        help="recompute each transformer block in the backward pass instead of keeping its "
                             "activations: less memory, about a third more compute")
    return parser


def apply_distribution(args, config=None):
    """Activates the distribution of --distribution and --mesh (see `add_distribution_options`).

    On JAX, `keras.distribution`'s; on TensorFlow, --distribution data is a
    `tf.distribute.MirroredStrategy` over every local device (`kbert.distribution.activate`);
    on torch, this process joins the processes torchrun started (`data_parallel()`); on JAX,
    the job of several processes that KERAS_DISTRIBUTION_JOB_ADDRESSES,
    KERAS_DISTRIBUTION_NUM_PROCESSES and KERAS_DISTRIBUTION_PROCESS_ID describe, if set
    (`kbert.distribution.join_jax_job`; --distribution data only).
    Call it before the model is built: weights are laid out when they are created. A bad
    choice raises a ValueError naming the numbers (the apps exit 2 on it, before any
    training): a mesh whose product is not the number of devices, a mesh without
    --distribution model (or the other way round), --distribution model off JAX,
    --distribution data on torch outside torchrun (naming the variables not set), and, with
    `config` (a `BertConfig` or a preset name), a model dimension that does not divide its
    heads, hidden size or intermediate size. A `config` that names a folder is not read
    here: `fit` checks the mesh against the model it built (`BertTask.fit`), before its
    first step. Returns the distribution (None for "none").
    """
    if args.mesh is not None and args.distribution != "model":
        raise ValueError(f"--mesh {'x'.join(map(str, args.mesh))} is for --distribution model "
                         f"(got --distribution {args.distribution}).")
    if args.distribution == "model" and args.mesh is None:
        raise ValueError("--distribution model needs --mesh REPLICASxSHARDS, e.g. --mesh 2x4 on 8 devices.")
    import kbert.distribution
    from kbert.config import PRESETS

    if isinstance(config, str) and config not in PRESETS:
        config = None  # a folder
    distribution = kbert.distribution.get(args.distribution, args.mesh, config=config)
    if args.distribution == "model" and getattr(distribution, "num_processes", 1) > 1:
        raise ValueError("--distribution model across JAX processes is not built in the apps (their batches are "
                         "shared out by process under --distribution data only); use --distribution data.")
    kbert.distribution.activate(distribution)
    return distribution


# what a file's columns hold -> the help of its flag (--text-column, ...); each task app names the uses it reads
COLUMN_HELP = {
    "text": "the texts (default: the first of sentence, text; pairs: sentence1, premise, question1, question, text)",
    "pair": "the second texts (default: the first of sentence2, hypothesis, question2, sentence, text_pair)",
    "label": "the labels: names, ids or scores; multi-label: lists or comma-separated (default: the first of "
             "label, labels, score, gold_label)",
    "tokens": "each sentence's words, a list (CSV: a JSON list or words separated by spaces; default: tokens, "
              "words)",
    "tags": "each sentence's tags, a list of BIO names or of ids of --tag-names (default: ner_tags, tags, labels)",
    "id": "the question ids (default: id)", "title": "the article titles (default: title)",
    "context": "the contexts (default: context)", "question": "the questions (default: question)",
    "answers": "the answers, {text: [...], answer_start: [...]} (default: answers)",
}


def add_layout_options(command, uses, formats=("csv", "tsv", "jsonl", "json", "parquet"), class_names=None):
    """Adds --format, --delimiter and a --USE-column flag for each of `uses` (keys of `COLUMN_HELP`): how the
    command's data files are laid out (`layout(args)` reads them); with `class_names` (the flag's name, e.g.
    "tag-names"), a flag naming the class ids a column holds, as comma-separated names or a file of a name a line.

    Example:
    >>> parser = add_layout_options(argparse.ArgumentParser(), ("text", "label"))
    >>> layout(parser.parse_args(["--format", "csv", "--text-column", "review"]))
    Layout(data_format='csv', delimiter=None, columns={'text': 'review'}, class_names=None)
    """
    group = command.add_argument_group("data layout", "columns by name: Hugging Face's layouts by default")
    group.add_argument("--format", choices=formats, help="the data files' format (default: by their suffix)")
    group.add_argument("--delimiter", help="CSV's field delimiter (default: a comma)")
    for use in uses:
        group.add_argument(f"--{use}-column", metavar="NAME", help=f"the column of {COLUMN_HELP[use]}")
    if class_names:
        group.add_argument(f"--{class_names}", type=_class_names, metavar="NAMES|FILE",
                           help="the names of the ids the file holds, in id order: comma-separated, or a file "
                                "of one name a line")
    return command


def layout(args):
    """The `kbert.data.readers.tables.Layout` of the options of `add_layout_options`."""
    from kbert.data.readers.tables import Layout

    columns = {key[: -len("_column")]: value for key, value in vars(args).items()
               if key.endswith("_column") and value}
    names = getattr(args, "tag_names", None)
    return Layout(args.format, args.delimiter, columns or None, tuple(names) if names else None)


def _class_names(text):
    """argparse type of --tag-names: comma-separated names, or the lines of a file."""
    path = pathlib.Path(text)
    if "," not in text and path.is_file():
        names = [line.strip() for line in path.read_text("utf-8").splitlines() if line.strip()]
    else:
        names = [name.strip() for name in text.split(",")]
    if len(names) < 2 or "" in names or len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(f"expected two or more distinct names, comma-separated or a line each "
                                         f"in a file, got {text!r}")
    return names


def validation_limit(args):
    """The validation examples to keep: --validation-limit, else --limit (a quick run validates quickly too)."""
    return args.validation_limit or args.limit


def train_options(args):
    """The keyword arguments of a recipe's `train` that the options of `add_train_command` give.

    All but --data, --init and --out (the recipe's first arguments) and --distribution and
    --mesh (`apply_distribution`); --valid, --validation-fraction and --patience when the
    command has them (`held_out`).

    Example:
    >>> parser, commands = task_parser()
    >>> _ = add_train_command(commands, "CoNLL file", held_out=False)
    >>> options = train_options(parser.parse_args(["train", "--data", "a.txt", "--out", "run", "--limit", "8"]))
    >>> options["learning_rate"], options["limit"], options["validation_limit"], options["verbose"], "valid" in options
    (3e-05, 8, 8, 'auto', False)
    >>> options["backup_steps"], options["backup_minutes"]
    (None, 5.0)
    """
    options = dict(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr, max_length=args.max_length,
                   mixed_precision=args.mixed_precision, limit=args.limit, validation_limit=validation_limit(args),
                   seed=args.seed, gradient_accumulation=args.gradient_accumulation, remat=args.remat,
                   restart=args.restart, verbose=args.progress,
                   **{"backup_steps": None, "backup_minutes": None, **args.checkpoint_every})
    if hasattr(args, "patience"):
        options.update(valid=args.valid, validation_fraction=args.validation_fraction, patience=args.patience)
    if getattr(args, "class_weight", None) is not None:
        options["class_weight"] = args.class_weight
    return options


def run_command(args, task, model_class, train, evaluate, predict, describe, regression=None):
    """Runs the command of a task app (`task_parser`), once `parse_args` has read `args`.

    - train: applies --distribution (`apply_distribution`), claims the run folder --out (one
      run at a time; refused before training when it cannot be written), calls `train()`,
      then prints "Wrote OUT", or with --json its metrics. A backup of an interrupted run with
      other settings is refused, naming them as flags (`run_checks.refusing_in_flags`), unless
      --restart. In a job of several processes (torchrun, or JAX processes), process 0 does that;
      the others train with it and write and print nothing (`kbert.distribution.is_chief`).
    - evaluate: checks that --model is a run folder of `task` and that the metrics file can be
      written (an existing --out only if an earlier evaluation), then calls `evaluate()` (the
      recipe prints its scores for people) holding the folder's shared lock (no training run
      replaces it meanwhile: `reading_run_folder`); with --json, the metrics on stdout and what
      the recipe prints on stderr.
    - predict: checks --model as evaluate does, then prints each result of `predict()` (read
      under the same lock), by `describe` or as JSON lines.

    Args:
        args: the parsed arguments.
        task: str. The task a run folder records ("sentiment", "ner", "qa", ...).
        model_class: str. Its task model's class name (`kbert.saving.check_run_task`).
        train, evaluate, predict: functions of no arguments that run the recipe's command on
            `args`: train and evaluate return the metrics, predict a list of results.
        describe: a result of `predict()` as text for people.
        regression: bool or None. For a `BertClassifier`: one score, or classes.
    """
    from kbert.saving import check_replaceable, check_writable, claim_run_folder, reading_run_folder
    from run_checks import check_run_task, refusing_in_flags

    if args.command == "train":
        apply_distribution(args, config=args.init)
        from kbert.distribution import is_chief

        if not is_chief():
            with open(os.devnull, "w") as nowhere, contextlib.redirect_stdout(nowhere), refusing_in_flags(
                    args, SETTING_OPTIONS):
                train()
            return
        with claim_run_folder(args.out, "--out"), for_people(args), refusing_in_flags(args, SETTING_OPTIONS):
            metrics = train()
        emit(args, [metrics], lambda metrics: f"Wrote {args.out}")
        return
    check_run_task(args.model, task, model_class, regression=regression)
    if args.command == "evaluate":
        check_writable(args.out or pathlib.Path(args.model) / "eval.json", "--out" if args.out else "--model")
        if args.out:  # never the run's model or metrics, nor any file but an earlier evaluation
            from kbert.training.results import is_evaluation_file

            check_replaceable(args.out, "an evaluation file", is_evaluation_file, "--out")
        with reading_run_folder(args.model, "--model"), for_people(args):  # no training replaces it meanwhile
            metrics = evaluate()
        if args.json:
            emit(args, [metrics])
    else:
        with reading_run_folder(args.model, "--model"):
            results = predict()
        emit(args, results, describe)


def add_evaluate_command(commands, help, data_format):
    """Adds the `evaluate` command: --model --data --out --batch-size --quiet; returns it."""
    evaluate = commands.add_parser("evaluate", help=help, formatter_class=HelpFormatter)
    evaluate.add_argument("--model", required=True, help="run folder written by train")
    evaluate.add_argument("--data", required=True, help=data_format)
    evaluate.add_argument("--out", help="metrics JSON (default: MODEL/eval_<data name>.json); an existing file only "
                          "when it is an earlier evaluation")
    evaluate.add_argument("--batch-size", type=positive_int, default=64, help="examples per step")
    evaluate.add_argument("--quiet", action="store_true",
                          help="no progress (by default a bar on a terminal, else a line every 30 s with the time left)")
    add_output_options(evaluate)
    return evaluate


def add_predict_command(commands, help, texts=True):
    """Adds the `predict` command: --model --batch-size --dtype --json --verbose, and with `texts` the texts;
    returns it."""
    predict = commands.add_parser("predict", help=help, formatter_class=HelpFormatter)
    predict.add_argument("--model", required=True, help="run folder written by train")
    if texts:
        predict.add_argument("texts", nargs="*", help="texts (default: one per line on stdin)")
    predict.add_argument("--batch-size", type=positive_int, default=32, help="examples per step")
    add_dtype_option(predict)
    add_output_options(predict)
    return predict


def texts_or_stdin(texts):
    """`texts` if any, else the lines of stdin; exits with a message when both are empty.

    A line of stdin that is not UTF-8 raises ValueError naming it (`stdin:3: invalid UTF-8: ...`).
    """
    if not texts:
        from kbert.data.readers.text_file import utf8_error

        if hasattr(sys.stdin, "reconfigure"):
            sys.stdin.reconfigure(errors="surrogateescape")  # a bad byte reaches utf8_error, which names it
        texts = []
        for number, line in enumerate(sys.stdin, start=1):
            problem = utf8_error(line)
            if problem:
                raise ValueError(f"stdin:{number}: {problem}")
            texts.append(line.rstrip("\r\n"))
    if not texts:
        sys.exit("Nothing to predict: give texts as arguments or lines on stdin.")
    return texts


def positive_int(text):
    """argparse type: an integer above 0."""
    return _checked(int, text, lambda value: value > 0, "a positive integer")


def non_negative_int(text):
    """argparse type: an integer, 0 or more."""
    return _checked(int, text, lambda value: value >= 0, "an integer >= 0")


def positive_float(text):
    """argparse type: a finite number above 0."""
    return _checked(float, text, lambda value: 0 < value < math.inf, "a finite number above 0")


def fraction(text):
    """argparse type: a number strictly between 0 and 1."""
    return _checked(float, text, lambda value: 0 < value < 1, "a number between 0 and 1 (exclusive)")


def probability(text):
    """argparse type: a number above 0, at most 1."""
    return _checked(float, text, lambda value: 0 < value <= 1, "a number above 0 and at most 1")


def ratio(text):
    """argparse type: a number from 0 to 1."""
    return _checked(float, text, lambda value: 0 <= value <= 1, "a number from 0 to 1")


def sequence_length(text):
    """argparse type: tokens per input, at least 3 ([CLS], one token, [SEP])."""
    return _checked(int, text, lambda value: value >= 3, "an integer >= 3 ([CLS], a token, [SEP])")


def mesh_shape(text):
    """argparse type of --mesh: "2x4" -> (2, 4).

    Example:
    >>> mesh_shape("2x4")
    (2, 4)
    """
    sizes = text.lower().split("x")
    if len(sizes) != 2 or not all(size.isdigit() and int(size) > 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"expected REPLICASxSHARDS, two positive integers such as 2x4, got {text!r}")
    return tuple(int(size) for size in sizes)


def add_mixed_precision_option(parser):
    """--mixed-precision [float16]: the recipes' `mixed_precision` (False, True for bfloat16, or "float16")."""
    parser.add_argument("--mixed-precision", nargs="?", const=True, default=False, type=mixed_precision,
                        metavar="float16", help="compute in bfloat16, keep float32 weights; --mixed-precision float16: "
                                                "in float16 under loss scaling, for GPUs without bfloat16")


def mixed_precision(text):
    """argparse type of --mixed-precision's value: True for "bfloat16" (what the bare flag means), or "float16"."""
    if text not in ("bfloat16", "float16"):
        raise argparse.ArgumentTypeError(f"expected bfloat16 or float16 (or nothing: bfloat16), got {text!r}")
    return True if text == "bfloat16" else text


def _checked(kind, text, is_valid, expected):
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not is_valid(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def _progress(text):
    if text not in ("0", "1", "2", "lines", "auto"):
        raise argparse.ArgumentTypeError(f"expected 0, 1, 2, lines or auto, got {text!r}")
    return text if text in ("lines", "auto") else int(text)
