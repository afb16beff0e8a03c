"""Pretraining step throughput: kbert's BertPretrainer beside keras-hub's and Hugging Face's BertMaskedLM.

Each (backend, engine) runs in a process of its own, one after another. Every engine trains
the same configuration on the same random batch (by default 32 x 128 tokens, 20 masked
positions per row, vocabulary 30522) with the same optimizer (`kbert.training.bert_adamw`) through
`train_on_batch`, with the backend's default compilation (XLA on TensorFlow, jax.jit on JAX,
eager on torch). The first step (tracing, compiling, building the optimizer) is timed apart.
keras-hub's BertMaskedLM has no next-sentence head, so kbert is also run MLM-only. On torch,
`hf_torch` is the reference outside Keras: Hugging Face's `BertForMaskedLM` (head on the
masked positions only) in a plain torch loop with torch's AdamW (`hf_pretrain.py`).
`--mixed-precision` runs Keras under mixed_bfloat16 and the torch loop under bfloat16 autocast.

    python benchmarks/pretrain_benchmark.py                        # bert_mini and bert_small
    python benchmarks/pretrain_benchmark.py --presets bert_mini --steps 5 --backends jax
    python benchmarks/pretrain_benchmark.py --presets bert_mini --backends torch --mixed-precision
"""

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

BACKENDS = ("tensorflow", "jax", "torch")
ENGINES = ("keras_hub", "kbert", "kbert_mlm_only", "hf_torch")


def make_batch(batch_size, length, predictions, vocabulary_size, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, vocabulary_size, (batch_size, length)).astype("int32")
    positions = np.sort(rng.permuted(np.tile(np.arange(1, length - 1), (batch_size, 1)), axis=1)[:, :predictions], axis=1)
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids),
         "mask_positions": positions.astype("int32")}
    mask_ids = np.take_along_axis(token_ids, positions, axis=1)
    return x, mask_ids, np.ones(positions.shape, "float32"), rng.integers(0, 2, batch_size).astype("int32")


def hf_torch_step(preset, vocabulary_size, x, mask_ids, bfloat16):
    """One training step of Hugging Face's BertForMaskedLM on the batch, as a function."""
    import torch
    import transformers

    from hf_pretrain import MaskedPositionsMLM, hf_bert_config
    from hf_recipe import HfTrainer
    from kbert.config import PRESETS

    model = transformers.BertForMaskedLM(hf_bert_config(PRESETS[preset], vocabulary_size))
    trainer = HfTrainer(MaskedPositionsMLM(model), 1e-4, 10_000, bfloat16=bfloat16)
    input_ids = torch.from_numpy(x["token_ids"]).long()
    labels = torch.full_like(input_ids, -100)
    labels.scatter_(1, torch.from_numpy(x["mask_positions"]).long(), torch.from_numpy(mask_ids).long())
    return lambda: trainer.step(input_ids=input_ids, labels=labels)


def worker(engine, preset, args):
    import keras

    from kbert.config import PRESETS
    from kbert.optimizers import bert_adamw
    from kbert.training import use_fast_dropout_masks

    use_fast_dropout_masks()
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")

    config = {**PRESETS[preset].to_dict(), "vocabulary_size": args.vocabulary_size}
    x, mask_ids, weights, labels = make_batch(args.batch_size, args.seq_len, args.predictions, args.vocabulary_size)
    optimizer = bert_adamw(1e-4, total_steps=10_000)
    if engine == "hf_torch":
        step = hf_torch_step(preset, args.vocabulary_size, x, mask_ids, args.mixed_precision)
    elif engine == "keras_hub":
        import keras_hub

        names = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "max_sequence_length")
        model = keras_hub.models.BertMaskedLM(keras_hub.models.BertBackbone(**{k: config[k] for k in names}))
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()])
        y, sample_weight = mask_ids, weights
    else:
        from kbert.models.bert_backbone import BertBackbone
        from kbert.tasks.bert_pretrainer import BertPretrainer

        model = BertPretrainer(BertBackbone(**config), next_sentence=engine == "kbert")
        model.compile(optimizer=optimizer)
        y, sample_weight = {"mlm": mask_ids}, {"mlm": weights}
        if engine == "kbert":
            y["nsp"], sample_weight["nsp"] = labels, np.ones(len(labels), "float32")
    if engine != "hf_torch":
        step = functools.partial(model.train_on_batch, x, y, sample_weight=sample_weight)
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {"first_step_s": first, "steps_per_s": 1 / median, "tokens_per_s": args.batch_size * args.seq_len / median}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=["bert_mini", "bert_small"])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20, help="masked positions per row")
    parser.add_argument("--vocabulary-size", type=int, default=30522)
    parser.add_argument("--steps", type=int, default=10, help="timed steps (the median is reported)")
    parser.add_argument("--mixed-precision", action="store_true", help="bfloat16 compute, float32 weights")
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "PRESET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args)))
        return
    print(f"batch {args.batch_size} x {args.seq_len}, {args.predictions} predictions per row, "
          f"vocabulary {args.vocabulary_size}, median of {args.steps} steps, "
          f"{'bfloat16' if args.mixed_precision else 'float32'}, {os.cpu_count()} CPU cores")
    print(f"{'preset':<11}{'backend':<12}{'engine':<16}{'first step s':>13}{'steps/s':>9}{'tokens/s':>10}{'vs keras-hub':>13}")
    for preset in args.presets:
        for backend in args.backends:
            results = {}
            for engine in args.engines:
                if engine == "hf_torch" and backend != "torch":
                    continue
                command = [sys.executable, __file__, "--worker", engine, preset, "--steps", str(args.steps),
                           "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len),
                           "--predictions", str(args.predictions), "--vocabulary-size", str(args.vocabulary_size)]
                command += ["--mixed-precision"] if args.mixed_precision else []
                done = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend},
                                      capture_output=True, text=True)
                if done.returncode:
                    print(f"{preset:<11}{backend:<12}{engine:<16} failed: {done.stderr.strip().splitlines()[-1]}")
                    continue
                results[engine] = result = json.loads(done.stdout.strip().splitlines()[-1])
                ratio = result["tokens_per_s"] / results["keras_hub"]["tokens_per_s"] if "keras_hub" in results else None
                print(f"{preset:<11}{backend:<12}{engine:<16}{result['first_step_s']:>13.1f}{result['steps_per_s']:>9.2f}"
                      f"{result['tokens_per_s']:>10.0f}{'' if ratio is None else f'{ratio:>12.2f}x'}", flush=True)


if __name__ == "__main__":
    main()
