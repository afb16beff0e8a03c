"""An independent reference for kbert's ELECTRA pretraining at small compute: Hugging Face's ELECTRA classes trained
with the paper's loss on the very batches a kbert run read, so that whether the discriminator has left its constant
answer ("original" everywhere) after N steps is seen in two implementations.

    # 1. the batches of a kbert pretraining run (a kbert process: its tf.data pipeline, seed and held-out split)
    KBERT_DATA_DIR=../shared/data .venv/bin/python benchmarks/electra_reference.py batches \\
        --vocab saved_models/pretraining_objectives/pretrain/vocabulary/vocab.txt --steps 1410 --out electra_batches.npz
    # 2. Hugging Face's ElectraForMaskedLM (generator) and ElectraForPreTraining (discriminator) on them, one thread
    .venv/bin/python benchmarks/electra_reference.py train --batches electra_batches.npz --json electra_reference.json

The models are sized as kbert's `bert_mini` discriminator (4 layers, 256 wide, 4 heads) and its generator a quarter
as wide (`kbert.tasks.electra_pretrainer.generator_dimensions`: 64 wide, 1 head), the generator on the
discriminator's embeddings (one set, projected to 64); the loss is the generator's masked-LM cross-entropy plus 50
times the discriminator's sigmoid cross-entropy over every non-padding token, a sample equal to the original counting
as original (Clark et al. 2020; google-research/electra). AdamW as kbert's `bert_adamw` (lr 5e-4, 200 warmup steps,
linear decay to 0 at the last step, weight decay 0.01 off biases and LayerNorms, eps 1e-6, global clip 1.0).
Reported every --eval-every steps on the held-out batches: the discriminator's accuracy and loss, the accuracy of
the constant answer "original", the share of replaced tokens it finds (its recall: 0 for the constant answer) and the
ROC AUC of its logits (0.5: it ranks replaced tokens no higher than original ones; kbert's `rtd_auc`).
"""

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DISCRIMINATOR_WEIGHT = 50.0
X_KEYS = ("token_ids", "segment_ids", "padding_mask", "mask_positions")


def pretraining_arrays(args):
    """`(arrays, tokenizer)`: the held-out batches and the first `args.steps` training batches of a kbert pretraining
    run of objective masked LM (as `kbert.recipes.pretrain` streams them; for ELECTRA too) on `args.corpus` with the
    tokenizer `args.vocab` (a vocab.txt, or a tokenizer folder of any kind): `train_KEY` (steps, batch, ...) and
    `held_out_KEY`, KEY each of `X_KEYS`, `mask_ids`, `mask_weights`."""
    sys.path.insert(0, str(ROOT))
    from kbert.data.pretraining.dataset import held_out_then_training
    from kbert.recipes.pretrain import read_tokenizer

    data_dir = pathlib.Path(os.environ.get("KBERT_DATA_DIR", ROOT.parent / "shared" / "data"))
    corpus = args.corpus or data_dir / "imdb" / "unsup.txt"
    options = dict(tokenizer=read_tokenizer(args.vocab), batch_size=args.batch_size, max_seq_length=args.seq_len,
                   objective="mlm", mask_unit="token", span_p=0.2, max_span=10, span_boundaries=False,
                   holdout=args.holdout_fraction)
    held_out_options = dict(held_out=True, masking="static", duplication_factor=1, repeat=False, shuffle_buffer=0,
                            seed=1, **options)  # as kbert.recipes.pretrain's
    stream = held_out_then_training([corpus], held_out_options, seed=args.seed, **options)
    held_out = next(stream)
    train = [next(stream) for _ in range(args.steps)]
    arrays = {}
    for name, batches in (("held_out", held_out), ("train", train)):  # fit's (x, y, sample weights) each
        columns = [{**x, "mask_ids": y["mlm"], "mask_weights": weights["mlm"]} for x, y, weights in batches]
        for key in (*X_KEYS, "mask_ids", "mask_weights"):
            arrays[f"{name}_{key}"] = np.stack([batch[key] for batch in columns])
    return arrays, options["tokenizer"]


