"""The command line shared by apps/sentiment.py, apps/nli.py, apps/similarity.py and apps/multi_label.py.

Its parser is built before Keras loads (--help answers at once), so it knows each problem by the
shape of its command line, `COMMAND_LINES`; the problem itself, `kbert.recipes.SentenceProblem`, is
looked up by name once the arguments are read (tests/apps/test_app_cli.py checks they agree).
"""

import argparse
import sys

from app_cli import parse_args
from task_cli import (add_class_weight_option, add_evaluate_command, add_layout_options, add_predict_command,
                      add_train_command, layout, positive_int, run_command, task_parser, texts_or_stdin, train_options)

# problem name -> (texts per example, regression, multi-label): what the command line of each sentence problem takes
COMMAND_LINES = {"sentiment": (1, False, False), "nli": (2, False, False), "similarity": (2, True, False),
                 "multi_label": (1, False, True)}


def main(problem_name, argv=None, description=None):
    """Parses `train | evaluate | predict` arguments for the problem `problem_name` and runs the command.

    Args:
        problem_name: str. A key of `COMMAND_LINES`, the name of a `kbert.recipes.SentenceProblem`.
        argv: list of str or None (sys.argv).
        description: str. The app's help text.
    """
    args = parse_args(parser(problem_name, description), argv)
    from kbert.recipes import MULTI_LABEL, NLI, SENTIMENT, SIMILARITY, sentence

    problem = {problem.name: problem for problem in (SENTIMENT, NLI, SIMILARITY, MULTI_LABEL)}[problem_name]
    run_command(
        args, problem.name, "BertClassifier", regression=problem.regression,
        train=lambda: sentence.train(
            problem, args.data, args.init, args.out, lora_rank=args.lora_rank, labels=args.labels,
            skip_bad_rows=args.skip_bad_rows, layout=layout(args), **_window_options(problem, args),
            **train_options(args)),
        evaluate=lambda: sentence.evaluate(problem, args.model, args.data, out=args.out, batch_size=args.batch_size,
                                           skip_bad_rows=args.skip_bad_rows, layout=layout(args),
                                           verbose=0 if args.quiet else "auto"),
        predict=lambda: sentence.predict(args.model, *_predict_inputs(problem, args), batch_size=args.batch_size,
                                         dtype=args.dtype),
        describe=_describe)


def parser(problem_name, description=None):
    """The argparse parser of the sentence app of `problem_name`."""
    num_texts, regression, multi_label = COMMAND_LINES[problem_name]
    parser, commands = task_parser(description)
    columns = ("sentence<TAB>label1,label2 (or an empty cell)" if multi_label else "sentence<TAB>label"
               if num_texts == 1 else "sentence1<TAB>sentence2<TAB>label")
    uses = ("text", "label") if num_texts == 1 else ("text", "pair", "label")

    train = add_train_command(commands, f"TSV ({columns}; a header row optional), or CSV, JSON Lines, JSON or "
                                        "Parquet with named columns")
    add_layout_options(train, uses)
    train.add_argument("--lora-rank", type=positive_int, help="train LoRA factors of this rank (and the head) only")
    if not regression:
        default = "the sorted names the training file uses" if multi_label else (
            f"{problem_name}'s, see kbert.recipes.{problem_name.upper()}")
        train.add_argument("--labels", type=_label_names,
                           help=f"comma-separated classes in id order (default: {default})")
    if not regression and not multi_label:
        add_class_weight_option(train)
    train.add_argument("--skip-bad-rows", action="store_true", help="skip unreadable rows instead of failing")
    if num_texts == 1:
        train.add_argument("--doc-stride", type=positive_int,
                           help="read a text longer than --max-length through windows starting every this many "
                                "tokens, combined into one prediction (default: its first --max-length tokens only)")
        train.add_argument("--train-windows", choices=("first", "all"), default="first",
                           help="with --doc-stride: train on each text's first window, or on all its windows "
                                "(each with the text's label: a row per window, so longer epochs)")
        train.add_argument("--window-pooling", choices=("mean", "max"), default="mean",
                           help="with --doc-stride: combine a text's windows by the mean or the max of their logits")
    train.set_defaults(labels=None)

    evaluate = add_evaluate_command(commands, "score a run folder on a labeled file",
                                    f"TSV ({columns}), or a table with named columns")
    evaluate.add_argument("--skip-bad-rows", action="store_true", help="skip unreadable rows instead of failing")
    add_layout_options(evaluate, uses)

    predict = add_predict_command(commands, "label (or score) new texts"
                                  + (": the classes at or above the model's threshold" if multi_label else ""),
                                  texts=num_texts == 1)
    predict.add_argument("--data", help="a file of the texts to label, laid out as train's (its labels, if any, "
                                        "unread)")
    add_layout_options(predict, uses[:-1])
    if num_texts == 2:
        predict.add_argument("--premise", action="append",
                             help="first sentence (repeatable; default: premise<TAB>hypothesis lines on stdin)")
        predict.add_argument("--hypothesis", action="append", help="second sentence, one per --premise")
    return parser


def _window_options(problem, args):
    """The recipe's keywords of --doc-stride, --train-windows and --window-pooling (single texts only)."""
    if problem.num_texts != 1:
        return {}
    return dict(doc_stride=args.doc_stride, train_windows=args.train_windows, window_pooling=args.window_pooling)


def _predict_inputs(problem, args):
    """(texts, pairs) from --data, else the arguments, else stdin (pairs: one tab per line)."""
    if args.data:
        if problem.num_texts == 1 and args.texts:
            sys.exit("Give texts as arguments or --data, not both.")
        from kbert.data.readers.sentence_table import read_sentences

        examples = read_sentences(args.data, problem.num_texts, labeled=False, layout=layout(args))
        return examples.texts, examples.pairs
    if problem.num_texts == 1:
        return texts_or_stdin(args.texts), None
    if args.premise or args.hypothesis:
        if len(args.premise or []) != len(args.hypothesis or []):
            sys.exit("Give one --hypothesis for each --premise.")
        return args.premise, args.hypothesis
    texts, pairs = [], []
    for number, line in enumerate(texts_or_stdin(None), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            sys.exit(f"stdin, line {number}: expected premise<TAB>hypothesis, found {len(fields)} column(s).")
        texts.append(fields[0])
        pairs.append(fields[1])
    return texts, pairs


def _label_names(text):
    """argparse type of --labels: two or more distinct, non-empty names."""
    names = [name.strip() for name in text.split(",")]
    if len(names) < 2 or "" in names or len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(f"expected two or more distinct comma-separated names, got {text!r}")
    return names


def _describe(result):
    text = result["text"] if "pair" not in result else f"{result['text']} ||| {result['pair']}"
    text = text if len(text) <= 100 else text[:99] + "…"
    if "score" in result:
        answer = f"score {result['score']:.3f}"
    elif "labels" in result:
        answer = ",".join(f"{name} {result['probabilities'][name]:.3f}" for name in result["labels"]) or "(none)"
    elif result["label"] is None:
        answer = "-"
    else:
        answer = f"{result['label']} {result['probability']:.3f}"
    note = f"  ({result['note']})" if "note" in result else ""
    return f"{answer:24} {text}{note}"
