"""Pretraining step throughput: kbert's BertPretrainer beside keras-hub's and Hugging Face's BertMaskedLM.

Each (backend, engine) runs in a process of its own, one after another. Every engine trains
the same configuration on the same random batch (by default 32 x 128 tokens, 19 masked
positions per row, vocabulary 30522) with the same optimizer (`kbert.optimizers.bert_adamw`) through
`train_on_batch`, with the backend's default compilation (XLA on TensorFlow, jax.jit on JAX,
eager on torch). The first step (tracing, compiling, building the optimizer) is timed apart.
keras-hub's BertMaskedLM has no next-sentence head, so kbert is also run MLM-only. keras-hub's
BERT computes GELU with the tanh approximation (4.6e-3 from the real checkpoint's outputs);
`keras_hub_erf` is the same keras-hub model with BERT's exact GELU written as kbert writes it
(`kbert.layers.transformer_encoder.exact_gelu`), so that both compute the same function. On torch,
`hf_torch` is the reference outside Keras: Hugging Face's `BertForMaskedLM` (head on the
masked positions only) in a plain torch loop with torch's AdamW (`hf_pretrain.py`).
`--mixed-precision` runs Keras under mixed_bfloat16 and the torch loop under bfloat16 autocast.

With `--vocab`, every engine trains on real text: the others cycle through 20 batches of the
app's pipeline (MLM, `--predictions` slots a row, unused slots weighted 0) on `--corpus`,
tokenized with `--vocab`, whose size then replaces `--vocabulary-size`; the batches are made
ahead, in a child process as the app makes them. Two engines run the pipeline while they train,
MLM only, `--app-epochs` epochs of `--steps` steps, the first epoch (compiling, filling the
pipeline) left out: `kbert_app` is `apps/pretrain.py` itself (its pipeline in a child process;
the step time is Keras's epoch time over its steps, a checkpoint each epoch included),
`kbert_in_process` is `fit` on the same tf.data pipeline built in the training process, as the
app did before. Their ratio to `kbert_mlm_only` (the isolated step on the same kind of batches)
is the pipeline's cost: issue 26 asks for the app within 10% of it.

    python benchmarks/pretrain_benchmark.py                        # bert_mini and bert_small
    python benchmarks/pretrain_benchmark.py --presets bert_mini --steps 5 --backends jax
    python benchmarks/pretrain_benchmark.py --presets bert_mini --backends torch --mixed-precision
    python benchmarks/pretrain_benchmark.py --presets bert_mini --batch-size 64 --seq-len 64 \
        --engines kbert_mlm_only kbert_app kbert_in_process --vocab saved_models/imdb_mini_random --mixed-precision
"""

import argparse
import contextlib
import functools
import itertools
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

BACKENDS = ("tensorflow", "jax", "torch")
ENGINES = ("keras_hub", "keras_hub_erf", "kbert", "kbert_mlm_only", "hf_torch", "kbert_app", "kbert_in_process")
REAL_TEXT = ("kbert_app", "kbert_in_process")
APP = pathlib.Path(__file__).resolve().parents[1] / "apps" / "pretrain.py"


def make_batch(batch_size, length, predictions, vocabulary_size, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, vocabulary_size, (batch_size, length)).astype("int32")
    positions = np.sort(rng.permuted(np.tile(np.arange(1, length - 1), (batch_size, 1)), axis=1)[:, :predictions], axis=1)
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids),
         "mask_positions": positions.astype("int32")}
    mask_ids = np.take_along_axis(token_ids, positions, axis=1)
    return x, mask_ids, np.ones(positions.shape, "float32"), rng.integers(0, 2, batch_size).astype("int32")


def real_batches(args, count=20):
    """`count` batches of the app's pretraining pipeline (MLM, `--predictions` slots a row, unused
    slots weighted 0) on --corpus with --vocab, as `make_batch` returns them (random NSP labels).
    Made in a child process, as the app makes them: a torch worker runs no tf.data."""
    from kbert.data.batches.child_process import process_batches
    from kbert.data.pretraining.dataset import pretraining_dataset
    from kbert.text import BertTokenizer

    tokenizer = BertTokenizer.from_vocab(args.vocab)
    stream = process_batches(pretraining_dataset, [args.corpus], tokenizer=tokenizer, batch_size=args.batch_size,
                             max_seq_length=args.seq_len, objective="mlm", max_predictions=args.predictions, seed=0)
    labels = np.random.default_rng(0).integers(0, 2, args.batch_size).astype("int32")
    with contextlib.closing(stream):
        return [(x, y["mlm"], w["mlm"], labels) for x, y, w in itertools.islice(stream, count)]


