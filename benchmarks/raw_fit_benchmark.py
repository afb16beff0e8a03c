"""`fit` on raw strings against `fit` on the same sentences tokenized beforehand, per backend.

A `BertClassifier` from --init fits one epoch of --sentences SST-2 sentences (or the shipped
sample, repeated, when the data folder is missing) three ways, alternating in one process:
- raw: `model.fit(texts, labels)`: the task API tokenizes (inside the timed call) and serves
  shuffled batches of similar length, each padded to its longest row;
- batches: the same batches built from token ids tokenized before the timed call
  (`PaddedBatches(..., group_by_length=True).for_fit()`): raw / batches is what tokenizing
  inside `fit` costs;
- arrays: `model.fit(token_ids, labels)` on arrays padded to the longest sentence, as a plain
  Keras user would (Keras shuffles): raw / arrays is what the length grouping buys.
Each backend runs in its own process. A warm-up epoch of each way comes first (compiling,
tracing); then --rounds timed epochs of each, each a `fit` call of one epoch, under a
learning-rate schedule of fixed length. Prints the median seconds per epoch and the
ratios (below 1: the raw path is faster).

    python benchmarks/raw_fit_benchmark.py --backends tensorflow jax torch --sentences 2000
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--init", default="all_minilm_l6_v2", help="preset or folder (BertBackbone.from_preset)")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2, help="timed epochs of each way")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def sentences(count):
    from kbert.data import read_sentence_tsv
    from kbert.paths import data_dir, samples_dir

    path = data_dir() / "sst2" / "train.tsv"
    examples = read_sentence_tsv(path if path.is_file() else samples_dir() / "sentiment_sample.tsv", 1,
                                 label_names=("negative", "positive"))
    texts, labels = list(examples.texts), examples.labels.tolist()
    repeat = -(-count // len(texts))
    return (texts * repeat)[:count], (labels * repeat)[:count]


def worker(args):
    import keras
    import numpy as np

    from kbert import BertClassifier
    from kbert.data.batches.padded import PaddedBatches
    from kbert.optimizers import bert_adamw

    keras.utils.set_random_seed(0)
    texts, labels = sentences(args.sentences)
    model = BertClassifier.from_preset(args.init, num_classes=2, sequence_length=args.max_length)
    # A schedule of fixed length: the default one is laid again over each fit call, which
    # traces the train step again (TensorFlow, JAX) and would time compiling, not the data path.
    model.compile(optimizer=bert_adamw(3e-5, total_steps=3 * (args.rounds + 1) * -(-args.sentences // args.batch_size)))
    tokens = model.preprocessor.tokenizer(texts, max_length=args.max_length, padding="longest")

    batches = PaddedBatches(tokens, np.array(labels, "int32"), batch_size=args.batch_size, shuffle=True,
                            group_by_length=True).for_fit()
    ways = {"raw": lambda: model.fit(texts, labels, batch_size=args.batch_size, verbose=0),
            "batches": lambda: model.fit(batches, verbose=0),
            "arrays": lambda: model.fit(tokens, labels, batch_size=args.batch_size, verbose=0)}
    times = {way: [] for way in ways}
    for index in range(args.rounds + 1):  # round 0 warms up
        for way, fit in ways.items():
            start = time.perf_counter()
            fit()
            if index:
                times[way].append(time.perf_counter() - start)
    print(json.dumps({"backend": keras.config.backend(), "width": int(tokens["token_ids"].shape[1]),
                      **{way: statistics.median(values) for way, values in times.items()}}))


def main():
    args = parse_args()
    if args.worker:
        return worker(args)
    print(f"{args.sentences} sentences, batch {args.batch_size}, max_length {args.max_length}, "
          f"init {args.init}; median of {args.rounds} epochs after a warm-up epoch of each way")
    print(f"{'backend':12}{'raw s/epoch':>13}{'batches':>10}{'arrays':>10}{'raw/batches':>13}{'raw/arrays':>12}")
    for backend in args.backends:
        command = [sys.executable, __file__, "--worker", *sys.argv[1:]]
        result = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend},
                                capture_output=True, text=True)
        if result.returncode:
            sys.exit(f"{backend} failed:\n{result.stderr[-3000:]}")
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        raw, batches, arrays = figures["raw"], figures["batches"], figures["arrays"]
        print(f"{backend:12}{raw:13.2f}{batches:10.2f}{arrays:10.2f}{raw / batches:13.3f}{raw / arrays:12.3f}")


if __name__ == "__main__":
    main()
