"""A real fine-tune where BERT is trained (a GPU): SST-2, kbert on torch and on JAX against Hugging Face's plain loop.

all-MiniLM-L6-v2 (or --init, a Hugging Face BERT folder) with a two-class head, trained on all of SST-2's train.tsv
but a seeded validation split (10%), one epoch at batch 32, BERT's recipe (AdamW, weight decay 0.01, eps 1e-6, 10%
warmup then linear decay, clipping at 1.0, dropout 0.1, lr 5e-5). Every run sees the same batches in the same order
(kbert's `SentenceBatches`, each cut to its longest row rounded up to 8, over Hugging Face's tokenizer: kbert's
gives the same ids, and needs TensorFlow, absent on a GPU machine), each in a process of its own:

- kbert_torch: `BertClassifier.fit` under KERAS_BACKEND=torch (its fused training step), metrics off;
  kbert_jax: the same under JAX (XLA: a compile for each batch length).
- hf: `BertForSequenceClassification` (SDPA attention) in a plain torch loop (`hf_recipe.HfTrainer`), its loss read
  each step, as Hugging Face's Trainer logs it.

--precisions: bfloat16 (Keras's "mixed_bfloat16"; torch.autocast), float16 with loss scaling ("mixed_float16" and
Keras's `LossScaleOptimizer`, which kbert's `compile` wraps; autocast and `torch.amp.GradScaler`), float32; float32
weights in each. Prints a line a run: the epoch's wall time (`fit` over the epoch, or Hugging Face's loop, compiles
and the host's work included; the model's loading apart), the validation pass's, the accuracy, and the mean training
loss over the epoch; then each kbert run's epoch and accuracy against Hugging Face's at the same precision, and each
engine's float16 loss against its bfloat16 loss (--seeds > 1: the spread of bfloat16's over seeds, the noise).

    python benchmarks/gpu_sst2_finetune.py                                          # on a GPU machine
    python benchmarks/gpu_sst2_finetune.py --limit 256 --engines hf kbert_torch --precisions float32  # a CPU check
    python benchmarks/gpu_sst2_finetune.py --pack .gpu_data   # what a GPU machine without the data needs (see
                                                              # tools/gpu_session.sh)

`--pack` writes SST-2's train.tsv and the checkpoint with its weights rounded to float16 (to travel within a device
machine's 64 MiB; every engine starts from the same rounded weights, loaded as float32).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

# The main process reads kbert's default paths under torch (a GPU machine has no TensorFlow, Keras's default backend);
# each engine's process is given its own
os.environ.setdefault("KERAS_BACKEND", "torch")
ENGINES = ("hf", "kbert_torch", "kbert_jax")
PRECISIONS = ("bfloat16", "float16", "float32")
CHECKPOINT_FILES = ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def batches(args):
    """(training batches, validation batches, validation labels): the same for every engine."""
    from hf_recipe import HfTokenizer
    from kbert.data import SentenceBatches, read_sentence_tsv

    examples = read_sentence_tsv(args.data, label_names=["negative", "positive"])
    train, valid = examples.split(args.validation_fraction, args.seed)
    train = train.shuffled(args.seed, args.limit)
    tokenizer = HfTokenizer(args.init)
    return (SentenceBatches(train, tokenizer, args.batch_size, args.max_length, shuffle=True, seed=args.seed),
            SentenceBatches(valid, tokenizer, 256, args.max_length), valid.labels)


def run_kbert(args, train_batches, valid_batches):
    """(epoch seconds, validation seconds, logits, mean training loss) of kbert's classifier through `fit`."""
    import keras

    from kbert import BertBackbone, BertClassifier
    from kbert.optimizers import mixed_compute

    keras.utils.set_random_seed(args.seed)
    with mixed_compute(args.precision):
        model = BertClassifier(BertBackbone.from_preset(args.init), 2)
    model.compile(learning_rate=args.lr, metrics=None)  # BERT's AdamW over the fit; a LossScaleOptimizer in float16
    start = time.perf_counter()
    history = model.fit(train_batches, epochs=1, verbose=0)  # its loss: the mean over the epoch, read at its end
    epoch_seconds = time.perf_counter() - start
    start = time.perf_counter()
    logits = valid_batches.predict(model)
    return epoch_seconds, time.perf_counter() - start, logits, history.history["loss"][-1]


def run_hf(args, train_batches, valid_batches):
    """(epoch seconds, validation seconds, logits, mean training loss) of Hugging Face's classifier in its loop."""
    import torch
    import transformers
    from hf_recipe import HfTrainer, hf_inputs

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    model = transformers.BertForSequenceClassification.from_pretrained(
        args.init, num_labels=2, dtype=torch.float32, attn_implementation="sdpa").to(device)
    model.train()
    trainer = HfTrainer(model, args.lr, len(train_batches), compute_dtype=args.precision)
    losses, sizes = [], []
    start = time.perf_counter()
    for index in range(len(train_batches)):
        inputs, labels = train_batches[index]
        losses.append(trainer.step(**hf_inputs(inputs, device), labels=torch.as_tensor(labels, device=device).long()))
        sizes.append(len(labels))
    epoch_seconds = time.perf_counter() - start
    model.eval()
    start = time.perf_counter()
    with torch.inference_mode(), torch.autocast(device, dtype=trainer.autocast, enabled=trainer.autocast is not None):
        logits = np.concatenate([model(**hf_inputs(valid_batches[i][0], device)).logits.float().cpu().numpy()
                                 for i in range(len(valid_batches))])
    return epoch_seconds, time.perf_counter() - start, logits, float(np.average(losses, weights=sizes))


