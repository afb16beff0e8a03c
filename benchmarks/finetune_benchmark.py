"""Fine-tuning step throughput: kbert's `model.fit` on each backend beside a Hugging Face torch loop
and, on request, keras-hub's BERT classifier on each backend.

Every engine fine-tunes all-MiniLM-L6-v2 with a two-class head on the same batch of
random ids (default 16 x 128, no padding), with BERT's AdamW (warmup, linear decay, weight
decay, clipping at 1.0), in a process of its own, one after another, so the figures share a
run. kbert (engines `tensorflow`, `jax`, `torch`) runs `model.fit` with its default
compilation (XLA on TensorFlow and JAX, eager torch); Hugging Face (`hf_torch`) runs
`BertForSequenceClassification` in a plain torch loop. `--dtypes float32 mixed_bfloat16`
also measures bfloat16 compute (Keras's mixed policy; torch.autocast for Hugging Face).

keras-hub (engines `keras_hub_tensorflow`, `keras_hub_jax`, `keras_hub_torch`) builds
`keras_hub.models.BertBackbone` from the checkpoint's config.json (the same MiniLM shape and
dropout) under `keras_hub.models.BertTextClassifier(backbone, num_classes=2,
preprocessor=None)`, with random weights: the values of the weights do not change the cost
of a step, so this measures throughput only. Both Keras models go through the same code:
the same batch, `bert_adamw` optimizer, loss (no metrics), dtype policy, process settings
(the classic threefry stream on JAX, as kbert's trainers select) and `fit` step timer; only
the model differs. The keras-hub engines are opt-in (`--engines ... keras_hub_jax` or
`--engines all`): they add three processes with their own compilations, about doubling the
run, and the default run stays the kbert-against-Hugging-Face comparison above.

Prints the median step time after `--warmup` steps, steps/s, ratios to Hugging Face and, for
each keras-hub engine, kbert's ratio to keras-hub on the same backend and dtype.

    python benchmarks/finetune_benchmark.py                                   # fp32, kbert + HF
    python benchmarks/finetune_benchmark.py --dtypes float32 mixed_bfloat16 --steps 10
    python benchmarks/finetune_benchmark.py --engines all                     # + keras-hub
    python benchmarks/finetune_benchmark.py --engines jax keras_hub_jax hf_torch
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
KERAS_HUB_PREFIX = "keras_hub_"
DEFAULT_ENGINES = (*KERAS_BACKENDS, "hf_torch")
ENGINES = (*DEFAULT_ENGINES, *(KERAS_HUB_PREFIX + backend for backend in KERAS_BACKENDS))


def backend_of(engine):
    """The KERAS_BACKEND an engine runs under: kbert engines are named after it."""
    return "torch" if engine == "hf_torch" else engine.removeprefix(KERAS_HUB_PREFIX)


def make_batch(batch_size, length, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, 30522, (batch_size, length)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 101, 102
    labels = rng.integers(0, 2, batch_size).astype("int32")
    return token_ids, labels


def build_kbert():
    from kbert import BertBackbone
    from kbert.tasks import BertClassifier

    return BertClassifier(BertBackbone.from_preset("all_minilm_l6_v2"), 2)


def build_keras_hub():
    """keras-hub's BERT classifier in MiniLM's shape (from the checkpoint's config.json), random weights."""
    import keras_hub

    from kbert.convert import read_hf_config
    from kbert.paths import minilm_dir

    config = read_hf_config(minilm_dir())
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers, num_heads=config.num_heads,
        hidden_dim=config.hidden_dim, intermediate_dim=config.intermediate_dim, dropout=config.dropout,
        max_sequence_length=config.max_sequence_length, num_segments=config.num_segments)
    return keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)


def run_keras(args, build_model):
    """Times `model.fit` steps of the classifier `build_model()` returns; the part kbert and keras-hub share."""
    import keras

    from kbert.optimizers import bert_adamw
    from kbert.backend_speedups.fast_dropout import fast_dropout_masks

    keras.config.set_dtype_policy(args.dtype)
    model = build_model()
    total = args.warmup + args.steps
    # metrics=None: keras-hub's compile would otherwise add an accuracy metric that kbert's step does not compute.
    model.compile(optimizer=bert_adamw(3e-5, total), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=None)
    token_ids, labels = make_batch(args.batch_size, args.length)
    x = {"token_ids": np.tile(token_ids, (total, 1)), "segment_ids": np.zeros((total * args.batch_size, args.length), "int32"),
         "padding_mask": np.ones((total * args.batch_size, args.length), "int32")}
    times = []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            float(logs["loss"])  # wait for the step to finish (async dispatch)
            times.append(time.perf_counter() - self.start)

    with fast_dropout_masks():  # kbert's and keras-hub's models alike, as BertTask.fit trains (JAX only)
        model.fit(x, np.tile(labels, total), batch_size=args.batch_size, epochs=1, shuffle=False, verbose=0,
                  callbacks=[Timer()])
    return times


