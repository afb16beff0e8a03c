"""Sentence similarity with the real all-MiniLM-L6-v2 checkpoint, on any Keras backend.

    python apps/embed.py                              # the embedded example sentences
    python apps/embed.py "A cat sits." "A dog runs."  # your own
    python apps/embed.py --file sentences.txt         # one sentence per line
    KERAS_BACKEND=jax python apps/embed.py            # same numbers on JAX (or torch)
"""

import argparse
import sys
import time

import keras

import kbert
from kbert.data.text_file import read_text

from cli_errors import add_debug_option, run
from task_cli import sequence_length

EXAMPLES = [
    "A man is playing a guitar.",
    "Someone is strumming a musical instrument.",
    "The stock market fell sharply on Monday.",
    "Shares tumbled at the start of the week.",
    "A child is riding a bicycle in the park.",
    "The recipe calls for two cups of flour.",
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sentences", nargs="*", help="texts to compare (default: six embedded examples)")
    parser.add_argument("--file", help="a UTF-8 text file, one sentence per line (blank lines skipped)")
    parser.add_argument("--max-length", type=sequence_length, default=256,
                        help="tokens per sentence, [CLS] and [SEP] included")
    add_debug_option(parser)
    return parser.parse_args(argv)


def read_sentences(args):
    if args.file:
        return [line.strip() for line in read_text(args.file).split("\n") if line.strip()]
    return args.sentences or EXAMPLES


def print_table(sentences, similarity):
    width = 44
    labels = [f"[{i}] " + (s if len(s) <= width else s[: width - 1] + "…") for i, s in enumerate(sentences)]
    print(f"{'':{width + 4}}" + "".join(f"{f'[{j}]':>7}" for j in range(len(sentences))))
    for label, row in zip(labels, similarity):
        print(f"{label:{width + 4}}" + "".join(f"{v:7.3f}" for v in row))


def main(argv=None):
    args = parse_args(argv)
    sentences = read_sentences(args)
    if len(sentences) < 2:
        sys.exit("Give at least two sentences to compare.")
    start = time.perf_counter()
    encoder = kbert.SentenceEncoder.from_preset("all_minilm_l6_v2", max_length=args.max_length)
    loaded = time.perf_counter()
    embeddings = encoder.encode(sentences)
    done = time.perf_counter()
    similarity = embeddings @ embeddings.T
    print(f"all-MiniLM-L6-v2 on Keras {keras.version()} / {keras.config.backend()}: "
          f"loaded in {loaded - start:.1f} s, encoded {len(sentences)} sentences in {done - loaded:.2f} s\n")
    print("Cosine similarity of mean-pooled sentence embeddings:")
    print_table(sentences, similarity)
    for i in range(len(sentences)):
        j = max((j for j in range(len(sentences)) if j != i), key=lambda j: similarity[i, j])
        print(f"nearest to [{i}]: [{j}] ({similarity[i, j]:.3f})")


if __name__ == "__main__":
    run(main)