def worker(args):
    from kbert.metrics import accuracy

    train_batches, valid_batches, labels = batches(args)
    run = run_hf if args.worker == "hf" else run_kbert
    epoch_seconds, valid_seconds, logits, loss = run(args, train_batches, valid_batches)
    print(json.dumps({"engine": args.worker, "precision": args.precision, "seed": args.seed,
                      "steps": len(train_batches), "epoch_s": epoch_seconds, "validation_s": valid_seconds,
                      "accuracy": accuracy(labels, logits.argmax(-1)), "mean_loss": loss}))


def pack(args):
    """Writes into `args.pack` SST-2's train.tsv and the checkpoint folder, its weights rounded to float16."""
    from safetensors.numpy import load_file, save_file

    folder = os.path.join(args.pack, "checkpoint_float16")
    os.makedirs(folder, exist_ok=True)
    os.makedirs(os.path.join(args.pack, "sst2"), exist_ok=True)
    shutil.copy(args.data, os.path.join(args.pack, "sst2", "train.tsv"))
    for name in CHECKPOINT_FILES:
        shutil.copy(os.path.join(args.init, name), folder)
    weights = load_file(os.path.join(args.init, "model.safetensors"))
    save_file({name: value.astype("float16") if value.dtype == np.float32 else value
               for name, value in weights.items()}, os.path.join(folder, "model.safetensors"))
    print(f"{args.pack}: sst2/train.tsv, checkpoint_float16/ (from {args.init})")


def main():
    from kbert.paths import data_dir, minilm_dir

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--precisions", nargs="+", default=["bfloat16", "float16"], choices=PRECISIONS)
    parser.add_argument("--data", default=str(data_dir() / "sst2" / "train.tsv"), help="SST-2's train.tsv")
    parser.add_argument("--init", default=str(minilm_dir()), help="a Hugging Face BERT folder with its vocab.txt")
    parser.add_argument("--limit", type=int, help="train on this many examples (default: all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, default=1, help="runs of each engine and precision, seeds 0, 1, ...")
    parser.add_argument("--json", help="write every run's figures to this file")
    parser.add_argument("--pack", metavar="FOLDER", help="write the data and a float16 checkpoint there, and stop")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--precision", choices=PRECISIONS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pack:
        return pack(args)
    if args.worker:
        return worker(args)
    print(f"SST-2 from {args.data}, {args.init}, 1 epoch at batch {args.batch_size}, lr {args.lr}; "
          f"{os.cpu_count()} CPU cores", flush=True)
    results = []
    for seed in range(args.seeds):
        for precision in args.precisions:
            for engine in args.engines:
                env = {**os.environ, "KERAS_BACKEND": "jax" if engine == "kbert_jax" else "torch"}
                command = [sys.executable, __file__, "--worker", engine, "--precision", precision, "--seed", str(seed),
                           "--data", args.data, "--init", args.init, "--batch-size", str(args.batch_size),
                           "--lr", str(args.lr), "--max-length", str(args.max_length),
                           "--validation-fraction", str(args.validation_fraction),
                           *(["--limit", str(args.limit)] if args.limit else [])]
                done = subprocess.run(command, env=env, capture_output=True, text=True)
                if done.returncode:
                    print(f"{engine} {precision}: failed\n{done.stderr[-3000:]}", flush=True)
                    continue
                r = json.loads(done.stdout.strip().splitlines()[-1])
                results.append(r)
                print(f"{engine:12} {precision:9} seed {seed}: epoch {r['epoch_s']:7.1f} s ({r['steps']} steps, "
                      f"{1000 * r['epoch_s'] / r['steps']:6.1f} ms a step), validation {r['validation_s']:5.1f} s, "
                      f"accuracy {r['accuracy']:.4f}, mean loss {r['mean_loss']:.4f}", flush=True)
    compare(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def compare(results):
    """kbert against Hugging Face at each precision, and float16's loss against bfloat16's (means over seeds)."""
    def mean(engine, precision, key):
        values = [r[key] for r in results if r["engine"] == engine and r["precision"] == precision]
        return statistics.mean(values) if values else None

    print("\nvs hf at the same precision (its epoch / the engine's; accuracy difference in points)")
    for engine in ("kbert_torch", "kbert_jax"):
        for precision in PRECISIONS:
            ours, theirs = mean(engine, precision, "epoch_s"), mean("hf", precision, "epoch_s")
            if ours and theirs:
                points = 100 * (mean(engine, precision, "accuracy") - mean("hf", precision, "accuracy"))
                print(f"{engine:12} {precision:9} epoch {theirs / ours:5.2f}x, accuracy {points:+.2f}")
    print("\nfloat16 (loss scaling) against bfloat16: mean training loss")
    for engine in ENGINES:
        float16, bfloat16 = mean(engine, "float16", "mean_loss"), mean(engine, "bfloat16", "mean_loss")
        if float16 is not None and bfloat16 is not None:
            spread = [r["mean_loss"] for r in results if r["engine"] == engine and r["precision"] == "bfloat16"]
            noise = f", bfloat16's spread over seeds {max(spread) - min(spread):.4f}" if len(spread) > 1 else ""
            print(f"{engine:12} float16 {float16:.4f}, bfloat16 {bfloat16:.4f}, difference {float16 - bfloat16:+.4f}"
                  f"{noise}")


if __name__ == "__main__":
    main()
