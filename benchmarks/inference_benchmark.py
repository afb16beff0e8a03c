"""Inference on real text: kbert's BertSentenceEncoder and classifier beside sentence-transformers and
a Hugging Face pipeline, on every backend, in float32 and bfloat16.

Two jobs, every engine in a process of its own, one after another, on the same texts:
- encode: all STS-B train sentences (both columns) with all-MiniLM-L6-v2, batch 32, against
  sentence-transformers' `encode`;
- classify: SST-2 sentences through a classifier on all-MiniLM-L6-v2 (its head is freshly
  initialised and written once as a Hugging Face folder, so both sides hold the same weights),
  kbert's `BertClassifier.predict` against `pipeline("text-classification")`, batch 32.
Each engine makes two passes over the texts: the first includes tracing and compiling, the
second is the steady state. Prints texts/s, ratios, and how bfloat16 compares with float32
(minimum cosine of the embeddings; share of identical labels). For encode, also the share of
this CPU's fp32 GEMM peak each engine reaches, counting only the FLOPs of real tokens, and
the speed of the encoder's matmuls alone on the same batches (random weights, torch's GEMM
kernels): a ceiling no engine that runs them on those kernels can pass.

    python benchmarks/inference_benchmark.py                        # everything (~15 min here)
    python benchmarks/inference_benchmark.py --jobs encode --limit 3000 --backends torch
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
DTYPES = ("float32", "bfloat16")
DATA_DIR = os.environ.get("KBERT_DATA_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def read_column(path, columns, limit):
    with open(path, encoding="utf-8", newline="") as file:
        rows = list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [row[c] for c in columns for row in rows][:limit]


def texts_for(job, limit):
    if job == "encode":
        return read_column(os.path.join(DATA_DIR, "stsb", "train.tsv"), (0, 1), limit)
    return read_column(os.path.join(DATA_DIR, "sst2", "train.tsv"), (0,), limit)


def two_passes(run, texts):
    """Seconds of a first and a second pass of `run(texts)`, and the second pass's output."""
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        output = run(texts)
        seconds.append(time.perf_counter() - start)
    return seconds, output


def worker(engine, job, dtype, args):
    """Runs one engine in this process; writes its outputs to `args.out` and returns timings."""
    texts = texts_for(job, args.limit)
    if engine == "matmuls_only":
        seconds, output = matmuls_only(texts, args.batch_size, dtype), np.zeros((1, 1))
    elif engine == "sentence_transformers":
        from sentence_transformers import SentenceTransformer

        from kbert.paths import minilm_dir

        model = SentenceTransformer(str(minilm_dir()), device="cpu")
        seconds, output = two_passes(lambda t: model.encode(t, batch_size=args.batch_size), texts)
    elif engine == "hf_pipeline":
        from transformers import pipeline

        classify = pipeline("text-classification", model=args.classifier, device=-1, top_k=None)
        seconds, output = two_passes(lambda t: classify(t, batch_size=args.batch_size), texts)
        output = np.array([[s["score"] for s in sorted(row, key=lambda s: s["label"])] for row in output])
    elif job == "encode":
        from kbert import BertSentenceEncoder

        encoder = BertSentenceEncoder.from_preset("all_minilm_l6_v2")
        seconds, output = two_passes(lambda t: encoder.encode(t, batch_size=args.batch_size, dtype=dtype), texts)
    else:
        from kbert import BertClassifier

        model = BertClassifier.from_preset(args.classifier)
        seconds, output = two_passes(
            lambda t: model.predict(t, batch_size=args.batch_size, verbose=0, dtype=dtype), texts)
    np.save(args.out, np.asarray(output, "float32"))
    return {"texts": len(texts), "first_s": seconds[0], "second_s": seconds[1]}


def run_worker(engine, job, backend, dtype, args, folder):
    out = os.path.join(folder, f"{job}-{engine}-{backend}-{dtype}.npy")
    command = [sys.executable, __file__, "--worker", engine, "--jobs", job, "--dtype", dtype, "--out", out,
               "--batch-size", str(args.batch_size), "--classifier", args.classifier]
    if args.limit:
        command += ["--limit", str(args.limit)]
    env = {**os.environ, "KERAS_BACKEND": backend, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        print(f"  {engine} ({backend}, {dtype}) failed:\n{result.stderr[-2000:]}", file=sys.stderr)
        return None
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "outputs": np.load(out)}


