"""An independent reference for issue 51's fine-tuning aim with ALBERT's shape: Hugging Face's ALBERT classes, sized
as a kbert run's model, pretrained by masked LM on the very batches that run read, then fine-tuned on SST-2 from
those weights and from the same classes' random init (the one the pretraining started from), so that whether brief
pretraining lifts ALBERT's shape above its random init is seen in two implementations.

    # 1. a kbert process: the batches of a benchmarks/family_fine_tuning.py run (O its --out, its tokenizer, corpus,
    #    seed and held-out split) and its SST-2 files tokenized by the same tokenizer
    KBERT_DATA_DIR=../shared/data .venv/bin/python benchmarks/albert_reference.py batches \\
        --vocab O/pretrain/albert_random --corpus O/corpus_50000.txt --batch-size 64 --steps 6000 \\
        --sst2 O --out saved_models/albert_batches.npz
    # 2. Hugging Face: AlbertForMaskedLM pretrained on them, AlbertForSequenceClassification fine-tuned, one thread
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/albert_reference.py train --batches saved_models/albert_batches.npz \\
        --config O/albert_config.json --warmup-steps 500 --out saved_models/albert_reference

The model: O/albert_config.json (family_fine_tuning.py's kbert config) as an `AlbertConfig` (embedding width,
hidden size, layers, heads, one shared layer group, gelu_new, its dropout), Hugging Face's own initialisation
(seed --seed). Pretraining: the masked-LM cross-entropy at the masked positions, AdamW as kbert's `bert_adamw`
(`hf_recipe.bert_adamw`: --lr, --warmup-steps, linear decay to 0 at the last step, weight decay 0.01 off
biases and layer norms, eps 1e-6, global clip 1.0), held-out masked-LM accuracy every --eval-every steps. Fine-tuning
as `apps/sentiment.py train --limit 1000 --epochs 6 --batch-size 32 --patience 3 --max-length 64` does: --train-sentences
seeded from sst2_train.tsv (each --finetune-seeds seed its own, the same for both starts), scored on all of
sst2_valid.tsv after every epoch, the best epoch kept, stopping after 3 without a better one; `hf_recipe.HfTrainer` at
--finetune-lr with 10% warmup over the planned steps; the classifier's dropout 0.1 (`classifier_dropout_prob`), its
pooler and head initialised from the seed, the same for both starts. Writes OUT/random and OUT/pretrained
(`save_pretrained`) and OUT/results.json.
"""

import argparse
import csv
import json
import math
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from electra_reference import X_KEYS, add_batch_arguments, pretraining_arrays  # noqa: E402

SST2_FILES = ("sst2_train", "sst2_valid")


def write_batches(args):
    """`pretraining_arrays` and the SST-2 files of `args.sst2` (sentence<TAB>label, a header row) as model inputs of
    the same tokenizer, `args.seq_len` tokens: `NAME_token_ids`, `NAME_padding_mask`, `NAME_labels`, one .npz."""
    from kbert.tasks import BertTextClassifierPreprocessor

    arrays, tokenizer = pretraining_arrays(args)
    preprocessor = BertTextClassifierPreprocessor(tokenizer, sequence_length=args.seq_len)
    for name in SST2_FILES:
        with open(pathlib.Path(args.sst2) / f"{name}.tsv", newline="", encoding="utf-8") as file:
            rows = list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        inputs = preprocessor.prepare([text for text, _ in rows]).inputs
        width = args.seq_len - inputs["token_ids"].shape[1]  # padded to the longest row: to seq_len, as masked
        for key in ("token_ids", "padding_mask"):
            arrays[f"{name}_{key}"] = np.pad(inputs[key], ((0, 0), (0, width)))
        arrays[f"{name}_labels"] = np.array([int(label) for _, label in rows])
    np.savez_compressed(args.out, vocabulary_size=tokenizer.vocabulary_size, **arrays)
    print(f"Wrote {args.out}: {args.steps} training and {len(arrays['held_out_token_ids'])} held-out batches of "
          f"{args.batch_size} x {args.seq_len}; SST-2 {len(arrays['sst2_train_labels'])} / "
          f"{len(arrays['sst2_valid_labels'])} sentences.")


