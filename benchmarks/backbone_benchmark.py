"""Backbone inference throughput: kbert on each backend beside keras-hub, Hugging Face and onnxruntime.

Every engine runs the all-MiniLM-L6-v2 configuration (6 layers, hidden 384, 12 heads) on
the same fp32 batch of random ids, each in a process of its own, one after another, so
the figures are side by side in one run. Keras models run through `predict_on_batch`
after `compile(jit_compile=...)`: XLA on TensorFlow, jax.jit on JAX, and on torch both
eager and torch.compile. Prints sequences/s (median of the timed batches), ratios, and the
fraction of this CPU's fp32 peak (the fastest of a few GEMMs of the model's FFN shape) reached.

    python benchmarks/backbone_benchmark.py                 # batch 32 x 128, all engines
    python benchmarks/backbone_benchmark.py --repeats 10 --engines kbert keras_hub
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
JIT_MODES = {"tensorflow": (False, True), "jax": (True,), "torch": (False, True)}
CONFIG = dict(vocabulary_size=30522, num_layers=6, num_heads=12, hidden_dim=384,
              intermediate_dim=1536, max_sequence_length=512)


def make_batch(batch_size, length, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, CONFIG["vocabulary_size"], (batch_size, length)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 101, 102
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": np.ones_like(token_ids)}


def time_calls(call, batch, warmup, repeats):
    start = time.perf_counter()
    call(batch)
    first = time.perf_counter() - start
    for _ in range(warmup - 1):
        call(batch)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call(batch)
        times.append(time.perf_counter() - start)
    return {"first_call_s": first, "seq_per_s": len(batch["token_ids"]) / statistics.median(times)}


def flops_per_sequence(length):
    """Multiply-adds x 2 of one sequence through the encoder layers: the QKV, output and two FFN
    projections (8h^2 + 4hi per token) and attention's scores and context (4 L h per token)."""
    h, i = CONFIG["hidden_dim"], CONFIG["intermediate_dim"]
    return CONFIG["num_layers"] * length * (8 * h * h + 4 * h * i + 4 * length * h)


def gemm_worker(args):
    """The fp32 peak this CPU reaches on the model's largest GEMM shape (tokens x hidden x intermediate)."""
    import torch

    tokens = args.batch_size * args.length
    a, b = torch.randn(tokens, CONFIG["hidden_dim"]), torch.randn(CONFIG["hidden_dim"], CONFIG["intermediate_dim"])
    for _ in range(5):
        torch.matmul(a, b)
    times = []
    for _ in range(4 * args.repeats):
        start = time.perf_counter()
        torch.matmul(a, b)
        times.append(time.perf_counter() - start)
    return [{"mode": "torch.matmul", "gflop_per_s": 2 * tokens * a.shape[1] * b.shape[1] / min(times) / 1e9}]


def keras_worker(engine, args):
    import keras

    if engine == "keras_hub":
        import keras_hub

        model = keras_hub.models.BertBackbone(**CONFIG, dropout=0.0)
    else:
        import kbert

        if engine == "kbert_explicit_attention":  # what the fused attention kernel buys
            kbert.MultiHeadSelfAttention._fused_attention = (
                lambda self, q, k, v, mask: self._explicit_attention(q, k, v, mask, training=False))
        model = kbert.BertBackbone.from_preset("all_minilm_l6_v2")
    batch = make_batch(args.batch_size, args.length)
    results = []
    for jit in JIT_MODES[keras.config.backend()]:
        model.compile(jit_compile=jit)
        results.append({"mode": "compiled" if jit else "eager/graph",
                        **time_calls(model.predict_on_batch, batch, args.warmup, args.repeats)})
    return results


def hf_worker(args):
    import torch
    from transformers import BertModel

    from kbert.paths import minilm_dir

    model = BertModel.from_pretrained(minilm_dir()).eval()
    batch = make_batch(args.batch_size, args.length)
    inputs = {"input_ids": torch.from_numpy(batch["token_ids"]).long(),
              "token_type_ids": torch.from_numpy(batch["segment_ids"]).long(),
              "attention_mask": torch.from_numpy(batch["padding_mask"]).long()}

    def call(_):
        with torch.no_grad():
            return model(**inputs).last_hidden_state

    return [{"mode": "eager", **time_calls(call, batch, args.warmup, args.repeats)}]


