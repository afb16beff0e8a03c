"""Labels of a fine-tuned classifier in float32 and bfloat16 on its app's held-out sentences.

Reads a run folder of `apps/sentiment.py` or `apps/nli.py`, rebuilds the run's validation
split from its metrics.json (the --valid file, or the same seeded share of --data), predicts
it with `predict(dtype="float32")` and `predict(dtype="bfloat16")`, and prints both
accuracies, how many labels differ, the largest probability change and both speeds.

    KERAS_BACKEND=torch python benchmarks/bfloat16_labels.py saved_models/sst2
"""

import argparse
import json
import pathlib
import re
import time

import numpy as np


def held_out(run):
    """The run's validation examples, as `apps/<task>.py train` split them."""
    from kbert.data.sentence_tsv import read_sentence_tsv
    from kbert.recipes import NLI, SENTIMENT

    metrics = json.loads((pathlib.Path(run) / "metrics.json").read_text())
    task = {t.name: t for t in (SENTIMENT, NLI)}.get(metrics["task"])
    if task is None:
        raise SystemExit(f"{run}: a {metrics['task']!r} run; this compares class labels of sentiment or nli runs.")
    read = dict(num_texts=task.num_texts, label_names=metrics["label_names"])
    share = re.fullmatch(r"(\d+)% of data \(seed (\d+)\)", metrics["valid"])
    if share is None:
        return read_sentence_tsv(metrics["valid"], **read)
    _, valid = read_sentence_tsv(metrics["data"], **read).split(int(share[1]) / 100, int(share[2]))
    return valid


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run folder of apps/sentiment.py or apps/nli.py")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    from kbert.saving import load_run

    model = load_run(args.run)[0]
    examples = held_out(args.run)
    inputs = examples.texts if examples.pairs is None else (examples.texts, examples.pairs)
    outputs, seconds = {}, {}
    for dtype in ("float32", "bfloat16") * 2:  # the second round is timed after the first compiled
        start = time.perf_counter()
        outputs[dtype] = model.predict(inputs, batch_size=args.batch_size, verbose=0, dtype=dtype)
        seconds[dtype] = time.perf_counter() - start
    labels = np.asarray(examples.labels)
    full, half = (outputs[d].argmax(-1) for d in ("float32", "bfloat16"))
    print(f"{len(labels)} held-out examples: accuracy float32 {np.mean(full == labels):.4f}, "
          f"bfloat16 {np.mean(half == labels):.4f}; {int(np.sum(full != half))} labels differ "
          f"({np.mean(full == half):.2%} identical); largest probability change "
          f"{np.abs(outputs['float32'] - outputs['bfloat16']).max():.3f}; "
          f"{len(labels) / seconds['float32']:.0f} vs {len(labels) / seconds['bfloat16']:.0f} examples/s")


if __name__ == "__main__":
    main()
