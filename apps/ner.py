"""Named-entity recognition (CoNLL-2003 style, `token TAG` per line) with BertTokenClassifier, any backend.

    python apps/ner.py train --data ../shared/data/conll2003/train.txt \\
        --valid ../shared/data/conll2003/valid.txt --out saved_models/conll
    python apps/ner.py evaluate --model saved_models/conll --data ../shared/data/conll2003/valid.txt
    python apps/ner.py predict --model saved_models/conll "Angela Merkel visited Paris."
    echo "Angela Merkel visited Paris." | python apps/ner.py predict --model saved_models/conll --json

Tags may be BIO or IOB1 (converted to BIO on reading). Sentences longer than --max-length
tokens are cut into windows at word boundaries, which do not overlap, so every word gets a
prediction. Scores are entity-level precision / recall / F1 as conlleval counts them (micro
and per type).
"""

from app_cli import parse_args
from cli_errors import run
from task_cli import (add_evaluate_command, add_predict_command, add_train_command, run_command, task_parser,
                      texts_or_stdin, train_options)


def main(argv=None):
    """Runs the command in `argv` (default sys.argv)."""
    args = parse_args(parser(), argv)
    from kbert.recipes import ner as recipe

    run_command(
        args, "ner", "BertTokenClassifier",
        train=lambda: recipe.train(args.data, args.init, args.out, **train_options(args)),
        evaluate=lambda: recipe.evaluate(args.model, args.data, out=args.out, batch_size=args.batch_size,
                                         verbose=0 if args.quiet else "auto"),
        predict=lambda: recipe.predict(args.model, texts_or_stdin(args.texts), batch_size=args.batch_size,
                                       dtype=args.dtype),
        describe=_describe)


def parser():
    """The argparse parser of this app."""
    parser, commands = task_parser(__doc__)
    add_train_command(commands, "CoNLL file (token TAG per line)", "sentences", learning_rate=5e-5)
    add_evaluate_command(commands, "entity P/R/F1 of a run folder on a CoNLL file", "CoNLL file")
    add_predict_command(commands, "entities of raw texts")
    return parser


def _describe(result):
    lines = [result["text"]]
    lines += [f"  {e['type']:5} {e['text']!r} [{e['start']}, {e['end']}) {e['score']:.3f}" for e in result["entities"]]
    return "\n".join(lines if result["entities"] else [*lines, "  (no entities)"])


if __name__ == "__main__":
    run(main)
