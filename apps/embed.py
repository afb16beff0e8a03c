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
by index, and its cosine similarity). --save writes the (sentences, 384) float32 embeddings,
L2-normalized, in input order, as a NumPy .npy file.
"""

import pathlib
import sys
import time

from app_cli import add_dtype_option, app_parser, emit, for_people, parse_args
from cli_errors import run
from task_cli import sequence_length, texts_or_stdin

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
    parser.add_argument("--max-length", type=sequence_length, default=256,
                        help="tokens per sentence, [CLS] and [SEP] included")
    add_dtype_option(parser)
    return parser


def read_sentences(args):
    """The sentences to embed: the arguments, --file, --examples, else the lines of stdin (blank ones skipped)."""
    if args.file:
        from kbert.data.text_file import read_text

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
    encoder = kbert.SentenceEncoder.from_preset("all_minilm_l6_v2", max_length=args.max_length)
    loaded = time.perf_counter()
    embeddings = encoder.encode(sentences, dtype=args.dtype)
    done = time.perf_counter()
    similarity = embeddings @ embeddings.T
    nearest = [max((j for j in range(len(sentences)) if j != i), key=lambda j: similarity[i, j], default=None)
               for i in range(len(sentences))]
    with for_people(args):
        print(f"all-MiniLM-L6-v2 on Keras {keras.version()} / {keras.config.backend()}: "
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
        print("\nCosine similarity of mean-pooled sentence embeddings:")
        print_table(sentences, similarity)
        for i, j in enumerate(nearest):
            print(f"nearest to [{i}]: [{j}] ({similarity[i, j]:.3f})")


if __name__ == "__main__":
    run(main)
