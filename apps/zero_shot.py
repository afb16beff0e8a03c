"""Zero-shot classification with an NLI classifier, as Hugging Face's zero-shot-classification pipeline does, on any
Keras backend: which of labels it was never trained on each text is.

    python apps/zero_shot.py --model saved_models/snli --labels sports,politics,cooking "The striker scored twice."
    python apps/zero_shot.py --model saved_models/snli --labels negative,positive --template "This review is {}." \\
        < reviews.txt   # one text a line
    python apps/zero_shot.py --model nli-checkpoint/ --labels urgent,phone,tablet --multi-label --json "..."

--model is a classifier trained on NLI, with a class named "entailment": a run folder of apps/nli.py, a .keras file
of a kbert.BertClassifier, or a Hugging Face folder of an NLI ForSequenceClassification model. Each label becomes a
hypothesis about each text (--template, "This example is {}."), and the model reads every (text, hypothesis) pair:
the labels' entailment logits make one distribution over the labels, or, with --multi-label, each label its own
probability (entailment against contradiction). For people it prints each text and its labels, best first, with
their scores; with --json one object a text: {"sequence", "labels", "scores"}, the fields of Hugging Face's pipeline.
"""

from app_cli import app_parser, emit, for_people, parse_args
from cli_errors import run
from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE
from task_cli import positive_int, texts_or_stdin


def parser():
    parser = app_parser(__doc__)
    parser.add_argument("texts", nargs="*", help="texts to classify (default: lines of stdin)")
    parser.add_argument("--model", required=True,
                        help="an NLI classifier: apps/nli.py's run folder, a .keras file or a Hugging Face folder")
    parser.add_argument("--labels", required=True, help="the candidate labels, comma-separated")
    parser.add_argument("--template", default=HYPOTHESIS_TEMPLATE,
                        help="the hypothesis about each text, {} where a label goes")
    parser.add_argument("--multi-label", action="store_true",
                        help="score each label on its own (any number may hold), not one distribution over them")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="(text, label) pairs per model call")
    return parser


def load_classifier(given):
    """The `kbert.BertClassifier` of `given`; a ValueError where it holds none (a base model, another task, a
    preset's random weights)."""
    import kbert
    from kbert.tasks.load_task import load_trained_head

    return load_trained_head(kbert.BertClassifier, given, "trained classifier", "a run folder of apps/nli.py, a "
                             ".keras file of a kbert.BertClassifier or a Hugging Face folder of an NLI "
                             "ForSequenceClassification model")


def describe(result):
    """A text's answer for people: the text, then its labels, best first.

    Example:
    >>> print(describe({"sequence": "The striker scored.", "labels": ["sports", "cooking"], "scores": [0.91, 0.09]}))
    The striker scored.
      0.910  sports
      0.090  cooking
    """
    return "\n".join([result["sequence"], *(f"  {score:.3f}  {label}"
                                            for label, score in zip(result["labels"], result["scores"]))])


def main(argv=None):
    args = parse_args(parser(), argv)
    texts = texts_or_stdin(args.texts)
    with for_people(args):
        answers = load_classifier(args.model).zero_shot(texts, args.labels, args.template, args.multi_label,
                                                        args.batch_size)
    emit(args, answers, describe)


if __name__ == "__main__":
    run(main)