def onnxruntime_worker(args):
    import onnxruntime
    import torch
    from transformers import BertModel

    from kbert.paths import minilm_dir

    class LastHiddenState(torch.nn.Module):  # keyword call: the tracer mis-binds BertModel's positionals
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, token_type_ids, attention_mask):
            return self.bert(input_ids=input_ids, token_type_ids=token_type_ids,
                             attention_mask=attention_mask).last_hidden_state

    model = LastHiddenState(BertModel.from_pretrained(minilm_dir()).eval())
    batch = make_batch(args.batch_size, args.length)
    names = ("input_ids", "token_type_ids", "attention_mask")
    arrays = [batch["token_ids"], batch["segment_ids"], batch["padding_mask"]]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bert.onnx")
        torch.onnx.export(model, tuple(torch.from_numpy(a).long() for a in arrays), path,
                          input_names=list(names), output_names=["last_hidden_state"],
                          dynamic_axes={n: {0: "batch", 1: "length"} for n in names}, dynamo=False)
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {n: a.astype("int64") for n, a in zip(names, arrays)}
    return [{"mode": "CPU provider",
             **time_calls(lambda _: session.run(None, feed), batch, args.warmup, args.repeats)}]


def run_worker(engine, backend, args):
    command = [sys.executable, __file__, "--worker", engine, "--batch-size", str(args.batch_size),
               "--length", str(args.length), "--warmup", str(args.warmup), "--repeats", str(args.repeats)]
    env = {**os.environ, "KERAS_BACKEND": backend or "torch", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        print(f"  {engine} ({backend}) failed:\n{result.stderr[-2000:]}", file=sys.stderr)
        return []
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2, help="untimed batches (the first one includes compilation)")
    parser.add_argument("--repeats", type=int, default=5, help="timed batches; the median is reported")
    parser.add_argument("--engines", nargs="+",
                        default=["kbert", "kbert_explicit_attention", "keras_hub", "hf_torch", "onnxruntime"])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        workers = {"hf_torch": hf_worker, "onnxruntime": onnxruntime_worker, "gemm": gemm_worker}
        result = workers[args.worker](args) if args.worker in workers else keras_worker(args.worker, args)
        print(json.dumps(result))
        return

    print(f"BERT backbone inference, all-MiniLM-L6-v2 config, batch {args.batch_size} x {args.length} tokens, "
          f"fp32, {os.cpu_count()} CPUs; median of {args.repeats} batches")
    rows = []
    for engine in args.engines:
        backends = KERAS_BACKENDS if engine.startswith(("kbert", "keras_hub")) else (None,)
        for backend in backends:
            for result in run_worker(engine, backend, args):
                rows.append({"engine": engine, "backend": backend or "torch", **result})
                r = rows[-1]
                print(f"  {engine:26} {r['backend']:10} {r['mode']:12} {r['seq_per_s']:7.1f} seq/s"
                      f"   (first call {r['first_call_s']:.1f} s)", flush=True)

    def best(engine, backend=None):
        candidates = [r["seq_per_s"] for r in rows if r["engine"] == engine and backend in (None, r["backend"])]
        return max(candidates) if candidates else None

    gemm = run_worker("gemm", None, args)
    peak = gemm[0]["gflop_per_s"] if gemm else None
    flops = flops_per_sequence(args.length)
    print(f"\nfp32 GEMM peak ({args.batch_size * args.length} x {CONFIG['hidden_dim']} x "
          f"{CONFIG['intermediate_dim']}, torch.matmul): {peak:.0f} GFLOP/s; "
          f"{flops / 1e9:.2f} GFLOP per sequence" if peak else "\nGEMM peak not measured")
    print("\nBest mode per engine and backend, with ratios:")
    onnx = best("onnxruntime")
    for backend in KERAS_BACKENDS:
        mine, hub = best("kbert", backend), best("keras_hub", backend)
        if mine is None:
            continue
        line = f"  kbert {backend:10} {mine:7.1f} seq/s"
        if hub:
            line += f"   vs keras-hub {hub:6.1f}: {mine / hub:4.2f}x"
        if onnx:
            line += f"   vs onnxruntime {onnx:6.1f}: {mine / onnx:4.2f}x"
        if peak:
            line += f"   {mine * flops / 1e9:5.0f} GFLOP/s = {mine * flops / 1e9 / peak:.0%} of the GEMM peak"
        print(line)
    if best("hf_torch"):
        print(f"  Hugging Face torch eager {best('hf_torch'):7.1f} seq/s")


if __name__ == "__main__":
    main()
