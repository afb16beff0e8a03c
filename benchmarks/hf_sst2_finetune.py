"""The Hugging Face baseline for apps/sentiment.py: same checkpoint, data, batches, recipe and steps.

Fine-tunes `transformers.BertForSequenceClassification` from all-MiniLM-L6-v2 (or another
Hugging Face model folder, `--init`, e.g. one `hf_pretrain.py` wrote; `--random-init` keeps
its config and vocab but draws fresh weights) in a plain torch loop and reports accuracy
on the same seeded validation split of SST-2 train.tsv and the step throughput. It reuses
kbert's reader, split and `SentenceBatches` (with Hugging Face's tokenizer behind them), so
both runs see identical batches in the same order; the recipe is BERT's: AdamW (weight
decay 0.01, none on biases and LayerNorm, eps 1e-6), 10% warmup then linear decay,
gradient clipping at 1.0, dropout 0.1. Runs on torch only (TensorFlow is never imported),
so it needs no separate process of its own.

    python benchmarks/hf_sst2_finetune.py --limit 8000 --epochs 2 --batch-size 32 --lr 5e-5
    python benchmarks/hf_sst2_finetune.py --init saved_models/hf_gutenberg_mini_mlm [--random-init] \
        --limit 1000 --epochs 6 --lr 3e-4
"""

import argparse
import json
import os
import time

os.environ["KERAS_BACKEND"] = "torch"  # kbert.data imports keras; keep the process torch-only

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from hf_recipe import HfTokenizer, HfTrainer, hf_inputs  # noqa: E402
from kbert.data import SentenceBatches, read_sentence_tsv  # noqa: E402
from kbert.metrics import accuracy  # noqa: E402
from kbert.paths import data_dir, minilm_dir  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(data_dir() / "sst2" / "train.tsv"))
    parser.add_argument("--init", default=str(minilm_dir()), help="a Hugging Face model folder with its vocab.txt")
    parser.add_argument("--random-init", action="store_true", help="--init's config and vocab, fresh weights")
    parser.add_argument("--limit", type=int, default=8000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the figures to this JSON file")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    examples = read_sentence_tsv(args.data, label_names=["negative", "positive"])
    train, valid = examples.split(args.validation_fraction, args.seed)
    train = train.shuffled(args.seed, args.limit)
    tokenizer = HfTokenizer(args.init)
    train_batches = SentenceBatches(train, tokenizer, args.batch_size, args.max_length, shuffle=True, seed=args.seed)
    valid_batches = SentenceBatches(valid, tokenizer, 64, args.max_length)

    if args.random_init:
        config = transformers.BertConfig.from_pretrained(args.init, num_labels=2)
        model = transformers.BertForSequenceClassification(config)
    else:
        model = transformers.BertForSequenceClassification.from_pretrained(args.init, num_labels=2)
    total = len(train_batches) * args.epochs
    trainer = HfTrainer(model, args.lr, total)
    print(f"Hugging Face: {len(train)} training / {len(valid)} validation examples, {total} steps")

    history, step_times = [], []
    for epoch in range(args.epochs):
        model.train()
        for index in range(len(train_batches)):
            start = time.perf_counter()
            inputs, labels = train_batches[index]
            trainer.step(**hf_inputs(inputs), labels=torch.from_numpy(labels).long())
            step_times.append(time.perf_counter() - start)
        train_batches.on_epoch_end()
        model.eval()
        with torch.no_grad():
            predictions = np.concatenate([model(**hf_inputs(valid_batches[i][0])).logits.argmax(-1).numpy()
                                          for i in range(len(valid_batches))])
        history.append(accuracy(valid.labels, predictions))
        print(f"epoch {epoch + 1}: validation accuracy {history[-1]:.4f}, "
              f"{len(train_batches) / sum(step_times[-len(train_batches):]):.3f} steps/s", flush=True)
    results = {"engine": "hf_torch", "train_examples": len(train), "validation_examples": len(valid),
               "steps": total, "val_accuracy": history, "best_val_accuracy": max(history),
               "train_seconds": round(sum(step_times), 1), "steps_per_second": round(total / sum(step_times), 3),
               "hyperparameters": vars(args)}
    print(json.dumps(results))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
