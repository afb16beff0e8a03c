"""The Hugging Face baseline for apps/qa.py: same checkpoint, questions, windows, batches, recipe and steps.

Fine-tunes `transformers.BertForQuestionAnswering` from all-MiniLM-L6-v2 in a plain torch
loop and reports the official SQuAD v1.1 exact match and F1 on the same held-out articles
as `apps/qa.py train` (same seed). The windows are kbert's `SquadWindows` built with Hugging
Face's tokenizer, batched by kbert's `PaddedBatches` in the same seeded order, and the
logits are decoded by the same n-best search, so the two runs differ only in the model
and its training. The loss is Hugging Face's (the mean of the start and end
cross-entropies, as in BERT's run_squad.py); the recipe is BERT's (see `hf_recipe.py`).
Runs on torch only (TensorFlow is never imported).

    python benchmarks/hf_squad_finetune.py --epochs 2 --batch-size 32 --lr 2e-4 --bfloat16
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
from kbert.data.batches.padded import PaddedBatches  # noqa: E402
from kbert.data.readers.squad import read_squad  # noqa: E402
from kbert.data.windows.squad import SquadWindows  # noqa: E402
from kbert.metrics.squad import squad_scores  # noqa: E402
from kbert.paths import data_dir, minilm_dir  # noqa: E402
from kbert.recipes.qa import split_articles  # noqa: E402


class LogitsOf:
    """`predict_on_batch` over a `BertForQuestionAnswering`, the way `PaddedBatches.predict` calls it."""

    def __init__(self, model, bfloat16):
        self.model = model
        self.bfloat16 = bfloat16

    def predict_on_batch(self, inputs):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bfloat16):
            out = self.model(**hf_inputs(inputs))
        return {"start_logits": out.start_logits.float().numpy(), "end_logits": out.end_logits.float().numpy()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(data_dir() / "squad" / "train-v1.1.json"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--max-length", type=int, default=384)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--max-question-length", type=int, default=64)
    parser.add_argument("--validation-articles", type=int, default=10)
    parser.add_argument("--articles", type=int, help="read only the first N articles")
    parser.add_argument("--limit", type=int, help="train on a seeded subset of N questions")
    parser.add_argument("--validation-limit", type=int, help="score a seeded subset of N validation questions")
    parser.add_argument("--bfloat16", action="store_true", help="compute in bfloat16 (torch.autocast), as --mixed-precision")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the figures and predictions to this JSON file")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    examples = read_squad(args.data, articles=slice(0, args.articles) if args.articles else None)
    train, valid, held_out = split_articles(examples, args.validation_articles, args.seed, args.limit,
                                            args.validation_limit, source=args.data)
    tokenizer = HfTokenizer(minilm_dir())
    windowing = {"max_length": args.max_length, "doc_stride": args.doc_stride,
                 "max_question_length": args.max_question_length}
    windows = SquadWindows(tokenizer, train, **windowing, training=True)
    targets = {"start_logits": windows.start_positions, "end_logits": windows.end_positions}
    batches = PaddedBatches(windows.inputs, targets, batch_size=args.batch_size, shuffle=True, seed=args.seed,
                            group_by_length=True)

    model = transformers.BertForQuestionAnswering.from_pretrained(minilm_dir())
    total = len(batches) * args.epochs
    trainer = HfTrainer(model, args.lr, total, compute_dtype="bfloat16" if args.bfloat16 else "float32")
    print(f"Hugging Face: {len(train)} training questions ({len(windows)} windows, {windows.skipped} skipped), "
          f"{len(valid)} validation questions from {len(held_out)} articles, {total} steps", flush=True)

    losses, step_times = [], []
    model.train()
    for epoch in range(args.epochs):
        for index in range(len(batches)):
            start = time.perf_counter()
            inputs, positions = batches[index]
            losses.append(trainer.step(**hf_inputs(inputs),
                                       start_positions=torch.from_numpy(positions["start_logits"]).long(),
                                       end_positions=torch.from_numpy(positions["end_logits"]).long()))
            step_times.append(time.perf_counter() - start)
            if len(losses) % 50 == 0:
                print(f"epoch {epoch + 1} step {index + 1}/{len(batches)}: loss {np.mean(losses[-50:]):.3f}, "
                      f"{np.mean(step_times[-50:]):.2f} s/step", flush=True)
        batches.on_epoch_end()

    model.eval()
    valid_windows = SquadWindows(tokenizer, valid, **windowing)
    logits = PaddedBatches(valid_windows.inputs, batch_size=64).predict(LogitsOf(model, args.bfloat16))
    answers = valid_windows.decode(logits["start_logits"], logits["end_logits"])
    predictions = {e.id: (best[0]["text"] if best else "") for e, best in zip(valid, answers)}
    scores = squad_scores(predictions, {e.id: e.answers for e in valid if e.answers})
    results = {"engine": "hf_torch", "train_questions": len(train), "train_windows": len(windows),
               "validation_questions": len(valid), "held_out_articles": held_out, "steps": total,
               "final_loss": float(np.mean(losses[-50:])), "validation": scores,
               "train_seconds": round(sum(step_times), 1), "seconds_per_step": round(sum(step_times) / total, 3),
               "hyperparameters": vars(args)}
    print(json.dumps(results))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**results, "predictions": predictions}, f, indent=2)


if __name__ == "__main__":
    main()
