"""Times torch's matmuls before and after kbert's pretraining tf.data pipeline runs.

`apps/pretrain.py` on torch stepped at about twice the time `train_on_batch` takes in a
process without that pipeline. This reproduces the cause found so far: once the pipeline
has produced a batch, torch's matmuls of bert_mini's shape stay slower for the rest of
the process, even after the pipeline is exhausted. The cause behind it is not known; the
app now runs the pipeline in a child process (`kbert.data.batches.child_process`), where it
cannot slow the training process.

    KERAS_BACKEND=torch python tools/bf16_after_pipeline.py saved_models/gutenberg_mini_random
"""

import argparse
import time

import torch

from kbert.data.pretraining.dataset import pretraining_dataset
from kbert.data.pretraining.instances import run_corpus
from kbert.text import BertTokenizer


def matmul_seconds(dtype, repeats=200):
    """Seconds for `repeats` products of bert_mini's feed-forward shape (4,096 x 256 x 1,024)."""
    x, w = torch.randn(4096, 256, dtype=dtype), torch.randn(256, 1024, dtype=dtype)
    for _ in range(3):
        x @ w
    start = time.perf_counter()
    for _ in range(repeats):
        x @ w
    return time.perf_counter() - start


def report(when):
    print(f"{when:<38} bfloat16 {matmul_seconds(torch.bfloat16):.3f} s   float32 {matmul_seconds(torch.float32):.3f} s",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="an apps/pretrain.py run folder (vocab.txt, settings.json)")
    args = parser.parse_args()
    report("before the pipeline")
    paths, holdout = run_corpus(args.run)
    data = pretraining_dataset(paths, BertTokenizer.from_hf(args.run), batch_size=64, holdout=holdout,
                               max_seq_length=64, objective="mlm", repeat=False, seed=0)
    batches = data.as_numpy_iterator()
    next(batches)
    report("after its first batch")
    remaining = sum(1 for _ in batches)
    report(f"after all of it ({remaining + 1} batches)")


if __name__ == "__main__":
    main()