def albert_config(kbert_config, vocabulary_size):
    """The `AlbertConfig` of a kbert ALBERT config (a dict of `BertConfig` fields)."""
    from transformers import AlbertConfig

    activations = {"gelu_approximate": "gelu_new", "gelu": "gelu"}
    return AlbertConfig(
        vocab_size=vocabulary_size, embedding_size=kbert_config["embedding_dim"],
        hidden_size=kbert_config["hidden_dim"], num_hidden_layers=kbert_config["num_layers"],
        num_attention_heads=kbert_config["num_heads"], intermediate_size=kbert_config["intermediate_dim"],
        num_hidden_groups=kbert_config.get("num_layer_groups", 1), inner_group_num=1,
        hidden_act=activations[kbert_config.get("activation", "gelu")],
        hidden_dropout_prob=kbert_config.get("dropout", 0.1), attention_probs_dropout_prob=kbert_config.get("dropout", 0.1),
        max_position_embeddings=kbert_config["max_sequence_length"], type_vocab_size=2, layer_norm_eps=1e-12,
        initializer_range=0.02, classifier_dropout_prob=0.1, pad_token_id=0)


def masked_lm(model, batch):
    """(logits at the masked positions, the masked-LM loss) of `AlbertForMaskedLM` on a batch."""
    import torch

    token_ids, segment_ids, mask, positions = (batch[key] for key in X_KEYS)
    hidden = model.albert(input_ids=token_ids, token_type_ids=segment_ids, attention_mask=mask).last_hidden_state
    gathered = torch.gather(hidden, 1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
    logits = model.predictions(gathered)
    weights = batch["mask_weights"].float()
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch["mask_ids"], reduction="none")
    return logits, (losses * weights).sum() / weights.sum().clamp(min=1.0)


def mlm_accuracy(model, held_out):
    import torch

    model.eval()
    right = count = 0.0
    with torch.no_grad():
        for index in range(len(held_out["token_ids"])):
            batch = {key: value[index] for key, value in held_out.items()}
            logits, _ = masked_lm(model, batch)
            weights = batch["mask_weights"] > 0
            right += ((logits.argmax(-1) == batch["mask_ids"]) & weights).sum().item()
            count += weights.sum().item()
    return round(right / count, 4)


def pretrain(args, data, out):
    """Saves OUT/random (step 0) and OUT/pretrained; returns the held-out curve."""
    import torch
    from hf_recipe import bert_adamw
    from transformers import AlbertForMaskedLM

    torch.manual_seed(args.seed)
    config = albert_config(json.loads(pathlib.Path(args.config).read_text()), int(data["vocabulary_size"]))
    model = AlbertForMaskedLM(config)
    model.save_pretrained(out / "random")
    batches = {name: {key: torch.from_numpy(data[f"{name}_{key}"].astype("int64"))
                      for key in (*X_KEYS, "mask_ids", "mask_weights")} for name in ("train", "held_out")}
    steps = args.steps or len(batches["train"]["token_ids"])
    optimizer, schedule = bert_adamw(model.named_parameters(), args.lr, args.warmup_steps, steps)
    print(f"Hugging Face's AlbertForMaskedLM, {sum(p.numel() for p in model.parameters()):,} parameters, {steps} "
          f"steps, {torch.get_num_threads()} thread(s)", flush=True)
    curve, start = [{"step": 0, "mlm_accuracy": mlm_accuracy(model, batches["held_out"])}], time.perf_counter()
    for step in range(steps):
        model.train()
        _, loss = masked_lm(model, {key: value[step] for key, value in batches["train"].items()})
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if (step + 1) % args.eval_every == 0 or step + 1 == steps:
            curve.append({"step": step + 1, "loss": round(loss.item(), 4),
                          "mlm_accuracy": mlm_accuracy(model, batches["held_out"]),
                          "seconds": round(time.perf_counter() - start, 1)})
            print(json.dumps(curve[-1]), flush=True)
    model.save_pretrained(out / "pretrained")
    return curve