def run_hf(args):
    import torch
    import transformers
    from hf_recipe import HfTrainer

    from kbert.paths import minilm_dir

    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification.from_pretrained(minilm_dir(), num_labels=2)
    model.train()
    total = args.warmup + args.steps
    trainer = HfTrainer(model, 3e-5, total, compute_dtype=args.dtype.removeprefix("mixed_"))
    token_ids, labels = make_batch(args.batch_size, args.length)
    inputs = {"input_ids": torch.tensor(token_ids, dtype=torch.long),
              "token_type_ids": torch.zeros(token_ids.shape, dtype=torch.long),
              "attention_mask": torch.ones(token_ids.shape, dtype=torch.long),
              "labels": torch.tensor(labels, dtype=torch.long)}
    times = []
    for _ in range(total):
        start = time.perf_counter()
        trainer.step(**inputs)
        times.append(time.perf_counter() - start)
    return times


def worker(args):
    if args.worker == "hf_torch":
        times = run_hf(args)
    else:
        times = run_keras(args, build_keras_hub if args.worker.startswith(KERAS_HUB_PREFIX) else build_kbert)
    timed = times[args.warmup:]
    print(json.dumps({"engine": args.worker, "dtype": args.dtype, "first_step_s": times[0],
                      "median_step_s": statistics.median(timed), "steps_per_s": 1 / statistics.median(timed)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=list(DEFAULT_ENGINES), choices=(*ENGINES, "all"), metavar="ENGINE",
                        help=f"any of {', '.join(ENGINES)}, or all; default {' '.join(DEFAULT_ENGINES)} "
                             "(the keras_hub_* engines are opt-in)")
    parser.add_argument("--dtypes", nargs="+", default=["float32"], choices=["float32", "mixed_bfloat16"])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (compilation)")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if "all" in args.engines:
        args.engines = list(ENGINES)
    print(f"Fine-tuning all-MiniLM-L6-v2, batch {args.batch_size} x {args.length}, "
          f"{args.warmup} warmup + {args.steps} timed steps; {os.cpu_count()} CPU cores")
    results = []
    for dtype in args.dtypes:
        for engine in args.engines:
            env = {**os.environ, "KERAS_BACKEND": backend_of(engine)}
            command = [sys.executable, __file__, "--worker", engine, "--dtype", dtype,
                       *[f"--{k}={getattr(args, k.replace('-', '_'))}" for k in ("batch-size", "length", "steps", "warmup")]]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode:
                print(f"{engine} {dtype}: failed\n{done.stderr[-2000:]}")
                continue
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            r = results[-1]
            print(f"{engine:20} {dtype:15} {r['median_step_s'] * 1000:8.0f} ms/step  {r['steps_per_s']:6.2f} steps/s"
                  f"  (first step {r['first_step_s']:.1f} s)", flush=True)
    reference = {r["dtype"]: r["steps_per_s"] for r in results if r["engine"] == "hf_torch"}
    fp32 = {r["engine"]: r["steps_per_s"] for r in results if r["dtype"] == "float32"}
    kbert = {(r["engine"], r["dtype"]): r["steps_per_s"] for r in results if r["engine"] in KERAS_BACKENDS}
    print("\nengine               dtype           steps/s   vs HF same dtype   vs own fp32   kbert vs keras-hub")
    for r in results:
        versus = f"{r['steps_per_s'] / reference[r['dtype']]:.2f}x" if r["dtype"] in reference else "-"
        own = f"{r['steps_per_s'] / fp32[r['engine']]:.2f}x" if r["engine"] in fp32 else "-"
        mine = kbert.get((backend_of(r["engine"]), r["dtype"])) if r["engine"].startswith(KERAS_HUB_PREFIX) else None
        hub = f"{mine / r['steps_per_s']:.2f}x" if mine else "-"
        print(f"{r['engine']:20} {r['dtype']:15} {r['steps_per_s']:7.2f}   {versus:>16}   {own:>11}   {hub:>18}")


if __name__ == "__main__":
    main()
