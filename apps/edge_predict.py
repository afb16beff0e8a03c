"""Predict from an exported .tflite file with the LiteRT interpreter only: no Keras, no TensorFlow.

    python apps/edge_predict.py exports/sst2_tflite/token_ids.tflite "a gripping film" "dull"
    python apps/edge_predict.py exports/sst2_tflite/text.tflite "a gripping film" --json
    python apps/edge_predict.py exports/nli_tflite/text.tflite "A man sleeps." --pair "Nobody sleeps."
    python apps/edge_predict.py exports/squad_tflite/token_ids.tflite --question "Who?" --context article.txt
    python apps/edge_predict.py exports/nli_tflite/token_ids.tflite --labels sports,politics "The striker scored."

Reads `export.json` and the tokenizer's files beside the model (written by apps/export.py). Prints the
results for people, or one JSON object a line with `--json`. This script is a thin front to the
`kbert_edge` and `kbert_core` packages (numpy and the standard library only): to run it on a device, copy this
file and the `kbert_core/` and `kbert_edge/` folders side by side, with the model folder (and apps/cli_errors.py and
apps/app_cli.py for one-line errors and hidden start-up lines; --verbose shows them). It needs numpy and
`ai-edge-litert` (`pip install ai-edge-litert`); without it, it falls back to
`tensorflow.lite`'s interpreter (and says so).

- `token_ids.tflite` (builtin ops only): text is tokenized by `kbert_core.WordPiece`, a
  pure-Python BERT tokenizer over `vocab.txt` that gives kbert's ids and offsets on ordinary
  text (ALBERT: `kbert_core.SentencePiece` over `spiece.model`; RoBERTa, whose export is this file
  alone: `kbert_core.ByteLevelBPE` over `vocab.json` and `merges.txt`). NER reads long texts through
  word-aligned windows and question answering through overlapping windows (`doc_stride`), picking the best
  span over all of them, as
  `text.tflite` does inside its graph: up to the export's `max_windows` windows per input
  (`--max-windows` to change it), `truncated` when an input needed more or a question was cut.
- `text.tflite` (raw strings in): also needs tensorflow-text's TFLite kernels. They are
  loaded from the installed `tensorflow-text` package's native library without importing
  TensorFlow's Python modules (the library links `libtensorflow_framework.so.2`, which the
  `tensorflow` wheel provides). Classifiers read one window per input (long texts are cut,
  `truncated`); NER and QA read up to the export's `max_windows` windows per input.

With `--labels`, an NLI classifier's token_ids.tflite answers which of the labels each text is, as Hugging Face's
zero-shot-classification pipeline (and `kbert.BertClassifier.zero_shot`) answers: each label a hypothesis about the
text (`--template`), the labels best first with their scores.
"""

import argparse
import json
import os
import pathlib
import sys

# In the repository kbert_core/ and kbert_edge/ lie beside apps/; on a device, beside this file (already on sys.path).
sys.path.append(str(pathlib.Path(__file__).resolve().parents[1]))
from kbert_edge import EdgeModel  # noqa: E402
from kbert_core.answers import NO_ANSWER_NOTE  # noqa: E402
from kbert_core.context import context_file  # noqa: E402
from kbert_core.start_up import start_up_lines_held  # noqa: E402
from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE  # noqa: E402


def format_result(result):
    """One result as text for people (NER: a second line with the entities).

    Example:
    >>> print(format_result({"text": "a gripping film", "label": "positive", "probability": 0.9312}))
    positive 0.931  a gripping film
    >>> print(format_result({"text": "the minister's match", "labels": ["sports", "politics"],
    ...                      "probabilities": {"sports": 0.91, "politics": 0.62, "arts": 0.03}}))
    sports 0.910, politics 0.620  the minister's match
    >>> print(format_result({"text": "", "label": None, "note": "empty text: nothing to classify"}))
    -   (empty text: nothing to classify)
    >>> print(format_result({"question": "Who?", "text": "", "found": False}))
    Who? -> no answer found
    >>> print(format_result({"question": "Who?", "text": "", "found": False, "no_answer": True, "probability": 0.8}))
    Who? -> no answer: the context does not answer it, says the model (probability 0.800)
    >>> print(format_result({"sequence": "Ann scored.", "labels": ["sports", "law"], "scores": [0.8, 0.2]}))
    sports 0.800, law 0.200  Ann scored.
    >>> print(format_result({"text": "Ann met Bob", "entities": [
    ...     {"type": "PER", "text": "Ann", "start": 0, "end": 3, "score": 0.9}], "truncated": False}))
    Ann met Bob
      PER 'Ann' (0-3, 0.900)
    """
    cut = " [truncated]" if result.get("truncated") else ""
    if "sequence" in result:  # zero-shot: the labels, best first
        return ", ".join(f"{label} {score:.3f}" for label, score in zip(result["labels"], result["scores"])) + (
            f"  {result['sequence']}")
    if "question" in result:
        if result.get("no_answer"):
            return f"{result['question']} -> {NO_ANSWER_NOTE} (probability {result['probability']:.3f}){cut}"
        if not result["found"]:
            return f"{result['question']} -> no answer found{cut}"
        return (f"{result['question']} -> {result['text']!r} (chars {result['start']}-{result['end']}, "
                f"probability {result['probability']:.3f}){cut}")
    if "label" in result and result["label"] is None:
        return f"-  {result['text']} ({result['note']})"
    if "label" in result:
        return f"{result['label']} {result['probability']:.3f}  {result['text']}{cut}"
    if "labels" in result:  # multi-label: the classes at or above the threshold
        chosen = ", ".join(f"{name} {result['probabilities'][name]:.3f}" for name in result["labels"])
        return f"{chosen or '(no class)'}  {result['text']}{cut}"
    if "score" in result:
        return f"{result['score']:.4f}  {result['text']}{cut}"
    if "embedding" in result:
        values = ", ".join(f"{v:.4f}" for v in result["embedding"][:4])
        return f"[{values}, ...] ({len(result['embedding'])} values)  {result['text']}{cut}"
    entities = "; ".join(f"{e['type']} {e['text']!r} ({e['start']}-{e['end']}, {e['score']:.3f})"
                         for e in result["entities"])
    return f"{result['text']}{cut}\n  {entities or 'no entities'}"


