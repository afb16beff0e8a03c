"""Sentence similarity with the real all-MiniLM-L6-v2 checkpoint, on any Keras backend.

    python apps/embed.py --examples                   # six example sentences
    python apps/embed.py "A cat sits." "A dog runs."  # your own
    python apps/embed.py --file sentences.txt         # one sentence per line
    cat sentences.txt | python apps/embed.py --save vectors.npy --json
    KERAS_BACKEND=jax python apps/embed.py --examples # same numbers on JAX (or torch)

Without sentences, --file or --examples, it reads one sentence a line from stdin (from a
terminal, where nothing is piped in, it takes the examples). For people it
prints the cosine similarity table and each sentence's nearest neighbour; with --json, one
object a sentence: {"text", "embedding", "nearest", "similarity"} (the nearest other sentence,
by index, and its cosine similarity). --save writes the (sentences, dim) float32 embeddings,
L2-normalized, in input order, as a NumPy .npy file. --model embeds with a model trained by `train` instead.

Training sentence embeddings (a bi-encoder, `kbert.BertSentenceEncoder`; see `python apps/embed.py train -h`):

    python apps/embed.py train --data ../shared/data/stsb/train.tsv --out saved_models/stsb_embed
    python apps/embed.py train --objective ranking --data ../shared/data/snli/train.tsv \
        --valid ../shared/data/stsb/train.tsv --init bert_mini --out saved_models/snli_embed
    python apps/embed.py evaluate --model saved_models/stsb_embed --data sts_dev.tsv
    python apps/embed.py --model saved_models/stsb_embed "A cat sits." "A cat is sitting."
"""

import argparse
import pathlib
import sys
import time

from app_cli import add_dtype_option, app_parser, emit, for_people, parse_args
from cli_errors import run
from task_cli import (add_evaluate_command, add_layout_options, add_train_command, layout, run_command, sequence_length,
                      task_parser, texts_or_stdin, train_options)

TRAINING_COMMANDS = ("train", "evaluate")

EXAMPLES = [
    "A man is playing a guitar.",
    "Someone is strumming a musical instrument.",
    "The stock market fell sharply on Monday.",
    "Shares tumbled at the start of the week.",
    "A child is riding a bicycle in the park.",
    "The recipe calls for two cups of flour.",
]


def parser():
    """The argparse parser of this app."""
    parser = app_parser(__doc__)
    parser.add_argument("sentences", nargs="*", help="texts to embed (default: one a line on stdin)")
    parser.add_argument("--file", help="a UTF-8 text file, one sentence per line (blank lines skipped)")
    parser.add_argument("--examples", action="store_true", help="embed six example sentences")
    parser.add_argument("--save", help="write the embeddings to this .npy file")
    parser.add_argument("--model", help="a run folder written by `apps/embed.py train` (default: all-MiniLM-L6-v2)")
    parser.add_argument("--max-length", type=sequence_length,
                        help="tokens per sentence, [CLS] and [SEP] included (default: the model's own: the length "
                             "a run trained with, 256 for all-MiniLM-L6-v2)")
    add_dtype_option(parser)
    return parser


def training_parser():
    """The argparse parser of `train` and `evaluate`."""
    parser, commands = task_parser(__doc__)
    train = add_train_command(commands, "TSV of pairs (cosine: sentence1<TAB>sentence2<TAB>score; ranking: "
                              "sentence1<TAB>sentence2[<TAB>label]), header row; or a table with named columns",
                              unit="pairs", epochs=1, learning_rate=2e-5)
    train.add_argument("--objective", choices=("cosine", "ranking"), default="cosine",
                       help="cosine: scored pairs, cosine similarity toward the score; ranking: (anchor, positive) "
                            "pairs, each anchor's positive above the batch's other positives (needs --valid)")
    train.add_argument("--score-range", type=_score_range, default=(0.0, 5.0),
                       help="LOW,HIGH: the scores of the scored files (STS-B's 0,5), mapped to [0, 1]")
    train.add_argument("--positive-label", default="entailment",
                       help="ranking: the label of the rows that are pairs (a file of two columns: every row)")
    train.add_argument("--pooling", choices=("mean", "cls", "max"),
                       help="how tokens become one vector (default: the --init's own, as a sentence-transformers "
                            "folder says; else mean)")
    train.set_defaults(batch_size=16)
    add_layout_options(train, ("text", "pair", "label"))
    evaluate = add_evaluate_command(commands, "Spearman and Pearson correlations of cosine similarity with gold "
                                    "scores", "TSV of scored pairs (sentence1<TAB>sentence2<TAB>score), or a table "
                                    "with named columns")
    add_layout_options(evaluate, ("text", "pair", "label"))
    return parser


