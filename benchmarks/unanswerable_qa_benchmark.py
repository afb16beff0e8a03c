"""What `BertQuestionAnswerer(allow_no_answer=True)` buys where some questions have no answer (SQuAD 2.0's task):
all-MiniLM-L6-v2 fine-tuned on SQuAD v1.1 questions of which a third were made unanswerable, without and with
allow_no_answer (the same seed, data and steps), scored on held-out articles by SQuAD 2.0's official rules
(`kbert.metrics.squad.squad_v2_scores`): exact match and F1 over all questions, over those with an answer (HasAns)
and over those without (NoAns); also at the no-answer threshold that maximises F1 on the held-out questions (the
official script's `best_f1`, an upper bound: tuned on what it scores), the model without allow_no_answer decoded as if
it allowed one (its [CLS] score, never trained to mean anything).

    python benchmarks/unanswerable_qa_benchmark.py                  # 6,000 training questions, 1 epoch
    python benchmarks/unanswerable_qa_benchmark.py --questions 12000 --epochs 2

SQuAD v1.1 has no unanswerable questions and SQuAD 2.0 is not in ../shared/data, so they are made as SQuAD 2.0's
distractors are meant to be, on topic: a seeded third of the questions is asked of another paragraph of the same
article that holds none of its answers (compared lower-cased), the rest keep their own. The questions come from
../shared/data/squad/train-v1.1.json (KBERT_DATA_DIR); --validation-articles whole articles are held out. Runs on
$KERAS_BACKEND.
"""

import argparse
import json
import pathlib
import tempfile
import time

import numpy as np

from kbert.paths import data_dir


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="SQuAD v1.1 JSON (default: DATA/squad/train-v1.1.json)")
    parser.add_argument("--init", default="all_minilm_l6_v2", help="what fine-tunes (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=6000, help="training questions (default: %(default)s)")
    parser.add_argument("--unanswerable", type=float, default=1 / 3, help="share made unanswerable (a third)")
    parser.add_argument("--validation-articles", type=int, default=20, help="held out (default: %(default)s)")
    parser.add_argument("--validation", type=int, default=1500, help="held-out questions (default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=1, help="(default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="(default: %(default)s)")
    parser.add_argument("--lr", type=float, default=1e-4, help="peak learning rate (default: %(default)s)")
    parser.add_argument("--max-length", type=int, default=256, help="tokens per window (default: %(default)s)")
    parser.add_argument("--doc-stride", type=int, default=128, help="(default: %(default)s)")
    parser.add_argument("--mixed-precision", action="store_true", help="train in bfloat16")
    parser.add_argument("--seed", type=int, default=0, help="the questions made unanswerable, the split (%(default)s)")
    return parser


def with_unanswerable(squad, share, seed):
    """A SQuAD 2.0 document from a v1.1 one: a seeded `share` of the questions moved to another paragraph of their
    article that holds none of their answers, marked "is_impossible" (a question without such a paragraph stays)."""
    rng = np.random.default_rng(seed)
    data, moved = [], 0
    for article in squad["data"]:
        paragraphs = [{"context": p["context"], "qas": []} for p in article["paragraphs"]]
        for p, paragraph in enumerate(article["paragraphs"]):
            for qa in paragraph["qas"]:
                answers = [a["text"].lower() for a in qa["answers"]]
                others = [o for o in range(len(paragraphs)) if o != p and not any(
                    answer in paragraphs[o]["context"].lower() for answer in answers)]
                if others and rng.random() < share:
                    paragraphs[int(rng.choice(others))]["qas"].append({**qa, "answers": [], "is_impossible": True})
                    moved += 1
                else:
                    paragraphs[p]["qas"].append(qa)
        data.append({"title": article["title"], "paragraphs": paragraphs})
    return {"version": "v2.0", "data": data}, moved


def run(args, data, allow_no_answer):
    """Trains one model on `data`; its SQuAD 2.0 scores on the held-out questions, as `apps/qa.py evaluate` gives
    them (with the best no-answer threshold where the model allows no answer; a model trained without it is also
    scored decoded as if it allowed one: its [CLS] score at the best threshold)."""
    import keras

    from kbert.recipes import qa as recipe
    from kbert.saving import load_run

    out = pathlib.Path(tempfile.mkdtemp()) / "run"
    started = time.perf_counter()
    recipe.train(data, args.init, out, max_length=args.max_length, doc_stride=args.doc_stride,
                 validation_articles=args.validation_articles, limit=args.questions, validation_limit=args.validation,
                 allow_no_answer=allow_no_answer, epochs=args.epochs, batch_size=args.batch_size,
                 learning_rate=args.lr, mixed_precision=args.mixed_precision, seed=args.seed, verbose=0)
    trained = time.perf_counter() - started
    _, held_out = recipe.run_split(out)
    model = load_run(out)
    scores, _ = recipe.evaluate_examples(model, held_out)
    if not allow_no_answer:
        model.set_decoding(allow_no_answer=True)
        decoded, _ = recipe.evaluate_examples(model, held_out)
        scores.update({key: value for key, value in decoded.items() if key.startswith("best_threshold")})
    return {"allow_no_answer": allow_no_answer, "backend": keras.config.backend(), "train_seconds": round(trained, 1),
            "scores": scores}


def main(argv=None):
    args = parser().parse_args(argv)
    source = pathlib.Path(args.data or data_dir() / "squad" / "train-v1.1.json")
    squad, moved = with_unanswerable(json.loads(source.read_text("utf-8")), args.unanswerable, args.seed)
    data = pathlib.Path(tempfile.mkdtemp()) / "squad2.json"
    data.write_text(json.dumps(squad))
    total = sum(len(p["qas"]) for a in squad["data"] for p in a["paragraphs"])
    print(f"{source}: {total} questions, {moved} made unanswerable ({moved / total:.1%})")
    for allow_no_answer in (False, True):
        result = run(args, data, allow_no_answer)
        print(json.dumps(result))
        s = result["scores"]
        print(f"allow_no_answer={allow_no_answer}: EM {s['exact_match']:.2f} F1 {s['f1']:.2f} (HasAns F1 "
              f"{s.get('HasAns_f1', 0):.2f} on {s['HasAns_total']}, NoAns {s.get('NoAns_exact', 0):.2f} on "
              f"{s['NoAns_total']}); at the best threshold, {s['best_threshold']:.3f}: F1 "
              f"{s['best_threshold_f1']:.2f}, EM {s['best_threshold_exact_match']:.2f}; trained in "
              f"{result['train_seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
