"""Labels of a fine-tuned classifier in float32 and bfloat16 on its app's held-out sentences.

Reads a run folder of `apps/sentiment.py` or `apps/nli.py`, rebuilds the run's validation
split from its metrics.json (the --valid file, or the same seeded share of --data), predicts
it with `predict(dtype="float32")` and `predict(dtype="bfloat16")`, and prints both
accuracies, how many labels differ, the largest probability change and both speeds.

With --hf-reference, the same classifier is also written as a Hugging Face folder
(`kbert.convert.save_hf`) and, in a process of its own (torch after TensorFlow in one process
can crash), `transformers`' AutoModelForSequenceClassification and its tokenizer predict the
same sentences in float32, cast to bfloat16 (`model.to(torch.bfloat16)`) and under
`torch.autocast("cpu", torch.bfloat16)`: an independent bfloat16 engine on the same weights,
to tell label changes of bfloat16 itself from those of kbert's way of computing in it.

    KERAS_BACKEND=torch python benchmarks/bfloat16_labels.py saved_models/sst2
    KERAS_BACKEND=torch python benchmarks/bfloat16_labels.py saved_models/sst2 --hf-reference
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def held_out(run):
    """The run's validation examples, as `apps/<task>.py train` split them."""
    from kbert.data.readers.sentence_tsv import read_sentence_tsv
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


ENGINES = {"bfloat16": "bfloat16 (model.to)", "autocast": "autocast bfloat16"}  # Hugging Face's, by hf.npz key


def hf_worker(folder, batch_size):
    """Hugging Face's probabilities on the sentences of `folder`/inputs.json, written to `folder`/hf.npz."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    inputs = json.loads((pathlib.Path(folder) / "inputs.json").read_text("utf-8"))
    texts, pairs = inputs["texts"], inputs["pairs"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()

    def probabilities(autocast):
        outputs = []
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start:start + batch_size], pairs and pairs[start:start + batch_size],
                              padding=True, truncation=True, max_length=inputs["max_length"], return_tensors="pt")
            with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
                outputs.append(torch.softmax(model(**batch).logits.float(), -1).numpy())
        return np.concatenate(outputs)

    results = {"float32": probabilities(False), "autocast": probabilities(True)}
    model.to(torch.bfloat16)
    results["bfloat16"] = probabilities(False)
    np.savez(pathlib.Path(folder) / "hf.npz", **results)


def hf_reference(model, inputs, batch_size):
    """`transformers`' probabilities on `inputs` with `model`'s weights: {"float32", "bfloat16", "autocast"}."""
    texts, pairs = inputs if isinstance(inputs, tuple) else (inputs, None)
    with tempfile.TemporaryDirectory() as folder:
        model.export_to_transformers(folder)  # kbert.convert.save_hf
        inputs = {"texts": list(texts), "pairs": pairs and list(pairs),
                  "max_length": model.preprocessor.sequence_length}
        (pathlib.Path(folder) / "inputs.json").write_text(json.dumps(inputs), "utf-8")
        command = [sys.executable, __file__, "--hf-worker", folder, "--batch-size", str(batch_size)]
        result = subprocess.run(command, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True)
        if result.returncode:
            raise SystemExit(f"The Hugging Face reference failed:\n{result.stderr[-3000:]}")
        with np.load(pathlib.Path(folder) / "hf.npz") as outputs:
            return dict(outputs)


def compare(kbert, hf, labels):
    """Prints how kbert's and Hugging Face's labels agree in float32 and which bfloat16 changes."""
    full = kbert["float32"].argmax(-1)
    print(f"kbert float32 vs Hugging Face float32: {np.mean(full == hf['float32'].argmax(-1)):.2%} of labels "
          f"identical, largest probability difference {np.abs(kbert['float32'] - hf['float32']).max():.2e}")
    changed = {}
    for name, probabilities in (("kbert", kbert), ("Hugging Face", hf)):
        top = np.sort(probabilities["float32"], -1)
        margin = (top[:, -1] - top[:, -2]) / 2  # |p - 0.5| for two classes
        for dtype in [d for d in ("bfloat16", "autocast") if d in probabilities]:
            engine = f"{name} {'bfloat16' if name == 'kbert' else ENGINES[dtype]}"
            changed[engine] = np.flatnonzero(probabilities[dtype].argmax(-1) != probabilities["float32"].argmax(-1))
            flipped = margin[changed[engine]]
            accuracy = {d: np.mean(probabilities[d].argmax(-1) == labels) for d in ("float32", dtype)}
            print(f"{engine}: {len(changed[engine])} labels changed; accuracy {accuracy[dtype]:.4f} "
                  f"(float32 {accuracy['float32']:.4f}); largest float32 margin "
                  f"among them {flipped.max() if len(flipped) else float('nan'):.4f}, median "
                  f"{np.median(flipped) if len(flipped) else float('nan'):.4f}")
    ours = set(changed["kbert bfloat16"])
    for engine in (f"Hugging Face {e}" for e in ENGINES.values()):
        print(f"changed both by kbert bfloat16 and {engine}: {len(ours & set(changed[engine]))} sentences")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", nargs="?", help="a run folder of apps/sentiment.py or apps/nli.py")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hf-reference", action="store_true",
                        help="also predict with transformers on the same weights (float32, bfloat16, autocast)")
    parser.add_argument("--hf-worker", help=argparse.SUPPRESS)  # a folder: this process is the reference
    args = parser.parse_args()
    if args.hf_worker:
        return hf_worker(args.hf_worker, args.batch_size)
    if args.run is None:
        parser.error("the run folder is required")

    from kbert.saving import load_run

    model = load_run(args.run)
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
    if args.hf_reference:
        compare(outputs, hf_reference(model, inputs, args.batch_size), labels)


if __name__ == "__main__":
    main()