def train_or_evaluate(argv):
    """Runs `train` or `evaluate` (`kbert.recipes.embedding`)."""
    args = parse_args(training_parser(), argv)
    from kbert.recipes import embedding

    run_command(
        args, "embedding", "BertSentenceEncoder",
        train=lambda: embedding.train(args.data, args.init, args.out, objective=args.objective,
                                      score_range=args.score_range, positive_label=args.positive_label,
                                      pooling=args.pooling, layout=layout(args), **train_options(args)),
        evaluate=lambda: embedding.evaluate(args.model, args.data, out=args.out, batch_size=args.batch_size,
                                            layout=layout(args)),
        predict=None, describe=None)


def _score_range(text):
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        low = high = None
    if low is None or not low < high:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH with LOW < HIGH (e.g. 0,5), got {text!r}")
    return low, high


def read_sentences(args):
    """The sentences to embed: the arguments, --file, --examples, else the lines of stdin (blank ones skipped)."""
    if args.file:
        from kbert.data.readers.text_file import read_text

        return [line.strip() for line in read_text(args.file).split("\n") if line.strip()]
    if args.examples or (not args.sentences and sys.stdin.isatty()):
        return EXAMPLES
    sentences = [text for text in texts_or_stdin(args.sentences) if text.strip()]
    if not sentences:
        sys.exit("Nothing to embed: give sentences as arguments or lines on stdin.")
    return sentences


def print_table(sentences, similarity):
    width = 44
    labels = [f"[{i}] " + (s if len(s) <= width else s[: width - 1] + "…") for i, s in enumerate(sentences)]
    print(f"{'':{width + 4}}" + "".join(f"{f'[{j}]':>7}" for j in range(len(sentences))))
    for label, row in zip(labels, similarity):
        print(f"{label:{width + 4}}" + "".join(f"{v:7.3f}" for v in row))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in TRAINING_COMMANDS:
        return train_or_evaluate(argv)
    args = parse_args(parser(), argv)
    if sum(map(bool, (args.sentences, args.file, args.examples))) > 1:
        sys.exit("Give sentences, --file or --examples: one of them.")
    if args.save:
        from kbert.saving import check_writable

        check_writable(args.save, "--save")
    sentences = read_sentences(args)
    if len(sentences) < 2 and not (args.save or args.json):
        sys.exit("Give at least two sentences to compare (or --save / --json for their embeddings).")
    import keras
    import numpy as np

    import kbert
    from kbert.saving import atomic_file

    start = time.perf_counter()
    if args.model:
        from kbert.saving import load_run
        from run_checks import check_run_task

        check_run_task(args.model, "embedding", "BertSentenceEncoder")
        model, name = load_run(args.model), args.model
    else:
        model, name = kbert.BertSentenceEncoder.from_preset("all_minilm_l6_v2"), "all-MiniLM-L6-v2"
    if args.max_length:
        model.preprocessor.sequence_length = min(args.max_length, model.backbone.max_sequence_length)
    loaded = time.perf_counter()
    embeddings = model.encode(sentences, normalize_embeddings=True, dtype=args.dtype)
    done = time.perf_counter()
    similarity = embeddings @ embeddings.T
    nearest = [max((j for j in range(len(sentences)) if j != i), key=lambda j: similarity[i, j], default=None)
               for i in range(len(sentences))]
    with for_people(args):
        print(f"{name} on Keras {keras.version()} / {keras.config.backend()}: "
              f"loaded in {loaded - start:.1f} s, encoded {len(sentences)} sentences in {done - loaded:.2f} s")
        if args.save:
            path = pathlib.Path(args.save)
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_file(path) as partial, open(partial, "wb") as file:  # np.save on a path adds .npy
                np.save(file, np.asarray(embeddings, dtype=np.float32))
            print(f"Wrote {path}: {embeddings.shape[0]} x {embeddings.shape[1]} float32")
    if args.json:
        emit(args, [{"text": text, "embedding": [round(float(v), 7) for v in embedding], "nearest": j,
                     "similarity": None if j is None else round(float(similarity[i, j]), 6)}
                    for i, (text, embedding, j) in enumerate(zip(sentences, embeddings, nearest))])
        return
    if len(sentences) > 1:
        print("\nCosine similarity of the sentence embeddings:")
        print_table(sentences, similarity)
        for i, j in enumerate(nearest):
            print(f"nearest to [{i}]: [{j}] ({similarity[i, j]:.3f})")


if __name__ == "__main__":
    run(main)