def fine_tune(folder, arrays, seed, args):
    """(best validation accuracy, its epoch) of `AlbertForSequenceClassification` from `folder`, trained on
    `args.train_sentences` sentences of `arrays` (`sst2_arrays`) drawn by `seed`."""
    import torch
    from hf_recipe import HfTrainer
    from transformers import AlbertForSequenceClassification
    from transformers.utils import logging

    logging.set_verbosity_error()  # the pooler and head are new by design
    torch.manual_seed(seed)
    model = AlbertForSequenceClassification.from_pretrained(folder, num_labels=2)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(arrays["sst2_train"]["labels"]), args.train_sentences, replace=False)
    steps_per_epoch = math.ceil(len(chosen) / args.finetune_batch_size)
    total = args.finetune_epochs * steps_per_epoch
    trainer = HfTrainer(model, args.finetune_lr, total)
    best, best_epoch = -1.0, 0
    for epoch in range(1, args.finetune_epochs + 1):
        model.train()
        order = rng.permutation(chosen)
        for start in range(0, len(order), args.finetune_batch_size):
            rows = torch.from_numpy(order[start:start + args.finetune_batch_size])
            batch = {key: value[rows] for key, value in arrays["sst2_train"].items()}
            trainer.step(input_ids=batch["token_ids"], attention_mask=batch["padding_mask"], labels=batch["labels"])
        model.eval()
        valid = arrays["sst2_valid"]
        with torch.no_grad():
            predicted = torch.cat([model(input_ids=valid["token_ids"][i:i + 256],
                                         attention_mask=valid["padding_mask"][i:i + 256]).logits.argmax(-1)
                                   for i in range(0, len(valid["labels"]), 256)])
        accuracy = (predicted == valid["labels"]).float().mean().item()
        if accuracy > best:
            best, best_epoch = accuracy, epoch
        elif epoch - best_epoch >= args.patience:
            break
    return round(100 * best, 2), best_epoch


def sst2_arrays(data):
    """{"sst2_train": {"token_ids", "padding_mask", "labels"}, "sst2_valid": ...} of the .npz, as torch tensors."""
    import torch

    return {name: {key: torch.from_numpy(data[f"{name}_{key}"].astype("int64"))
                   for key in ("token_ids", "padding_mask", "labels")} for name in SST2_FILES}


def train(args):
    import torch

    torch.set_num_threads(args.threads)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = np.load(args.batches)
    results = {"settings": vars(args), "curve": pretrain(args, data, out) if not (out / "pretrained").exists()
               else json.loads((out / "results.json").read_text())["curve"]}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    sst2 = sst2_arrays(data)
    for start in ("pretrained", "random"):
        scores = [fine_tune(out / start, sst2, seed, args) for seed in range(args.finetune_seeds)]
        accuracies = [accuracy for accuracy, _ in scores]
        results[start] = {"accuracies": accuracies, "best_epochs": [epoch for _, epoch in scores],
                          "mean": round(statistics.mean(accuracies), 2),
                          "stdev": round(statistics.stdev(accuracies), 2) if len(accuracies) > 1 else 0.0}
        print(f"SST-2 from {start}: {results[start]['mean']} ± {results[start]['stdev']} ({accuracies})", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"pretrained - random: {results['pretrained']['mean'] - results['random']['mean']:+.2f}; wrote "
          f"{out / 'results.json'}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    batches = commands.add_parser("batches", help="write a kbert run's batches and SST-2 (a kbert process)")
    add_batch_arguments(batches)
    batches.add_argument("--sst2", required=True, help="a folder of sst2_train.tsv and sst2_valid.tsv")
    fit = commands.add_parser("train", help="pretrain and fine-tune Hugging Face's ALBERT (torch and transformers)")
    fit.add_argument("--batches", required=True, help="a .npz of the batches command")
    fit.add_argument("--config", required=True, help="the kbert run's ALBERT config (JSON of BertConfig fields)")
    fit.add_argument("--out", required=True, help="folder for the two starts and results.json (a rerun that finds "
                                                  "OUT/pretrained fine-tunes only)")
    fit.add_argument("--steps", type=int, help="pretraining steps (default: every training batch once)")
    fit.add_argument("--lr", type=float, default=1e-3)
    fit.add_argument("--warmup-steps", type=int, default=500)
    fit.add_argument("--eval-every", type=int, default=500)
    fit.add_argument("--train-sentences", type=int, default=1000)
    fit.add_argument("--finetune-epochs", type=int, default=6)
    fit.add_argument("--finetune-batch-size", type=int, default=32)
    fit.add_argument("--finetune-lr", type=float, default=1e-3)
    fit.add_argument("--finetune-seeds", type=int, default=3)
    fit.add_argument("--patience", type=int, default=3)
    fit.add_argument("--threads", type=int, default=1)
    fit.add_argument("--seed", type=int, default=0, help="the initial weights")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    (write_batches if args.command == "batches" else train)(args)


if __name__ == "__main__":
    main()
