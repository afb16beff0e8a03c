"""Extractive question answering (SQuAD v1.1 JSON) with BertQuestionAnswerer, any backend.

    python apps/qa.py train --data ../shared/data/squad/train-v1.1.json --out saved_models/squad
    python apps/qa.py evaluate --model saved_models/squad --data dev-v1.1.json
    python apps/qa.py predict --model saved_models/squad --context article.txt --question "Who ...?"

Contexts longer than a window are read through overlapping windows (--max-length 384,
--doc-stride 128, BERT's recipe); answers are decoded over all windows of a question and
sliced from the original context. Scores are the official v1.1 exact match and F1 (%).
"""

import json
import pathlib
import sys

from kbert.training import qa_task

from task_cli import add_evaluate_command, add_predict_command, add_train_command, task_parser


def main(argv=None):
    """Runs the command in `argv` (default sys.argv)."""
    args = parser().parse_args(argv)
    if args.command == "train":
        qa_task.train(args.data, args.init, args.out, epochs=args.epochs, batch_size=args.batch_size,
                      learning_rate=args.lr, max_length=args.max_length, doc_stride=args.doc_stride,
                      max_question_length=args.max_question_length, mixed_precision=args.mixed_precision,
                      validation_articles=args.validation_articles, articles=args.articles, limit=args.limit,
                      validation_limit=args.validation_limit, seed=args.seed, verbose=args.verbose)
    elif args.command == "evaluate":
        qa_task.evaluate(args.model, args.data, out=args.out, batch_size=args.batch_size)
    else:
        context = _read_context(args.context)
        try:
            results = qa_task.predict(args.model, context, args.question, args.n_best, args.max_answer_length,
                                      batch_size=args.batch_size)
        except ValueError as error:
            sys.exit(str(error))
        for result in results:
            print(json.dumps(result) if args.json else _describe(result))


def parser():
    """The argparse parser of this app."""
    parser, commands = task_parser(__doc__)
    train = add_train_command(commands, "SQuAD v1.1 JSON file", "questions", epochs=2, learning_rate=5e-5,
                              max_length=384, held_out=False)
    train.add_argument("--doc-stride", type=int, default=128, help="tokens between window starts")
    train.add_argument("--max-question-length", type=int, default=64)
    train.add_argument("--validation-articles", type=int, default=10, help="articles held out for validation")
    train.add_argument("--articles", type=int, help="read only the first N articles")
    train.add_argument("--validation-limit", type=int, help="score a seeded subset of this many validation questions")
    add_evaluate_command(commands, "exact match and F1 of a run folder on SQuAD JSON", "SQuAD v1.1 JSON file")
    predict = add_predict_command(commands, "answer questions about a context", texts=False)
    predict.add_argument("--context", required=True, help="a text file, or the text itself")
    predict.add_argument("--question", action="append", required=True, help="a question (repeatable)")
    predict.add_argument("--n-best", type=int, default=20)
    predict.add_argument("--max-answer-length", type=int, default=30, help="in tokens")
    return parser


def _read_context(value):
    """The text of the file `value` if it names one, else `value` itself."""
    path = pathlib.Path(value)
    is_file = len(value) < 4096 and "\n" not in value and path.is_file()
    context = path.read_text("utf-8") if is_file else value
    if is_file and not context.strip():
        sys.exit(f"{path}: the context file is empty.")
    return context


def _describe(result):
    if not result["text"]:
        return f"{result['question']}\n  (no answer span found)"
    return (f"{result['question']}\n  {result['text']!r} [{result['start']}, {result['end']}) "
            f"score {result['score']:.2f} probability {result['probability']:.3f}")


if __name__ == "__main__":
    main()