def write_batches(args):
    """`pretraining_arrays` as one .npz, with the tokenizer's `vocabulary_size`."""
    arrays, tokenizer = pretraining_arrays(args)
    np.savez_compressed(args.out, vocabulary_size=tokenizer.vocabulary_size, **arrays)
    print(f"Wrote {args.out}: {args.steps} training and {len(arrays['held_out_token_ids'])} held-out batches of "
          f"{args.batch_size} x {args.seq_len}.")


def add_batch_arguments(parser):
    """The options of a kbert run's batches (`pretraining_arrays`)."""
    parser.add_argument("--vocab", required=True, help="the run's vocab.txt, or its tokenizer folder (any kind)")
    parser.add_argument("--corpus", help="the run's pretraining text (default: $KBERT_DATA_DIR/imdb/unsup.txt)")
    parser.add_argument("--steps", type=int, required=True, help="training batches to write")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--holdout-fraction", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (its data stream)")
    parser.add_argument("--out", required=True, help="the .npz to write")


def build(vocabulary_size):
    """(generator, discriminator): Hugging Face's ELECTRA classes, the generator on the discriminator's embeddings."""
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    shared = dict(vocab_size=vocabulary_size, embedding_size=256, num_hidden_layers=4, max_position_embeddings=512,
                  type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12, initializer_range=0.02)
    discriminator = ElectraForPreTraining(ElectraConfig(hidden_size=256, num_attention_heads=4,
                                                        intermediate_size=1024, **shared))
    generator = ElectraForMaskedLM(ElectraConfig(hidden_size=64, num_attention_heads=1, intermediate_size=256,
                                                 **shared))
    generator.electra.embeddings = discriminator.electra.embeddings  # one set of embeddings (ELECTRA's sharing)
    generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
    return generator, discriminator


def step_outputs(generator, discriminator, batch, uniform):
    """The generator's logits at the masked positions, the discriminator's logits and its labels (replaced or not);
    `uniform`: noise in [0, 1) of the logits' shape, for the Gumbel-max samples."""
    import torch

    token_ids, segment_ids, mask, positions = (batch[key] for key in X_KEYS)
    hidden = generator(input_ids=token_ids, token_type_ids=segment_ids, attention_mask=mask).logits
    logits = torch.gather(hidden, 1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
    gumbel = -torch.log(-torch.log(uniform + 1e-9) + 1e-9)
    samples = (logits.detach() + gumbel).argmax(-1)
    slots = batch["mask_weights"] > 0  # padding slots point at position 0 ([CLS]) and replace nothing
    original = token_ids.scatter(1, positions, torch.where(slots, batch["mask_ids"], token_ids.gather(1, positions)))
    corrupted = original.scatter(1, positions, torch.where(slots, samples, original.gather(1, positions)))
    labels = (corrupted != original).float()
    rtd = discriminator(input_ids=corrupted, token_type_ids=segment_ids, attention_mask=mask).logits
    return logits, rtd, labels


def losses(logits, rtd, labels, batch):
    import torch

    weights = batch["mask_weights"].float()
    token_losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch["mask_ids"], reduction="none")
    mlm = (token_losses * weights).sum() / weights.sum().clamp(min=1.0)
    mask = batch["padding_mask"].float()
    bce = torch.nn.functional.binary_cross_entropy_with_logits(rtd, labels, reduction="none")
    return mlm, (bce * mask).sum() / mask.sum()


