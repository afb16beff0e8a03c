"""Prints kbert's largest differences from Hugging Face on the real all-MiniLM-L6-v2 checkpoint.

Takes the first N sentences of STS-B train (from $KBERT_DATA_DIR, else a few embedded
ones), computes `transformers`' BertModel and sentence-transformers' outputs in one
process, then kbert's on each Keras backend in processes of their own, and prints the
max |difference| over real (non-padding) positions and the lowest embedding cosine.

    python tools/parity_report.py            # 64 single sentences + 64 pairs
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

TOOLS = pathlib.Path(__file__).resolve().parent
FALLBACK = [["A man is playing a guitar.", "Someone is strumming an instrument."],
            ["The cat sat on the mat, purring loudly all afternoon.", "Ok."]]
INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")


def read_pairs(count):
    from kbert.paths import data_dir

    path = data_dir() / "stsb" / "train.tsv"
    if not path.is_file():
        print(f"({path} not found: using {len(FALLBACK)} embedded pairs)")
        return FALLBACK
    lines = path.read_text(encoding="utf-8").splitlines()[1 : count + 1]
    return [line.split("\t")[:2] for line in lines]


def kbert_worker(reference_file, out_file):
    import keras

    from kbert import BertBackbone, mean_pool

    reference = np.load(reference_file)
    backbone = BertBackbone.from_preset("all_minilm_l6_v2")
    out = backbone({k: reference[k] for k in INPUT_KEYS})
    result = {k: keras.ops.convert_to_numpy(v) for k, v in out.items()}
    result["sentence_embedding"] = keras.ops.convert_to_numpy(
        mean_pool(out["sequence_output"], reference["padding_mask"]))
    np.savez(out_file, **result)


def run(*args, backend="torch"):
    env = {**os.environ, "KERAS_BACKEND": backend, "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, *map(str, args)], env=env, check=True, capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=64, help="STS-B rows to use")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return kbert_worker(*args.worker)

    from kbert.paths import minilm_dir

    pairs = read_pairs(args.count)
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        for kind, examples in (("single sentences", [p[0] for p in pairs]), ("sentence pairs", pairs)):
            (folder / "examples.json").write_text(json.dumps(examples))
            run(TOOLS / "hf_reference.py", minilm_dir(), folder / "examples.json", folder / "ref.npz")
            reference = np.load(folder / "ref.npz")
            mask = reference["padding_mask"].astype(bool)
            print(f"{len(examples)} {kind}, padded to {mask.shape[1]} tokens "
                  f"({100 * (1 - mask.mean()):.0f}% padding):")
            for backend in ("tensorflow", "jax", "torch"):
                run(__file__, "--worker", folder / "ref.npz", folder / "kbert.npz", backend=backend)
                out = np.load(folder / "kbert.npz")
                sequence = np.abs(out["sequence_output"] - reference["sequence_output"])[mask].max()
                pooled = np.abs(out["pooled_output"] - reference["pooled_output"]).max()
                line = f"  {backend:10}  sequence_output {sequence:.2e}  pooled_output {pooled:.2e}"
                if "sentence_embedding" in reference:
                    cosine = np.sum(out["sentence_embedding"] * reference["sentence_embedding"], -1).min()
                    line += f"  min cosine vs sentence-transformers {cosine:.7f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