def hf_torch_steps(preset, vocabulary_size, batches, bfloat16):
    """A training step of Hugging Face's BertForMaskedLM on each batch, as functions (one model)."""
    import torch
    import transformers

    from hf_pretrain import MaskedPositionsMLM, hf_bert_config
    from hf_recipe import HfTrainer
    from kbert.config import PRESETS

    model = transformers.BertForMaskedLM(hf_bert_config(PRESETS[preset], vocabulary_size))
    trainer = HfTrainer(MaskedPositionsMLM(model), 1e-4, 10_000, compute_dtype="bfloat16" if bfloat16 else "float32")
    steps = []
    for x, mask_ids, weights, _ in batches:
        input_ids = torch.from_numpy(x["token_ids"]).long()
        labels = torch.full_like(input_ids, -100)
        targets = torch.from_numpy(np.where(weights > 0, mask_ids, -100)).long()  # unused slots: no target
        labels.scatter_(1, torch.from_numpy(x["mask_positions"]).long(), targets)
        attention_mask = torch.from_numpy(x["padding_mask"]).long()  # real text has padded rows
        steps.append(functools.partial(trainer.step, input_ids=input_ids, labels=labels, attention_mask=attention_mask))
    return steps


def app_seconds_per_step(preset, args):
    """apps/pretrain.py for --app-epochs epochs of --steps steps: Keras's epoch times (whole
    seconds, printed with verbose=2) over the steps, the first epoch left out."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, str(APP), "--corpus", args.corpus, "--vocab", args.vocab, "--run", "run",
                   "--output", folder, "--preset", preset, "--objective", "mlm", "--batch-size", str(args.batch_size),
                   "--seq-len", str(args.seq_len), "--steps", str(args.steps * args.app_epochs),
                   "--checkpoint-every", str(args.steps), "--holdout-fraction", "0", "--lr", "1e-4"]
        done = subprocess.run(command + (["--mixed-precision"] if args.mixed_precision else []),
                              capture_output=True, text=True, check=True)
    epochs = [int(seconds) for seconds in re.findall(rf"^{args.steps}/{args.steps} - (\d+)s - ", done.stdout, re.M)]
    return statistics.median(epochs[1:]) / args.steps


def in_process_seconds_per_step(model, args):
    """`fit` on the pretraining tf.data pipeline built in this process, timed per epoch."""
    import keras

    from kbert.data.pretraining.dataset import pretraining_dataset
    from kbert.text import BertTokenizer

    tokenizer = BertTokenizer.from_vocab(args.vocab)
    data = pretraining_dataset([args.corpus], tokenizer, args.batch_size, args.seq_len, objective="mlm", seed=0)
    times = []
    clock = keras.callbacks.LambdaCallback(on_epoch_begin=lambda *_: times.append(-time.perf_counter()),
                                           on_epoch_end=lambda *_: times.__setitem__(-1, times[-1] + time.perf_counter()))
    model.fit(data, epochs=args.app_epochs, steps_per_epoch=args.steps, callbacks=[clock], verbose=0)
    return statistics.median(times[1:]) / args.steps


def worker(engine, preset, args):
    import keras

    from kbert.config import PRESETS
    from kbert.optimizers import bert_adamw
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")

    if engine == "kbert_app":
        median = app_seconds_per_step(preset, args)
        return {"first_step_s": float("nan"), "steps_per_s": 1 / median,
                "tokens_per_s": args.batch_size * args.seq_len / median}
    config = {**PRESETS[preset].to_dict(), "vocabulary_size": args.vocabulary_size}
    batches = real_batches(args) if args.vocab else [make_batch(args.batch_size, args.seq_len, args.predictions,
                                                                args.vocabulary_size)]
    optimizer = bert_adamw(1e-4, total_steps=10_000)
    if engine == "hf_torch":
        steps = hf_torch_steps(preset, args.vocabulary_size, batches, args.mixed_precision)
    elif engine in ("keras_hub", "keras_hub_erf"):
        import keras_hub

        if engine == "keras_hub_erf":  # the activation keras-hub's BertBackbone passes to its blocks
            from keras_hub.src.models.bert import bert_backbone

            from kbert.layers.transformer_encoder import exact_gelu

            bert_backbone.gelu_approximate = exact_gelu

        names = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "max_sequence_length")
        model = keras_hub.models.BertMaskedLM(keras_hub.models.BertBackbone(**{k: config[k] for k in names}))
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()])

        def make_targets(mask_ids, weights, labels):
            return mask_ids, weights
    else:
        from kbert.models.bert_backbone import BertBackbone
        from kbert.tasks.bert_pretrainer import BertPretrainer

        model = BertPretrainer(BertBackbone(**config), next_sentence=engine == "kbert")
        model.compile(optimizer=optimizer)
        if engine == "kbert_in_process":
            median = in_process_seconds_per_step(model, args)
            return {"first_step_s": float("nan"), "steps_per_s": 1 / median,
                    "tokens_per_s": args.batch_size * args.seq_len / median}

        def make_targets(mask_ids, weights, labels):
            if engine == "kbert":
                return {"mlm": mask_ids, "nsp": labels}, {"mlm": weights, "nsp": np.ones(len(labels), "float32")}
            return {"mlm": mask_ids}, {"mlm": weights}
    if engine != "hf_torch":
        steps = [functools.partial(model.train_on_batch, x, *make_targets(mask_ids, weights, labels))
                 for x, mask_ids, weights, labels in batches]
    start = time.perf_counter()
    steps[0]()
    first = time.perf_counter() - start
    times = []
    for step in itertools.islice(itertools.cycle(steps), 1, args.steps + 1):
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
    parser.add_argument("--predictions", type=int,
                        help="masked-position slots per row (default: as many as a row can get, as the app has them: "
                             "kbert.data.pretraining.masking.prediction_slots, 10 at 64 tokens)")
    parser.add_argument("--vocabulary-size", type=int, default=30522)
    parser.add_argument("--steps", type=int, default=10, help="timed steps (the median is reported)")
    parser.add_argument("--mixed-precision", action="store_true", help="bfloat16 compute, float32 weights")
    parser.add_argument("--corpus", default=None,
                        help="text for kbert_app and kbert_in_process (default: imdb/unsup.txt under KBERT_DATA_DIR)")
    parser.add_argument("--vocab", help="vocab.txt or a folder holding one, for the real-text engines")
    parser.add_argument("--app-epochs", type=int, default=3, help="epochs of --steps steps of the real-text engines")
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "PRESET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.predictions is None:
        from kbert.data.pretraining.masking import prediction_slots

        args.predictions = prediction_slots(args.seq_len)
    if set(args.engines) & set(REAL_TEXT) and not args.vocab and not args.worker:
        parser.error(f"{', '.join(REAL_TEXT)} need --vocab (e.g. a folder apps/pretrain.py wrote)")
    if args.vocab and not args.worker:
        from kbert.paths import data_dir
        from kbert.text import BertTokenizer

        args.vocabulary_size = BertTokenizer.from_vocab(args.vocab).vocabulary_size
        args.corpus = args.corpus or str(data_dir() / "imdb" / "unsup.txt")
    if args.worker:
        from kbert.backend_speedups.fast_dropout import fast_dropout_masks

        with fast_dropout_masks():  # every engine, as BertTask.fit trains (JAX only)
            print(json.dumps(worker(*args.worker, args)))
        return
    print(f"batch {args.batch_size} x {args.seq_len}, {args.predictions} predictions per row, "
          f"vocabulary {args.vocabulary_size}, {'real text' if args.vocab else 'a random batch'}, "
          f"median of {args.steps} steps, "
          f"{'bfloat16' if args.mixed_precision else 'float32'}, {os.cpu_count()} CPU cores")
    print(f"{'preset':<11}{'backend':<12}{'engine':<17}{'first step s':>13}{'steps/s':>9}{'tokens/s':>10}"
          f"{'vs keras-hub':>13}{'vs isolated':>12}")
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
                if args.vocab:
                    command += ["--vocab", args.vocab, "--corpus", args.corpus, "--app-epochs", str(args.app_epochs)]
                done = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend},
                                      capture_output=True, text=True)
                if done.returncode:
                    print(f"{preset:<11}{backend:<12}{engine:<17} failed: {done.stderr.strip().splitlines()[-1]}")
                    continue
                results[engine] = result = json.loads(done.stdout.strip().splitlines()[-1])
                ratios = [f"{result['tokens_per_s'] / results[name]['tokens_per_s']:>{width}.2f}x" if name in results
                          else " " * (width + 1) for name, width in (("keras_hub", 12), ("kbert_mlm_only", 11))]
                print(f"{preset:<11}{backend:<12}{engine:<17}{result['first_step_s']:>13.1f}{result['steps_per_s']:>9.2f}"
                      f"{result['tokens_per_s']:>10.0f}{''.join(ratios)}", flush=True)


if __name__ == "__main__":
    main()
