"""BERT fine-tuning and inference where BERT is trained (a GPU), or the same framework overhead on a CPU (--proxy).

Every engine builds a BERT classifier (a two-class head on the pooled output, random weights) in a process of its
own and times, on one batch of random ids: a fine-tuning step (AdamW, BERT's recipe) and `predict`.

- kbert_torch: `BertClassifier.fit` under KERAS_BACKEND=torch (the backbone's plain-torch pass,
  `kbert.backend_speedups.torch_backbone`); kbert_torch_compiled: the same compiled with `jit_compile=True` (that
  pass under `torch.compile`); kbert_torch_graph: with that speed-up alone off (Keras's graph); kbert_jax: under JAX
  (XLA). keras_hub_torch / keras_hub_jax: keras-hub's `BertBackbone` with the same head (dropout and a dense layer
  on the pooled output) as a functional model: its `BertTextClassifier` feeds `fit` through tf.data.
- hf_eager: Hugging Face `BertForSequenceClassification` (SDPA attention) in a plain torch loop; hf_compiled: the
  same model under `torch.compile`.

Default shape: BERT-base (12 layers, width 768), batch 32 x 128 for a step, 256 x 128 for inference, mixed bfloat16
(autocast for Hugging Face) on a GPU. --proxy: BERT-base's depth at width 64 (4 heads, 256 intermediate), batch 4 x 16,
float32, one CPU thread: compute is negligible and a step's time is the framework's overhead per op and per layer,
as on a GPU at 32 x 128. Prints per engine the median step, steps/s, the first step (compilation), inference
sequences/s and peak memory (GPU, or the process's resident memory on a CPU), then ratios to hf_eager.

Two figures each for training and inference: "step" times one step alone (kbert: between Keras's
`on_train_batch_begin` and `on_train_batch_end`; inference: `predict_on_batch` on a batch in memory); "whole fit"
is the wall time of one `fit` call over --steps steps divided by them, and "whole predict" that of one `predict`
call over --inference-repeats batches, what a user's epoch costs (Keras's epoch iterator, each batch from numpy to
the framework, callbacks, results back to numpy). Hugging Face's whole fit and predict are the same loops over the
same numpy batches, each made a torch tensor in the loop.

    python benchmarks/gpu_benchmark.py                                     # on a GPU machine
    python benchmarks/gpu_benchmark.py --proxy --engines kbert_torch kbert_torch_graph hf_eager
    python benchmarks/gpu_benchmark.py --engines hf_eager kbert_torch --profile  # where steps and predict spend time
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ENGINES = ("kbert_torch", "kbert_torch_compiled", "kbert_torch_graph", "kbert_jax", "keras_hub_torch", "keras_hub_jax",
           "hf_eager", "hf_compiled")
BERT_BASE = dict(num_layers=12, hidden_dim=768, num_heads=12, intermediate_dim=3072)
PROXY = dict(num_layers=12, hidden_dim=64, num_heads=4, intermediate_dim=256)
VOCABULARY = 30522


def shape(args):
    """(model config, step batch, step length, inference batch, precision) of the run."""
    if args.proxy:
        return PROXY, 4, 16, 64, "float32"
    return BERT_BASE, 32, 128, 256, args.precision


def random_batch(batch, length, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, VOCABULARY, (batch, length)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 101, 102
    return token_ids, rng.integers(0, 2, batch).astype("int32")


def peak_memory_mb(engine):
    """The engine's peak GPU memory in use (torch's or JAX's allocator), or the process's resident memory on a CPU."""
    if engine.endswith("jax"):
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            return stats["peak_bytes_in_use"] / 2**20
    else:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_keras(args, engine):
    """Step times and inference seconds of kbert's or keras-hub's classifier through `fit` and `predict`."""
    import keras

    config, batch, length, inference_batch, precision = shape(args)
    keras.config.set_dtype_policy("mixed_bfloat16" if precision == "bfloat16" else "float32")
    if engine.startswith("kbert"):
        from kbert import BertBackbone, BertClassifier

        model = BertClassifier(BertBackbone(vocabulary_size=VOCABULARY, **config), 2)
    else:
        import keras_hub

        backbone = keras_hub.models.BertBackbone(vocabulary_size=VOCABULARY, max_sequence_length=512, **config)
        pooled = keras.layers.Dropout(0.1)(backbone.output["pooled_output"])
        model = keras.Model(backbone.input, keras.layers.Dense(2)(pooled))
    from kbert.optimizers import bert_adamw

    total = args.warmup + args.steps
    model.compile(optimizer=bert_adamw(3e-5, total), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=None, **({"jit_compile": True} if engine == "kbert_torch_compiled" else {}))
    token_ids, labels = random_batch(batch, length)
    inputs = {"token_ids": np.tile(token_ids, (total, 1)), "segment_ids": np.zeros((total * batch, length), "int32"),
              "padding_mask": np.ones((total * batch, length), "int32")}
    times = []
    whole = {}

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, step, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, step, logs=None):
            float(logs["loss"])  # the step has finished (asynchronous dispatch)
            times.append(time.perf_counter() - self.start)

    model.fit(inputs, np.tile(labels, total), batch_size=batch, epochs=1, shuffle=False, verbose=0, callbacks=[Timer()])
    timed = {key: value[:args.steps * batch] for key, value in inputs.items()}
    start = time.perf_counter()  # a second fit, compiled by the first: the whole call, as a user's epoch
    model.fit(timed, np.tile(labels, args.steps), batch_size=batch, epochs=1, shuffle=False, verbose=0)
    whole["fit_step_s"] = (time.perf_counter() - start) / args.steps
    ids, _ = random_batch(inference_batch, length, seed=1)
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    model.predict_on_batch(x)  # compiles
    start = time.perf_counter()
    for _ in range(args.inference_repeats):
        np.asarray(keras.ops.convert_to_numpy(model.predict_on_batch(x)))
    inference_seconds = (time.perf_counter() - start) / args.inference_repeats
    many = {key: np.tile(value, (args.inference_repeats, 1)) for key, value in x.items()}
    model.predict(x, batch_size=inference_batch, verbose=0)
    start = time.perf_counter()
    model.predict(many, batch_size=inference_batch, verbose=0)
    whole["predict_sequences_per_s"] = inference_batch * args.inference_repeats / (time.perf_counter() - start)
    if args.profile:
        step_inputs = {key: value[:batch] for key, value in inputs.items()}
        profile_steps("training step",
                      lambda: float(model.train_on_batch(step_inputs, labels, return_dict=True)["loss"]))
        profile_steps("predict", lambda: np.asarray(keras.ops.convert_to_numpy(model.predict_on_batch(x))))
    return times, inference_seconds, inference_batch, whole


def profile_steps(what, step, steps=5):
    """Prints where `step` (a torch training step, or a predict call) spends its time (torch.profiler, after 2
    untimed calls): CPU and GPU milliseconds and kernel launches a call, and the ops with the most CPU time of their
    own, to stderr."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as profiler:
        for _ in range(steps):
            step()
    events = profiler.key_averages()
    launches = sum(event.count for event in events if event.key in ("cudaLaunchKernel", "cuLaunchKernelEx"))
    cpu = sum(event.self_cpu_time_total for event in events) / steps / 1000
    gpu = sum(getattr(event, "self_device_time_total", 0) for event in events) / steps / 1000
    print(f"profile ({what}): {cpu:.1f} ms CPU, {gpu:.1f} ms GPU, {launches / steps:.0f} kernel launches a call",
          file=sys.stderr)
    print(events.table(sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=50), file=sys.stderr)