def stdin_lines():
    """The lines of stdin, as text; a line that is not UTF-8 exits naming it (stdin:LINE: ... byte and column).

    Example:
    >>> import io
    >>> sys.stdin = io.TextIOWrapper(io.BytesIO(b"a film\\nan \\xff film\\n"))
    >>> stdin_lines()
    Traceback (most recent call last):
    ...
    SystemExit: stdin:2: invalid UTF-8: byte 0xff at column 4
    >>> sys.stdin = sys.__stdin__
    """
    lines = []
    for number, line in enumerate(sys.stdin.buffer, start=1):
        try:
            lines.append(line.decode("utf-8").rstrip("\r\n"))
        except UnicodeDecodeError as error:
            sys.exit(f"stdin:{number}: invalid UTF-8: byte 0x{line[error.start]:02x} at column {error.start + 1}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="text.tflite or token_ids.tflite written by apps/export.py")
    parser.add_argument("texts", nargs="*", help="texts (default: one per line on stdin)")
    parser.add_argument("--pair", action="append", help="second text of a pair (repeat per text)")
    parser.add_argument("--question", action="append", help="QA: a question (repeatable)")
    parser.add_argument("--context", help="QA: a text file, or the text itself")
    parser.add_argument("--labels", help="zero-shot, an NLI classifier: the candidate labels, comma-separated")
    parser.add_argument("--template", default=HYPOTHESIS_TEMPLATE,
                        help="zero-shot: the hypothesis about each text, {} where a label goes")
    parser.add_argument("--multi-label", action="store_true",
                        help="zero-shot: score each label on its own, not one distribution over them")
    parser.add_argument("--max-windows", type=int, help="NER and QA on token_ids.tflite: most windows read per "
                        "input (default: the export's max_windows; longer inputs are flagged truncated)")
    parser.add_argument("--json", action="store_true", help="print JSON, one object a line, on stdout")
    parser.add_argument("--verbose", action="store_true",
                        help="show what LiteRT and TensorFlow's library print as they load (hidden by default)")
    args = parser.parse_intermixed_args(argv)  # texts may follow the options, as the examples above write them
    if args.verbose:
        os.environ["KBERT_VERBOSE"] = "1"
    with start_up_lines_held():
        model = EdgeModel(args.model, max_windows=args.max_windows)
    if model.model_kind == "question_answerer":
        if not args.question or args.context is None:
            sys.exit("A QA model takes --question and --context.")
        path = context_file(args.context)  # apps/qa.py's rule: a mistyped file name is not the context
        context = path.read_text("utf-8") if path is not None else args.context
        if not context.strip():
            sys.exit(f"--context {path}: the context file is empty.")
        results = [{"question": q, **model.answer_question(q, context)} for q in args.question]
    elif args.labels is not None:
        results = model.zero_shot(args.texts or stdin_lines(), args.labels, args.template, args.multi_label)
    else:
        texts = args.texts or stdin_lines()
        if args.pair is not None and len(args.pair) != len(texts):
            sys.exit(f"Got {len(texts)} texts but {len(args.pair)} --pair values.")
        results = model.predict(texts, args.pair)
    for result in results:
        print(json.dumps(result, ensure_ascii=False) if args.json else format_result(result))


if __name__ == "__main__":
    try:
        from cli_errors import run  # apps/cli_errors.py: one line per error; without it, Python's traceback
    except ImportError:
        main()
    else:
        run(main)