def train(args):
    import torch
    from hf_recipe import bert_adamw

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    data = np.load(args.batches)
    batches = {name: {key: torch.from_numpy(data[f"{name}_{key}"].astype("int64"))
                      for key in (*X_KEYS, "mask_ids", "mask_weights")} for name in ("train", "held_out")}
    steps = args.steps or len(batches["train"]["token_ids"])
    generator, discriminator = build(int(data["vocabulary_size"]))
    parameters = {id(p): (name, p) for model in (discriminator, generator) for name, p in model.named_parameters()}
    optimizer, schedule = bert_adamw(parameters.values(), args.lr, args.warmup_steps, steps)
    print(f"Hugging Face's ELECTRA (transformers), {steps} steps, {args.threads} thread(s); discriminator "
          f"{sum(p.numel() for p in discriminator.parameters()):,} parameters", flush=True)
    rows, start = [evaluate(generator, discriminator, batches["held_out"], 0)], time.perf_counter()
    print(json.dumps(rows[-1]), flush=True)
    for step in range(steps):
        generator.train(), discriminator.train()
        batch = {key: value[step] for key, value in batches["train"].items()}
        logits, rtd, labels = step_outputs(generator, discriminator, batch,
                                           torch.rand(*batch["mask_positions"].shape, generator.config.vocab_size))
        mlm, rtd_loss = losses(logits, rtd, labels, batch)
        optimizer.zero_grad()
        (mlm + DISCRIMINATOR_WEIGHT * rtd_loss).backward()
        torch.nn.utils.clip_grad_norm_([p for _, p in parameters.values()], 1.0)
        optimizer.step()
        schedule.step()
        if (step + 1) % args.eval_every == 0 or step + 1 == steps:
            rows.append(evaluate(generator, discriminator, batches["held_out"], step + 1))
            rows[-1]["seconds"] = round(time.perf_counter() - start, 1)
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"settings": vars(args), "steps": steps, "curve": rows},
                                                      indent=2) + "\n")
        print(f"Wrote {args.json}")


def evaluate(generator, discriminator, held_out, step):
    """Held-out figures after `step` steps: the generator's masked-LM accuracy, the discriminator's accuracy and loss
    over non-padding tokens, the constant answer's accuracy, the share of replaced tokens it calls replaced, and the
    ROC AUC of its logits (scikit-learn's)."""
    import torch
    from sklearn.metrics import roc_auc_score

    generator.eval(), discriminator.eval()
    totals = dict.fromkeys(("mlm_right", "mlm_count", "right", "tokens", "original", "replaced", "found", "loss"), 0.0)
    noise = torch.Generator().manual_seed(1)
    scores, replaced = [], []
    with torch.no_grad():
        for index in range(len(held_out["token_ids"])):
            batch = {key: value[index] for key, value in held_out.items()}
            logits, rtd, labels = step_outputs(generator, discriminator, batch, torch.rand(
                *batch["mask_positions"].shape, generator.config.vocab_size, generator=noise))
            mask, weights = batch["padding_mask"].bool(), batch["mask_weights"] > 0
            called = rtd > 0
            totals["mlm_right"] += ((logits.argmax(-1) == batch["mask_ids"]) & weights).sum().item()
            totals["mlm_count"] += weights.sum().item()
            totals["right"] += ((called == labels.bool()) & mask).sum().item()
            totals["tokens"] += mask.sum().item()
            totals["original"] += ((labels == 0) & mask).sum().item()
            totals["replaced"] += ((labels == 1) & mask).sum().item()
            totals["found"] += (called & (labels == 1) & mask).sum().item()
            totals["loss"] += losses(logits, rtd, labels, batch)[1].item() * mask.sum().item()
            scores.append(rtd[mask].numpy()), replaced.append(labels[mask].numpy() > 0)
    return {"step": step, "mlm_accuracy": round(totals["mlm_right"] / totals["mlm_count"], 4),
            "rtd_accuracy": round(totals["right"] / totals["tokens"], 4),
            "constant_accuracy": round(totals["original"] / totals["tokens"], 4),
            "replaced_found": round(totals["found"] / max(1.0, totals["replaced"]), 4),
            "rtd_loss": round(totals["loss"] / totals["tokens"], 4),
            "rtd_auc": round(float(roc_auc_score(np.concatenate(replaced), np.concatenate(scores))), 4)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    batches = commands.add_parser("batches", help="write a kbert run's batches (a kbert process)")
    add_batch_arguments(batches)
    fit = commands.add_parser("train", help="train Hugging Face's ELECTRA on them (torch and transformers)")
    fit.add_argument("--batches", required=True, help="a .npz of the batches command")
    fit.add_argument("--steps", type=int, help="steps (default: every training batch once)")
    fit.add_argument("--lr", type=float, default=5e-4)
    fit.add_argument("--warmup-steps", type=int, default=200)
    fit.add_argument("--eval-every", type=int, default=200)
    fit.add_argument("--threads", type=int, default=1)
    fit.add_argument("--seed", type=int, default=0, help="the initial weights and the samples")
    fit.add_argument("--json", help="write the curve to this file")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    (write_batches if args.command == "batches" else train)(args)


if __name__ == "__main__":
    main()