def run_hf(args, engine):
    """Step times and inference seconds of Hugging Face's classifier in a plain torch loop (eager or compiled)."""
    import torch
    import transformers
    from hf_recipe import HfTrainer

    config, batch, length, inference_batch, precision = shape(args)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(vocab_size=VOCABULARY, num_hidden_layers=config["num_layers"],
                                        hidden_size=config["hidden_dim"], num_attention_heads=config["num_heads"],
                                        intermediate_size=config["intermediate_dim"], num_labels=2,
                                        attn_implementation="sdpa")
    model = transformers.BertForSequenceClassification(hf_config).to(device)
    model.train()
    total = args.warmup + args.steps
    trainer = HfTrainer(model, 3e-5, total, compute_dtype=precision)
    if engine == "hf_compiled":
        trainer.model = torch.compile(model)
    token_ids, labels = random_batch(batch, length)
    inputs = {"input_ids": torch.tensor(token_ids, dtype=torch.long, device=device),
              "token_type_ids": torch.zeros(token_ids.shape, dtype=torch.long, device=device),
              "attention_mask": torch.ones(token_ids.shape, dtype=torch.long, device=device),
              "labels": torch.tensor(labels, dtype=torch.long, device=device)}
    times = []
    for _ in range(total):
        start = time.perf_counter()
        trainer.step(**inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    arrays = {"input_ids": np.tile(token_ids, (args.steps, 1)), "token_type_ids": np.zeros((args.steps * batch, length),
              "int32"), "attention_mask": np.ones((args.steps * batch, length), "int32"),
              "labels": np.tile(labels, args.steps)}
    start = time.perf_counter()  # the whole loop, each batch from numpy, as `fit` takes it
    for step in range(args.steps):
        trainer.step(**{key: torch.as_tensor(value[step * batch:(step + 1) * batch], device=device).long()
                        for key, value in arrays.items()})
    whole = {"fit_step_s": (time.perf_counter() - start) / args.steps}
    model.eval()
    ids, _ = random_batch(inference_batch, length, seed=1)
    x = {"input_ids": torch.tensor(ids, dtype=torch.long, device=device),
         "attention_mask": torch.ones(ids.shape, dtype=torch.long, device=device)}
    runner = trainer.model
    with torch.inference_mode(), torch.autocast(device, torch.bfloat16, enabled=precision == "bfloat16"):
        runner(**x)
        start = time.perf_counter()
        for _ in range(args.inference_repeats):
            runner(**x).logits.float().cpu()
        inference_seconds = (time.perf_counter() - start) / args.inference_repeats
        many = np.tile(ids, (args.inference_repeats, 1))
        start = time.perf_counter()  # as `predict`: batches from numpy, the logits back as one numpy array
        np.concatenate([runner(**{key: torch.as_tensor(value, device=device).long() for key, value in (
            ("input_ids", many[i:i + inference_batch]), ("attention_mask", np.ones_like(many[i:i + inference_batch])))
        }).logits.float().cpu().numpy() for i in range(0, len(many), inference_batch)])
        whole["predict_sequences_per_s"] = len(many) / (time.perf_counter() - start)
        if args.profile:
            profile_steps("predict", lambda: runner(**x).logits.float().cpu())
    if args.profile:
        model.train()
        profile_steps("training step", lambda: trainer.step(**inputs))
    return times, inference_seconds, inference_batch, whole


def worker(args):
    if args.proxy:
        import torch

        torch.set_num_threads(1)
    run = run_hf if args.worker.startswith("hf") else run_keras
    times, inference_seconds, inference_batch, whole = run(args, args.worker)
    timed = times[args.warmup:]
    print(json.dumps({"engine": args.worker, "first_step_s": times[0], "median_step_s": statistics.median(timed),
                      "sequences_per_s": inference_batch / inference_seconds, **whole,
                      "peak_memory_mb": peak_memory_mb(args.worker)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES, metavar="ENGINE",
                        help=f"any of {', '.join(ENGINES)} (default: all)")
    parser.add_argument("--proxy", action="store_true",
                        help="BERT-base's depth at width 64, batch 4 x 16, float32, one thread: the overhead a GPU "
                             "sees, on a CPU")
    parser.add_argument("--precision", choices=("bfloat16", "float32"), default="bfloat16",
                        help="without --proxy: mixed bfloat16 (autocast for Hugging Face) or float32")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (compilation)")
    parser.add_argument("--inference-repeats", type=int, default=10, help="timed predict calls")
    parser.add_argument("--profile", action="store_true",
                        help="the torch engines (kbert's and Hugging Face's): also print torch.profiler's view of "
                             "a few training steps and predict calls")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    config, batch, length, inference_batch, precision = shape(args)
    print(f"{'proxy: ' if args.proxy else ''}{config['num_layers']} layers, width {config['hidden_dim']}, step "
          f"{batch} x {length}, inference {inference_batch} x {length}, {precision}; {args.warmup} warmup + "
          f"{args.steps} timed steps; {os.cpu_count()} CPU cores", flush=True)
    results = []
    for engine in args.engines:
        env = {**os.environ, "KERAS_BACKEND": "jax" if engine.endswith("jax") else "torch"}
        if engine == "kbert_torch_graph":
            env["KBERT_SPEEDUPS"] = "-torch_backbone"  # every speed-up but that one
        command = [sys.executable, __file__, "--worker", engine, *(["--proxy"] if args.proxy else []),
                   f"--precision={args.precision}", f"--steps={args.steps}", f"--warmup={args.warmup}",
                   f"--inference-repeats={args.inference_repeats}",
                   *(["--profile"] if args.profile and engine.startswith(("kbert_torch", "hf")) else [])]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            print(f"{engine}: failed\n{done.stderr[-2000:]}", flush=True)
            continue
        if args.profile and "profile (" in done.stderr:
            print(done.stderr[done.stderr.index("profile ("):], flush=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{engine:18} step {r['median_step_s'] * 1000:8.1f} ms ({1 / r['median_step_s']:6.2f} steps/s), "
              f"whole fit {r['fit_step_s'] * 1000:8.1f} ms a step, first {r['first_step_s']:6.1f} s, inference step "
              f"{r['sequences_per_s']:9.0f} seq/s, whole predict {r['predict_sequences_per_s']:9.0f} seq/s, peak "
              f"{r['peak_memory_mb']:7.0f} MB", flush=True)
    reference = next((r for r in results if r["engine"] == "hf_eager"), None)
    if reference:
        print("\nvs hf_eager (its time / the engine's): step, whole fit, inference step, whole predict, peak memory")
        for r in results:
            print(f"{r['engine']:18} step {reference['median_step_s'] / r['median_step_s']:5.2f}x  "
                  f"whole fit {reference['fit_step_s'] / r['fit_step_s']:5.2f}x  "
                  f"inference step {r['sequences_per_s'] / reference['sequences_per_s']:5.2f}x  "
                  f"whole predict {r['predict_sequences_per_s'] / reference['predict_sequences_per_s']:5.2f}x  "
                  f"memory {r['peak_memory_mb'] / reference['peak_memory_mb']:5.2f}x")


if __name__ == "__main__":
    main()