def write_classifier(folder):
    """A 2-class BertClassifier on all-MiniLM-L6-v2 (seeded head), as a Hugging Face folder."""
    code = ("import keras, sys; keras.utils.set_random_seed(0); from kbert import BertClassifier; "
            "BertClassifier.from_preset('all_minilm_l6_v2', num_classes=2, label_names=['LABEL_0', 'LABEL_1'])"
            ".export_to_transformers(sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, folder], check=True, capture_output=True,
                   env={**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"})


def encode_gflop(texts, max_length=256):
    """GFLOP of encoding `texts` unpadded: each text's tokens (Hugging Face's tokenizer of the
    checkpoint, [CLS] and [SEP] included) through the encoder layers (`flops_per_sequence`)."""
    from backbone_benchmark import flops_per_sequence

    lengths = token_lengths(texts, max_length)
    return sum(flops_per_sequence(length) for length in lengths) / 1e9, float(np.mean(lengths))


def token_lengths(texts, max_length=256):
    """Each text's tokens under the checkpoint's Hugging Face tokenizer, [CLS] and [SEP] included."""
    from tokenizers import Tokenizer

    from kbert.paths import minilm_dir

    tokenizer = Tokenizer.from_file(os.path.join(minilm_dir(), "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]


def matmuls_only(texts, batch_size, dtype):
    """Seconds of a second pass of nothing but the encoder's matmuls (torch) over `texts` in
    length-sorted batches, each as long as its longest text: what any engine on torch's GEMM
    kernels spends at the least, before norms, softmax, GELU, embeddings and tokenizing."""
    import torch

    from backbone_benchmark import CONFIG

    h, i, heads = CONFIG["hidden_dim"], CONFIG["intermediate_dim"], CONFIG["num_heads"]
    dtype = getattr(torch, dtype)
    weights = [[torch.randn(*shape, dtype=dtype) / 20 for shape in ((h, 3 * h), (h, h), (h, i), (i, h))]
               for _ in range(CONFIG["num_layers"])]
    lengths = sorted(token_lengths(texts), reverse=True)
    shapes = [(len(chunk), chunk[0]) for chunk in (lengths[j:j + batch_size] for j in range(0, len(lengths), batch_size))]

    def one_pass():
        for rows, length in shapes:
            x = torch.randn(rows * length, h, dtype=dtype)
            for qkv, out, ffn_in, ffn_out in weights:
                q, k, v = (t.reshape(rows, length, heads, h // heads).transpose(1, 2) for t in (x @ qkv).split(h, -1))
                context = (q @ k.transpose(-1, -2)) @ v
                x = context.transpose(1, 2).reshape(rows * length, h) @ out
                x = (x @ ffn_in) @ ffn_out

    with torch.inference_mode():
        seconds, _ = two_passes(lambda texts: one_pass(), texts)
    return seconds


def gemm_peak(batch_size):
    """This CPU's fp32 GEMM GFLOP/s, measured by backbone_benchmark.py in a process of its own."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "backbone_benchmark.py")
    result = subprocess.run([sys.executable, script, "--worker", "gemm", "--batch-size", str(batch_size)],
                            capture_output=True, text=True, check=True, env={**os.environ, "KERAS_BACKEND": "torch"})
    return json.loads(result.stdout.strip().splitlines()[-1])[0]["gflop_per_s"]


def compare(job, reference, result):
    """How far `result`'s outputs are from `reference`'s (float32 kbert, or the other library)."""
    a, b = reference["outputs"], result["outputs"]
    if job == "encode":
        cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        return f"min cosine {cosine.min():.5f}"
    return f"labels identical {np.mean(a.argmax(-1) == b.argmax(-1)):.2%}, max |dp| {np.abs(a - b).max():.1e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="+", default=["encode", "classify"], choices=["encode", "classify"])
    parser.add_argument("--backends", nargs="+", default=list(KERAS_BACKENDS), choices=KERAS_BACKENDS)
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--limit", type=int, default=None, help="first texts only (default: all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--classifier", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        print(json.dumps(worker(args.worker, args.jobs[0], args.dtype, args)))
        return

    print(f"Inference on real text, batch {args.batch_size}, {os.cpu_count()} CPUs; texts/s of the first "
          "(with compiling) and second pass")
    failed = []
    with tempfile.TemporaryDirectory() as folder:
        args.classifier = os.path.join(folder, "classifier")
        if "classify" in args.jobs:
            write_classifier(args.classifier)
        for job in args.jobs:
            reference_engine = "sentence_transformers" if job == "encode" else "hf_pipeline"
            runs = [(reference_engine, "torch", "float32")]
            runs += [("kbert", backend, dtype) for backend in args.backends for dtype in args.dtypes]
            results = {}
            texts = None
            for engine, backend, dtype in runs:
                result = run_worker(engine, job, backend, dtype, args, folder)
                if result is None:
                    failed.append((job, engine, backend, dtype))
                    continue
                results[engine, backend, dtype] = result
                texts = result["texts"]
                print(f"  {job:8} {engine:22} {backend:10} {dtype:8} {texts / result['first_s']:7.1f} "
                      f"then {texts / result['second_s']:7.1f} texts/s", flush=True)
            reference = results.get(runs[0])
            print(f"\n{job}: {texts} texts, second pass, ratios:")
            if job == "encode" and texts:
                gflop, mean_length = encode_gflop(texts_for(job, args.limit))
                peak = gemm_peak(args.batch_size)
                print(f"  {mean_length:.1f} tokens per text, {gflop:.0f} GFLOP unpadded; fp32 GEMM peak {peak:.0f} "
                      f"GFLOP/s: {reference_engine} reaches "
                      f"{gflop / reference['second_s'] / peak:.0%} of it" if reference else "")
            if job == "encode" and reference:
                for dtype in args.dtypes:
                    bound = run_worker("matmuls_only", job, "torch", dtype, args, folder)
                    if bound:
                        print(f"  matmuls alone (torch), same batches, {dtype:8} {texts / bound['second_s']:7.1f} texts/s "
                              f"({reference['second_s'] / bound['second_s']:4.2f}x {reference_engine}): "
                              "the ceiling of any engine on torch's GEMM kernels")
            for (engine, backend, dtype), result in results.items():
                if engine != "kbert":
                    continue
                speed = texts / result["second_s"]
                line = f"  kbert {backend:10} {dtype:8} {speed:7.1f} texts/s"
                if job == "encode":
                    line += f" ({gflop / result['second_s'] / peak:4.0%} of the fp32 peak)"
                if reference:
                    line += f"   vs {reference_engine} {reference['texts'] / reference['second_s']:6.1f}: " \
                            f"{speed * reference['second_s'] / reference['texts']:4.2f}x ({compare(job, reference, result)})"
                fp32 = results.get(("kbert", backend, "float32"))
                if dtype != "float32" and fp32:
                    line += f"   vs own float32: {fp32['second_s'] / result['second_s']:4.2f}x ({compare(job, fp32, result)})"
                print(line)
            print()
    if failed:
        sys.exit(f"failed: {failed}")


if __name__ == "__main__":
    main()
