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

A table (Hugging Face's conll2003 saved as JSON Lines or Parquet) holds a sentence a row: its
tokens and ner_tags lists; --tag-names names the tag ids (a Parquet file written by `datasets`
names them itself):

    python apps/ner.py train --data conll2003-train.jsonl --out saved_models/conll \\
        --tag-names O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC,B-MISC,I-MISC
"""

from app_cli import parse_args
from cli_errors import run
from task_cli import (add_class_weight_option, add_evaluate_command, add_layout_options, add_predict_command,
                      add_train_command, layout, run_command, task_parser, texts_or_stdin, train_options)


def main(argv=None):
    """Runs the command in `argv` (default sys.argv)."""
    args = parse_args(parser(), argv)
    from kbert.recipes import ner as recipe

    run_command(
        args, "ner", "BertTokenClassifier",
        train=lambda: recipe.train(args.data, args.init, args.out, layout=layout(args), **train_options(args)),
        evaluate=lambda: recipe.evaluate(args.model, args.data, out=args.out, batch_size=args.batch_size,
                                         layout=layout(args), verbose=0 if args.quiet else "auto"),
        predict=lambda: recipe.predict(args.model, texts_or_stdin(args.texts), batch_size=args.batch_size,
                                       dtype=args.dtype),
        describe=_describe)


def parser():
    """The argparse parser of this app."""
    parser, commands = task_parser(__doc__)
    formats = ("conll", "csv", "tsv", "jsonl", "json", "parquet")
    data = ("CoNLL file (token TAG per line), or JSON Lines, JSON, Parquet or CSV with a sentence a row "
            "(conll2003's tokens and ner_tags)")
    train = add_train_command(commands, data, "sentences", learning_rate=5e-5)
    add_layout_options(train, ("tokens", "tags"), formats, class_names="tag-names")
    add_class_weight_option(train, "word", "tag", "B-PER=2,O=0.5")
    evaluate = add_evaluate_command(commands, "entity P/R/F1 of a run folder on a tagged file", data)
    add_layout_options(evaluate, ("tokens", "tags"), formats, class_names="tag-names")
    add_predict_command(commands, "entities of raw texts")
    return parser


def _describe(result):
    lines = [result["text"]]
    lines += [f"  {e['type']:5} {e['text']!r} [{e['start']}, {e['end']}) {e['score']:.3f}" for e in result["entities"]]
    return "\n".join(lines if result["entities"] else [*lines, "  (no entities)"])


if __name__ == "__main__":
    run(main)
