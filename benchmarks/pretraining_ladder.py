"""Does a pretrained backbone beat random init? SST-2 fine-tuning from each, several sizes and seeds.

A rung of issue 26's budget ladder: the backbone of an `apps/pretrain.py` run and the same
configuration and vocabulary at random init (the run's `--steps 0` twin) are each fine-tuned
with `apps/sentiment.py train` on the first N sentences of SST-2's train.tsv (the app's seeded
subset) and validated on the same 6,735 held-out sentences, for every N and seed; then both
backbones' frozen features go through `tools/backbone_probe.py` (a linear probe). Each
fine-tuning run writes its folder under --out and is skipped when its metrics.json is there,
so an interrupted ladder resumes where it stopped, and the random-init runs serve every rung.

    python benchmarks/pretraining_ladder.py saved_models/imdb_mini_mlm saved_models/imdb_mini_random
    python benchmarks/pretraining_ladder.py A B --limits 1000 --seeds 0 --epochs 6 4   # one size, one seed

Prints one line per run and a table: accuracy from each backbone, the difference, the mean.
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys

from kbert.paths import data_dir
from kbert.saving import read_json

ROOT = pathlib.Path(__file__).resolve().parent.parent


def fine_tune(init, limit, seed, epochs, args):
    """The best validation accuracy of one `apps/sentiment.py train` run (read back if it exists)."""
    # Named by the backbone's pretraining steps: a run extended to the next rung fine-tunes anew,
    # the random-init twin (0 steps) once for all rungs.
    pretrained = read_json(pathlib.Path(init) / "metrics.json").get("steps", 0)
    out = pathlib.Path(args.out) / f"{pathlib.Path(init).name}_step{pretrained}_{limit}_seed{seed}"
    metrics = out / "metrics.json"
    if not metrics.is_file():
        command = [sys.executable, str(ROOT / "apps" / "sentiment.py"), "train", "--data", args.data,
                   "--init", init, "--out", str(out), "--limit", str(limit), "--validation-limit",
                   str(args.validation_limit), "--epochs", str(epochs), "--batch-size", "32", "--patience", "3",
                   "--lr", str(args.lr), "--seed", str(seed)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return read_json(metrics)["validation"]["accuracy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pretrained", help="an apps/pretrain.py run folder")
    parser.add_argument("random", help="the same config and vocabulary at random init (apps/pretrain.py --steps 0)")
    parser.add_argument("--data", default=str(data_dir() / "sst2" / "train.tsv"), help="SST-2's train.tsv")
    parser.add_argument("--limits", type=int, nargs="+", default=[1000, 4000], help="training sentences")
    parser.add_argument("--epochs", type=int, nargs="+", default=[6, 3], help="epochs for each of --limits")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--validation-limit", type=int, default=6735)
    parser.add_argument("--out", default="saved_models/ladder", help="parent folder of the fine-tuning runs")
    parser.add_argument("--no-probe", action="store_true", help="skip the linear probe of frozen features")
    args = parser.parse_args()
    if len(args.epochs) != len(args.limits):
        parser.error(f"--epochs gives {len(args.epochs)} values for {len(args.limits)} --limits")
    if not os.path.isfile(args.data):
        sys.exit(f"SST-2 not found at {args.data}: set KBERT_DATA_DIR or --data")
    rows = []
    for limit, epochs in zip(args.limits, args.epochs):
        for seed in args.seeds:
            pretrained, random = (fine_tune(init, limit, seed, epochs, args) for init in (args.pretrained, args.random))
            rows.append((limit, seed, pretrained, random))
            print(f"{limit} sentences, seed {seed}: pretrained {pretrained:.2%}, random init {random:.2%}", flush=True)
    print(f"\nSST-2, {args.validation_limit} held-out sentences, lr {args.lr}: {args.pretrained} vs {args.random}")
    print(f"{'sentences':>9} {'seed':>5} {'pretrained':>11} {'random':>8} {'difference':>11}")
    for limit in args.limits:
        chosen = [row for row in rows if row[0] == limit]
        for _, seed, pretrained, random in chosen:
            print(f"{limit:>9} {seed:>5} {pretrained:>11.2%} {random:>8.2%} {pretrained - random:>+11.2%}")
        means = [statistics.mean(row[i] for row in chosen) for i in (2, 3)]
        print(f"{limit:>9} {'mean':>5} {means[0]:>11.2%} {means[1]:>8.2%} {means[0] - means[1]:>+11.2%}")
    if not args.no_probe:
        subprocess.run([sys.executable, str(ROOT / "tools" / "backbone_probe.py"), args.pretrained, args.random,
                        "--data", args.data], check=True)


if __name__ == "__main__":
    main()
