"""The Hugging Face reference for apps/pretrain.py: masked-LM pretraining from scratch, its own way.

Pretrains `transformers.BertForMaskedLM` at random init on the training text and vocab of
an `apps/pretrain.py` run folder, with Hugging Face's own pieces: `BertTokenizerFast`,
run_mlm.py's grouping (the token stream of all lines cut into blocks of `--seq-len`,
each wrapped in [CLS] ... [SEP]) and `DataCollatorForLanguageModeling` (15% of tokens,
80/10/10). The loss is the MLM cross-entropy over the masked positions (the head runs on
those only, as BERT's own pretraining does); the recipe is kbert's (AdamW, warmup then
linear decay, clipping at 1.0, see `hf_recipe.py`). It prints held-out MLM accuracy (the
run's held-out share of its corpus, masked once with a fixed seed) before, during and after, and
saves a model folder that `hf_sst2_finetune.py --init` fine-tunes. Nothing of kbert's
model, data pipeline or optimizer is used (only its preset shapes), which makes it the independent check on what
pretraining on this corpus can buy. Runs on torch only (TensorFlow is never imported).

    python benchmarks/hf_pretrain.py --run-dir saved_models/gutenberg_mini_random \\
        --out saved_models/hf_gutenberg_mini_mlm --steps 3500 --batch-size 64 --seq-len 64 \\
        --lr 1e-3 --warmup-ratio 0.05 --bfloat16
"""

import argparse
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

os.environ["KERAS_BACKEND"] = "torch"  # kbert.config imports keras; keep the process torch-only

import torch  # noqa: E402
import transformers  # noqa: E402

from hf_recipe import HfTrainer  # noqa: E402
from kbert.config import PRESETS  # noqa: E402
from kbert.data.pretraining.instances import read_documents, run_corpus  # noqa: E402


def hf_bert_config(config, vocabulary_size):
    """A `transformers.BertConfig` of a kbert `BertConfig`'s shape."""
    return transformers.BertConfig(vocab_size=vocabulary_size, hidden_size=config.hidden_dim,
                                   num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads,
                                   intermediate_size=config.intermediate_dim,
                                   max_position_embeddings=config.max_sequence_length)


def token_blocks(documents, tokenizer, seq_len):
    """run_mlm.py's `group_texts`: every sentence's tokens end to end, cut into [CLS] block [SEP] rows."""
    lines = [sentence for document in documents for sentence in document]
    stream = [token for ids in tokenizer(lines, add_special_tokens=False)["input_ids"] for token in ids]
    body = seq_len - 2
    return torch.tensor([[tokenizer.cls_token_id] + stream[start:start + body] + [tokenizer.sep_token_id]
                         for start in range(0, len(stream) - body + 1, body)])


class MaskedPositionsMLM(torch.nn.Module):
    """`BertForMaskedLM` with its prediction head run on the masked positions only."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels, attention_mask=None):
        hidden = self.model.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        masked = labels != -100
        logits = self.model.cls(hidden[masked])
        loss = torch.nn.functional.cross_entropy(logits.float(), labels[masked])
        return SimpleNamespace(loss=loss, correct=int((logits.argmax(-1) == labels[masked]).sum()),
                               count=int(masked.sum()))


def heldout_accuracy(mlm, batches, bfloat16):
    mlm.eval()
    correct = total = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bfloat16):
        for batch in batches:
            out = mlm(batch["input_ids"], batch["labels"])
            correct += out.correct
            total += out.count
    mlm.train()
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True, help="an apps/pretrain.py run folder (vocab.txt, "
                                                         "settings.json: the corpus and its held-out share)")
    parser.add_argument("--out", required=True, help="model folder to write")
    parser.add_argument("--preset", default="bert_mini", choices=sorted(PRESETS), help="kbert's preset of that shape")
    parser.add_argument("--steps", type=int, default=3500)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup-ratio", type=float, default=0.05)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--bfloat16", action="store_true", help="bfloat16 autocast, float32 weights")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    run_dir = Path(args.run_dir)
    tokenizer = transformers.BertTokenizerFast(str(run_dir / "vocab.txt"), do_lower_case=True)
    collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    paths, holdout = run_corpus(run_dir)  # the run's own split of its corpus files
    train = token_blocks(read_documents(paths, holdout), tokenizer, args.seq_len)
    heldout = token_blocks(read_documents(paths, holdout, held_out=True), tokenizer, args.seq_len)
    torch.manual_seed(args.seed + 1)  # the held-out masks: drawn once, the same at every evaluation
    heldout_batches = [collator([{"input_ids": row} for row in heldout[start:start + 128]])
                       for start in range(0, len(heldout), 128)]
    print(f"{len(train)} training blocks and {len(heldout)} held-out blocks of {args.seq_len} tokens; "
          f"{args.steps} steps are {args.steps * args.batch_size / len(train):.1f} passes", flush=True)

    torch.manual_seed(args.seed)
    mlm = MaskedPositionsMLM(transformers.BertForMaskedLM(hf_bert_config(PRESETS[args.preset], len(tokenizer))))
    trainer = HfTrainer(mlm, args.lr, args.steps, warmup_ratio=args.warmup_ratio,
                        compute_dtype="bfloat16" if args.bfloat16 else "float32")
    curve = [{"step": 0, "heldout_mlm_accuracy": heldout_accuracy(mlm, heldout_batches, args.bfloat16)}]
    print(json.dumps(curve[-1]), flush=True)

    generator = torch.Generator().manual_seed(args.seed)
    order, losses, start = torch.tensor([], dtype=torch.long), [], time.perf_counter()
    for step in range(1, args.steps + 1):
        if len(order) < args.batch_size:
            order = torch.cat([order, torch.randperm(len(train), generator=generator)])
        rows, order = order[:args.batch_size], order[args.batch_size:]
        batch = collator([{"input_ids": row} for row in train[rows]])
        losses.append(trainer.step(input_ids=batch["input_ids"], labels=batch["labels"]))
        if step % args.eval_every == 0 or step == args.steps:
            curve.append({"step": step, "train_loss": round(sum(losses) / len(losses), 4),
                          "heldout_mlm_accuracy": heldout_accuracy(mlm, heldout_batches, args.bfloat16),
                          "seconds": round(time.perf_counter() - start, 1)})
            losses = []
            print(json.dumps(curve[-1]), flush=True)

    mlm.model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    with open(Path(args.out) / "pretraining.json", "w") as f:
        json.dump({"curve": curve, "hyperparameters": vars(args)}, f, indent=2)
    print(f"Saved {args.out} (fine-tune it with hf_sst2_finetune.py --init {args.out})")


if __name__ == "__main__":
    main()
