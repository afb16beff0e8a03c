"""Fill in masked words with a masked language model, as Hugging Face's fill-mask pipeline does, on any Keras backend.

    python apps/fill_mask.py --model bert-base-uncased/ "Paris is the [MASK] of France."
    python apps/fill_mask.py --model roberta-base/ "The <mask> sat on the mat." --top-k 3 --json
    python apps/fill_mask.py --model bert-base-uncased/ --targets cat dog < texts.txt   # one text a line

--model is a model with a masked-LM head: a Hugging Face folder of BertForMaskedLM or BertForPreTraining (or a
family's ForMaskedLM: RoBERTa, ALBERT, ELECTRA's generator, DistilBERT), or a .keras file of a kbert.BertPretrainer.
A text writes the model's mask token ([MASK]; RoBERTa's <mask>) where a token is to be guessed, once or more;
without texts as arguments it reads one text a line from stdin. For people it prints each mask's candidates, best
first, with their probabilities and the text each makes; with --json one object a text: {"text", "masks"}, a list
per mask of {"score", "token" (its id), "token_str", "sequence"}, the fields of Hugging Face's pipeline.
"""

from app_cli import app_parser, emit, for_people, parse_args
from cli_errors import run
from task_cli import positive_int, texts_or_stdin


def parser():
    parser = app_parser(__doc__)
    parser.add_argument("texts", nargs="*", help="texts with the mask token (default: lines of stdin)")
    parser.add_argument("--model", required=True, help="Hugging Face masked-LM folder or a BertPretrainer .keras file")
    parser.add_argument("--top-k", type=positive_int, default=5, help="candidates per mask")
    parser.add_argument("--targets", nargs="+", help="score only these tokens (a word outside the vocabulary: its "
                                                     "first token, with a warning)")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="texts per model call")
    return parser


def load_masked_lm(given):
    """The `kbert.BertPretrainer` of `given`; a ValueError where it holds no trained masked-LM head (a base model, a
    task of another kind, a preset's random weights)."""
    import kbert
    from kbert.tasks.load_task import load_trained_head

    return load_trained_head(kbert.BertPretrainer, given, "masked-LM head", "a Hugging Face BertForMaskedLM or "
                             "BertForPreTraining folder (or a family's ForMaskedLM), or a .keras file of a "
                             "kbert.BertPretrainer")


def describe(result):
    """A text's answer for people: the text, then each mask's candidates.

    Example:
    >>> print(describe({"text": "a [MASK] film", "masks": [[
    ...     {"score": 0.61, "token": 2204, "token_str": "good", "sequence": "a good film"}]]}))
    a [MASK] film
      0.610  good      a good film
    """
    lines = [result["text"]]
    for number, candidates in enumerate(result["masks"], start=1):
        if len(result["masks"]) > 1:
            lines.append(f"  mask {number}:")
        lines += [f"  {c['score']:.3f}  {c['token_str']:<8}  {c['sequence']}" for c in candidates]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(parser(), argv)
    from kbert.tasks.fill_mask import mask_answers

    texts = texts_or_stdin(args.texts)
    with for_people(args):
        answers = mask_answers(load_masked_lm(args.model), texts, args.top_k, args.targets, args.batch_size)
    emit(args, answers, describe)


if __name__ == "__main__":
    run(main)
