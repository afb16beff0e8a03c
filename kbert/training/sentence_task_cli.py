"""The command line shared by apps/sentiment.py, apps/nli.py and apps/similarity.py."""

import argparse
import json
import sys

from kbert.training import sentence_task


def main(task, argv=None, description=None):
    """Parses `train | evaluate | predict` arguments for `task` and runs the command.

    Args:
        task: `kbert.training.SentenceTask`.
        argv: list of str or None (sys.argv).
        description: str. The app's help text.
    """
    args = parser(task, description).parse_args(argv)
    if args.command == "train":
        sentence_task.train(
            task, args.data, args.init, args.out, valid=args.valid, epochs=args.epochs,
            batch_size=args.batch_size, learning_rate=args.lr, max_length=args.max_length,
            lora_rank=args.lora_rank, mixed_precision=args.mixed_precision,
            validation_fraction=args.validation_fraction, limit=args.limit, patience=args.patience,
            seed=args.seed, labels=args.labels.split(",") if args.labels else None,
            skip_bad_rows=args.skip_bad_rows, verbose=args.verbose)
    elif args.command == "evaluate":
        sentence_task.evaluate(task, args.model, args.data, out=args.out, batch_size=args.batch_size,
                               skip_bad_rows=args.skip_bad_rows)
    else:
        texts, pairs = _predict_inputs(task, args)
        if not texts:
            sys.exit("Nothing to predict: give texts as arguments or lines on stdin.")
        results = sentence_task.predict(args.model, texts, pairs, batch_size=args.batch_size)
        for result in results:
            print(json.dumps(result) if args.json else _describe(result))


def parser(task, description=None):
    """The argparse parser of a sentence-task app."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    columns = "sentence<TAB>label" if task.num_texts == 1 else "sentence1<TAB>sentence2<TAB>label"

    train = commands.add_parser("train", help="fine-tune and write a run folder")
    train.add_argument("--data", required=True, help=f"training TSV ({columns}, header row)")
    train.add_argument("--valid", help="validation TSV (default: a seeded split of --data)")
    train.add_argument("--init", default="all_minilm_l6_v2",
                       help="preset, 'all_minilm_l6_v2' or a folder from apps/pretrain.py")
    train.add_argument("--out", required=True, help="run folder to write (e.g. saved_models/NAME)")
    train.add_argument("--epochs", type=int, default=3)
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--lr", type=float, default=3e-5, help="peak learning rate")
    train.add_argument("--max-length", type=int, default=128, help="tokens per example, specials included")
    train.add_argument("--lora-rank", type=int, help="train LoRA factors of this rank (and the head) only")
    train.add_argument("--mixed-precision", action="store_true", help="compute in bfloat16")
    train.add_argument("--validation-fraction", type=float, default=0.1)
    train.add_argument("--limit", type=int, help="train on a seeded subset of this many examples")
    train.add_argument("--patience", type=int, default=1, help="early stopping patience, in epochs")
    train.add_argument("--seed", type=int, default=0)
    if not task.regression:
        train.add_argument("--labels", help=f"comma-separated classes in id order (default: "
                                            f"{','.join(task.label_names or ['from the data'])})")
    train.add_argument("--verbose", type=_verbosity, default="auto", help="0 silent, 1 progress bar, 2 one line per epoch")
    train.add_argument("--skip-bad-rows", action="store_true", help="skip unreadable rows instead of failing")
    train.set_defaults(labels=None)

    evaluate = commands.add_parser("evaluate", help="score a run folder on a labeled TSV")
    evaluate.add_argument("--model", required=True, help="run folder written by train")
    evaluate.add_argument("--data", required=True, help=f"TSV ({columns})")
    evaluate.add_argument("--out", help="metrics JSON (default: MODEL/eval_<data name>.json)")
    evaluate.add_argument("--batch-size", type=int, default=64)
    evaluate.add_argument("--skip-bad-rows", action="store_true")

    predict = commands.add_parser("predict", help="label (or score) new texts")
    predict.add_argument("--model", required=True, help="run folder written by train")
    if task.num_texts == 1:
        predict.add_argument("texts", nargs="*", help="texts (default: one per line on stdin)")
    else:
        predict.add_argument("--premise", action="append", help="first sentence (repeatable)")
        predict.add_argument("--hypothesis", action="append", help="second sentence, one per --premise")
    predict.add_argument("--json", action="store_true", help="one JSON object per line")
    predict.add_argument("--batch-size", type=int, default=32)
    return parser


def _verbosity(value):
    return value if value == "auto" else int(value)


def _predict_inputs(task, args):
    """(texts, pairs) from the arguments, else from stdin (pairs: one tab per line)."""
    if task.num_texts == 1:
        texts = args.texts or [line.rstrip("\r\n") for line in sys.stdin]
        return texts, None
    if args.premise or args.hypothesis:
        if len(args.premise or []) != len(args.hypothesis or []):
            sys.exit("Give one --hypothesis for each --premise.")
        return args.premise, args.hypothesis
    texts, pairs = [], []
    for number, line in enumerate(sys.stdin, start=1):
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != 2:
            sys.exit(f"stdin, line {number}: expected premise<TAB>hypothesis, found {len(fields)} column(s).")
        texts.append(fields[0])
        pairs.append(fields[1])
    return texts, pairs


def _describe(result):
    text = result["text"] if "pair" not in result else f"{result['text']} ||| {result['pair']}"
    text = text if len(text) <= 100 else text[:99] + "…"
    if "score" in result:
        answer = f"score {result['score']:.3f}"
    elif result["label"] is None:
        answer = "-"
    else:
        answer = f"{result['label']} {result['probability']:.3f}"
    note = f"  ({result['note']})" if "note" in result else ""
    return f"{answer:24} {text}{note}"
