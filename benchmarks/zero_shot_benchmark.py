"""What `BertClassifier.zero_shot` gives on real data: an NLI model (apps/nli.py's run folder) asked whether SST-2
sentences and IMDB reviews are "positive" or "negative", labels it was never trained on, under a few hypothesis
templates; beside it, transformers' zero-shot-classification pipeline on the same model (exported with
`export_to_transformers`, run by hf_zero_shot.py in a torch process of its own) on the same texts: its accuracy,
how often its top label is kbert's, and both throughputs in (text, label) pairs a second.

    python apps/nli.py train --data ../shared/data/snli/train.tsv --valid ../shared/data/snli/dev.tsv \\
        --epochs 3 --batch-size 32 --lr 5e-5 --mixed-precision --out saved_models/snli
    python benchmarks/zero_shot_benchmark.py --model saved_models/snli

The texts are --sentences seeded SST-2 sentences (../shared/data/sst2/train.tsv, KBERT_DATA_DIR) and --reviews
seeded IMDB reviews (imdb/train.tsv), read up to the classifier's sequence length. Runs on $KERAS_BACKEND, float32,
batches of --batch-size pairs on both sides.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

from kbert.data.readers.sentence_tsv import read_sentence_tsv
from kbert.paths import data_dir

LABELS = ["negative", "positive"]
TEMPLATES = ["This example is {}.", "This review is {}.", "The sentiment of this review is {}."]
HERE = pathlib.Path(__file__).resolve().parent


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="an NLI run folder (apps/nli.py train --out)")
    parser.add_argument("--sentences", type=int, default=2000, help="SST-2 sentences (default: %(default)s)")
    parser.add_argument("--reviews", type=int, default=500, help="IMDB reviews (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="pairs per model call (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the draw of the texts (default: %(default)s)")
    return parser


def sample(path, count, seed):
    """`count` seeded (text, class id) rows of a text<TAB>label file with 0/1 labels."""
    examples = read_sentence_tsv(path, label_names=LABELS)
    order = np.random.default_rng(seed).permutation(len(examples.texts))[:count]
    return [examples.texts[i] for i in order], np.asarray(examples.labels)[order]


def main(argv=None):
    import keras

    from kbert.saving import load_run

    args = parser().parse_args(argv)
    data = {"SST-2 sentences": sample(data_dir() / "sst2" / "train.tsv", args.sentences, args.seed),
            "IMDB reviews": sample(data_dir() / "imdb" / "train.tsv", args.reviews, args.seed)}
    model = load_run(args.model)
    jobs, rows = [], []
    for name, (texts, gold) in data.items():
        for template in TEMPLATES:
            start = time.perf_counter()
            answers = model.zero_shot(texts, LABELS, template, batch_size=args.batch_size)
            seconds = time.perf_counter() - start
            top = [answer["labels"][0] for answer in answers]
            rows.append({"data": name, "texts": len(texts), "template": template, "top": top,
                         "accuracy": float(np.mean([LABELS[g] == t for g, t in zip(gold, top)])),
                         "majority": float(max(np.mean(gold), 1 - np.mean(gold))),
                         "pairs_per_second": len(texts) * len(LABELS) / seconds})
            jobs.append({"texts": texts, "candidate_labels": LABELS, "hypothesis_template": template})
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        model.export_to_transformers(folder / "model")
        (folder / "jobs.json").write_text(json.dumps(jobs))
        subprocess.run([sys.executable, str(HERE / "hf_zero_shot.py"), str(folder / "model"), str(folder / "jobs.json"),
                        str(folder / "out.json"), "--batch-size", str(args.batch_size)], check=True)
        references = json.loads((folder / "out.json").read_text())
    print(f"| texts | template | kbert accuracy | Hugging Face accuracy | same top label | kbert pairs/s | "
          f"Hugging Face pairs/s | majority class |\n|---|---|---|---|---|---|---|---|")
    for row, reference in zip(rows, references):
        gold = data[row["data"]][1]
        row["hf_accuracy"] = float(np.mean([LABELS[g] == t for g, t in zip(gold, reference["top"])]))
        row["same_top"] = float(np.mean([a == b for a, b in zip(row.pop("top"), reference["top"])]))
        row["hf_pairs_per_second"] = len(gold) * len(LABELS) / reference["seconds"]
        print(f"| {row['data']} ({row['texts']}) | \"{row['template']}\" | {100 * row['accuracy']:.1f}% | "
              f"{100 * row['hf_accuracy']:.1f}% | {100 * row['same_top']:.2f}% | {row['pairs_per_second']:.0f} | "
              f"{row['hf_pairs_per_second']:.0f} | {100 * row['majority']:.1f}% |")
    print(json.dumps({"backend": keras.config.backend(), "model": args.model, "rows": rows}))


if __name__ == "__main__":
    main()
