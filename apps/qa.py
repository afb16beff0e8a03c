"""Extractive question answering (SQuAD v1.1 or 2.0 JSON, or Hugging Face's squad as JSON Lines or Parquet) with
BertQuestionAnswerer, any backend.

    python apps/qa.py train --data ../shared/data/squad/train-v1.1.json --out saved_models/squad
    python apps/qa.py evaluate --model saved_models/squad --data dev-v1.1.json
    python apps/qa.py predict --model saved_models/squad --context article.txt --question "Who ...?"
    python apps/qa.py predict --model saved_models/squad --context "The text itself." --question "Who ...?"
    cat questions.txt | python apps/qa.py predict --model saved_models/squad --context article.txt --json
    echo '{"question": "Who ...?", "context": "..."}' | python apps/qa.py predict --model saved_models/squad

predict reads its questions from stdin when no --question is given: one question a line about
--context, or, without --context, one JSON object a line, {"question": ..., "context": ...}.

Contexts longer than a window are read through overlapping windows (--max-length 384,
--doc-stride 128, BERT's recipe); answers are decoded over all windows of a question and
sliced from the original context. Scores are the official v1.1 exact match and F1 (%).

SQuAD 2.0's questions without an answer (no answers, "is_impossible") are skipped in training
unless --allow-no-answer, which trains on them and lets the model answer "no answer" where its
no-answer score beats the best span's by more than --no-answer-threshold (0; BERT tunes it on
dev, typically between -1 and -5); data with such questions is scored by the official 2.0 rules,
and evaluate reports the threshold that would score best. evaluate and predict take another
--no-answer-threshold, for a model trained without --allow-no-answer too.
"""

import json
import sys

from app_cli import parse_args
from cli_errors import run
from kbert_core.answers import MAX_ANSWER_LENGTH, N_BEST
from kbert_core.windows import MAX_QUESTION_LENGTH, QA_DOC_STRIDE, QA_SEQUENCE_LENGTH
from task_cli import (add_evaluate_command, add_layout_options, add_predict_command, add_train_command, layout,
                      positive_int, run_command, task_parser, texts_or_stdin, train_options)

def main(argv=None):
    """Runs the command in `argv` (default sys.argv)."""
    args = parse_args(parser(), argv)
    from kbert.recipes import qa as recipe

    run_command(
        args, "qa", "BertQuestionAnswerer",
        train=lambda: recipe.train(
            args.data, args.init, args.out, doc_stride=args.doc_stride, max_question_length=args.max_question_length,
            validation_articles=args.validation_articles, articles=args.articles, layout=layout(args),
            allow_no_answer=args.allow_no_answer, no_answer_threshold=args.no_answer_threshold, **train_options(args)),
        evaluate=lambda: recipe.evaluate(args.model, args.data, out=args.out, batch_size=args.batch_size,
                                         layout=layout(args), verbose=0 if args.quiet else "auto",
                                         no_answer_threshold=args.no_answer_threshold),
        predict=lambda: recipe.predict(args.model, *predict_inputs(args), args.n_best, args.max_answer_length,
                                       batch_size=args.batch_size, dtype=args.dtype,
                                       no_answer_threshold=args.no_answer_threshold),
        describe=_describe)


def parser():
    """The argparse parser of this app."""
    parser, commands = task_parser(__doc__)
    data = ("SQuAD v1.1 or 2.0 JSON file, or JSON Lines, JSON or Parquet with a question a row (Hugging Face's squad: "
            "id, title, context, question, answers)")
    formats, uses = ("squad", "jsonl", "json", "parquet", "csv"), ("id", "title", "context", "question", "answers")
    train = add_train_command(commands, data, "questions", epochs=2, learning_rate=5e-5, max_length=QA_SEQUENCE_LENGTH,
                              held_out=False)
    add_layout_options(train, uses, formats)
    train.add_argument("--doc-stride", type=positive_int, default=QA_DOC_STRIDE, help="tokens between window starts")
    train.add_argument("--max-question-length", type=positive_int, default=MAX_QUESTION_LENGTH)
    train.add_argument("--validation-articles", type=positive_int, default=10,
                       help="articles held out for validation")
    train.add_argument("--articles", type=positive_int, help="read only the first N articles")
    train.add_argument("--allow-no-answer", action="store_true",
                       help="train on questions without an answer (SQuAD 2.0) and answer \"no answer\" where the "
                            "context holds none")
    train.add_argument("--no-answer-threshold", type=float, default=0.0,
                       help="with --allow-no-answer: how much the no-answer score (start + end logit at [CLS]) "
                            "must beat the best span's by")
    evaluate = add_evaluate_command(commands, "exact match and F1 of a run folder on SQuAD questions", data)
    add_layout_options(evaluate, uses, formats)
    add_no_answer_threshold_option(evaluate)
    predict = add_predict_command(commands, "answer questions about a context", texts=False)
    predict.add_argument("--context",
                         help="a UTF-8 text file, or the text itself; a one-word value that looks like a file "
                              "name (a '/', or an ending such as .txt) must name an existing file (default: "
                              "each stdin line is a JSON object with its own context)")
    predict.add_argument("--question", action="append",
                         help="a question (repeatable; default: from stdin, see above)")
    predict.add_argument("--n-best", type=positive_int, default=N_BEST, help="answers decoded per question")
    predict.add_argument("--max-answer-length", type=positive_int, default=MAX_ANSWER_LENGTH, help="in tokens")
    add_no_answer_threshold_option(predict)
    return parser


def add_no_answer_threshold_option(command):
    """Adds --no-answer-threshold to evaluate or predict."""
    command.add_argument("--no-answer-threshold", type=float,
                         help="answer \"no answer\" where the model's no-answer score beats the best span's by more "
                              "than this (default: the run's; a model trained without --allow-no-answer answers "
                              "always, and with this its [CLS] score decides, as BERT trains it on every window "
                              "that lacks the answer)")


def predict_inputs(args):
    """(contexts, questions) of `predict`: --context and --question, else questions (or JSON lines) on stdin."""
    if args.question and args.context is None:
        sys.exit("--question needs a --context (or give JSON lines {\"question\", \"context\"} on stdin).")
    if args.context is not None:
        context = read_context(args.context)
        return context, args.question or texts_or_stdin(None)
    contexts, questions = [], []
    for number, line in enumerate(texts_or_stdin(None), start=1):
        try:
            example = json.loads(line)
        except ValueError:
            example = None
        if not isinstance(example, dict) or not all(isinstance(example.get(k), str) for k in ("question", "context")):
            sys.exit(f"stdin:{number}: expected a JSON object with a \"question\" and a \"context\" "
                     f"(or give --context, and a question a line).")
        contexts.append(example["context"])
        questions.append(example["question"])
    return contexts, questions


def read_context(value):
    """The text of the file `value` if it names one, else `value` itself (`kbert_core.context.context_file`'s
    rule, which apps/edge_predict.py follows too: an empty value, a folder, or a value that looks like a file
    name but names no file is refused)."""
    from kbert_core.context import context_file

    try:
        path = context_file(value)
    except ValueError as error:
        sys.exit(str(error))
    if path is None:
        return value
    from kbert.data.readers.text_file import read_text

    context = read_text(path)
    if not context.strip():
        sys.exit(f"--context {path}: the context file is empty.")
    return context


def _describe(result):
    if not result["text"]:
        return f"{result['question']}\n  ({result['note']})"
    return (f"{result['question']}\n  {result['text']!r} [{result['start']}, {result['end']}) "
            f"score {result['score']:.2f} probability {result['probability']:.3f}")


if __name__ == "__main__":
    run(main)
