"""What `fit(class_weight="balanced")` buys on imbalanced data: all-MiniLM-L6-v2 fine-tuned on SST-2 sentences of
which a few are negative, without and with the weights (the same seed, data and steps), scored on a held-out split
in SST-2's own balance by scikit-learn: accuracy, each class's recall, balanced accuracy and macro F1.

    python benchmarks/class_weight_benchmark.py                        # 1,800 positive and 200 negative sentences
    python benchmarks/class_weight_benchmark.py --negatives 400 --epochs 2

The held-out split is --validation seeded sentences of ../shared/data/sst2/train.tsv (KBERT_DATA_DIR); the training
sentences are drawn, seeded, from the rest. Runs on $KERAS_BACKEND.
"""

import argparse
import json
import time

import numpy as np

from kbert.data.readers.sentence_tsv import read_sentence_tsv
from kbert.paths import data_dir

NAMES = ["negative", "positive"]


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="sentence<TAB>label TSV (default: DATA/sst2/train.tsv)")
    parser.add_argument("--init", default="all_minilm_l6_v2", help="what fine-tunes (default: %(default)s)")
    parser.add_argument("--positives", type=int, default=1800, help="positive training sentences (%(default)s)")
    parser.add_argument("--negatives", type=int, default=200, help="negative training sentences (%(default)s)")
    parser.add_argument("--validation", type=int, default=2000, help="held-out sentences (default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=3, help="(default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="(default: %(default)s)")
    parser.add_argument("--lr", type=float, default=5e-5, help="peak learning rate (default: %(default)s)")
    parser.add_argument("--max-length", type=int, default=64, help="tokens per sentence (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the split, the draw, the head, dropout (%(default)s)")
    return parser


def split(texts, labels, args):
    """(training texts, training labels, held-out texts, held-out labels), seeded."""
    order = np.random.default_rng(args.seed).permutation(len(texts))
    held_out, rest = order[:args.validation], order[args.validation:]
    chosen = np.concatenate([rest[labels[rest] == 1][:args.positives], rest[labels[rest] == 0][:args.negatives]])
    chosen = np.random.default_rng(args.seed + 1).permutation(chosen)
    return [texts[i] for i in chosen], labels[chosen], [texts[i] for i in held_out], labels[held_out]


def scores(gold, chosen):
    """scikit-learn's scores of the classes `chosen` against `gold`."""
    from sklearn import metrics

    recall = metrics.recall_score(gold, chosen, average=None, labels=[0, 1])
    return {"accuracy": metrics.accuracy_score(gold, chosen), "negative_recall": recall[0],
            "positive_recall": recall[1], "balanced_accuracy": metrics.balanced_accuracy_score(gold, chosen),
            "macro_f1": metrics.f1_score(gold, chosen, average="macro")}


def run(args, class_weight, train, held_out):
    import keras

    from kbert import BertClassifier

    keras.utils.set_random_seed(args.seed)
    model = BertClassifier.from_preset(args.init, num_classes=2, label_names=NAMES, sequence_length=args.max_length,
                                       compile=False)
    model.compile(learning_rate=args.lr)
    start = time.perf_counter()
    model.fit(*train, epochs=args.epochs, batch_size=args.batch_size, class_weight=class_weight, verbose=0)
    seconds = time.perf_counter() - start
    chosen = model.predict(held_out[0], batch_size=64, verbose=0).argmax(-1)
    return {**scores(held_out[1], chosen), "train_seconds": seconds}


def main(argv=None):
    import keras

    args = parser().parse_args(argv)
    examples = read_sentence_tsv(args.data or data_dir() / "sst2" / "train.tsv", label_names=NAMES)
    labels = np.asarray(examples.labels)  # class ids
    train_texts, train_labels, held_texts, held_labels = split(examples.texts, labels, args)
    print(f"{keras.backend.backend()}: {args.init} on {len(train_texts)} training sentences "
          f"({int((train_labels == 0).sum())} negative), {args.epochs} epoch(s); held out {len(held_texts)} "
          f"({(held_labels == 0).mean():.1%} negative)")
    results = {}
    for name, class_weight in (("unweighted", None), ("balanced", "balanced")):
        results[name] = run(args, class_weight, (train_texts, train_labels), (held_texts, held_labels))
        print(f"{name:>10}: " + ", ".join(f"{key} {value:.4f}" if key != "train_seconds" else f"{value:.0f} s"
                                          for key, value in results[name].items()), flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
