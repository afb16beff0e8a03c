"""Training sentence embeddings: kbert's `BertSentenceEncoder.fit` beside sentence-transformers' own trainer.

Two jobs, each engine in a process of its own, one after another (the figures share a run):

- `stsb` (issue 42's first aim): all-MiniLM-L6-v2 fine-tuned on STS-B's training pairs with the cosine
  objective (sentence-transformers' `CosineSimilarityLoss`, scores / 5), one epoch, batches of 16, AdamW at
  2e-5 with 10% warmup then linear decay, weight decay 0.01, clipping at 1.0, 128 tokens. The pairs are
  `../shared/data/stsb/train.tsv` less a seeded 10% held out for validation (the same split for every engine);
  the score is the Spearman correlation of cosine similarity with the gold scores on it, before (zero-shot) and
  after training, and the training time. Engines: `kbert` (on `--backend`) and `sentence_transformers`
  (`SentenceTransformerTrainer`, torch).
- `snli` (its second aim): a small backbone (`--init`, random weights by default) trained with in-batch negatives
  (`MultipleNegativesRankingLoss`, scale 20) on SNLI's entailment pairs (`--epochs` passes), batches of 64, AdamW
  at 1e-4; scored on the same STS-B validation pairs against the same backbone untrained. kbert only.

    python benchmarks/embedding_benchmark.py                       # stsb: kbert (JAX) and sentence-transformers
    python benchmarks/embedding_benchmark.py --backend tensorflow --engines kbert
    python benchmarks/embedding_benchmark.py --job snli --init bert_mini --epochs 5
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stsb_split(seed=0, fraction=0.1):
    """(train, validation) STS-B pairs: lists of (sentence1, sentence2, score out of 5)."""
    from kbert.data import read_sentence_tsv
    from kbert.paths import data_dir

    pairs = read_sentence_tsv(data_dir() / "stsb" / "train.tsv", 2, regression=True)
    train, valid = pairs.split(fraction, seed)
    return [list(zip(part.texts, part.pairs, part.labels.tolist())) for part in (train, valid)]


def spearman_of(similarity, rows):
    from scipy.stats import spearmanr

    return float(spearmanr(similarity, [score for _, _, score in rows]).statistic)


def run_kbert(job, init, pairs, batch_size, seed, epochs):
    import keras
    import numpy as np

    from kbert import BertSentenceEncoder
    from kbert.optimizers import bert_adamw

    keras.utils.set_random_seed(seed)
    train, valid = stsb_split(seed)
    if job == "snli":
        from kbert.recipes.embedding import _read_pairs
        from kbert.paths import data_dir

        snli = _read_pairs(data_dir() / "snli" / "train.tsv", "ranking", "entailment").shuffled(seed, pairs)
        columns, labels = (snli.texts, snli.pairs), None
        model = BertSentenceEncoder.from_preset(init, objective="ranking", sequence_length=128)
    else:
        train = train[:pairs] if pairs else train
        columns, labels = ([a for a, _, _ in train], [b for _, b, _ in train]), np.array([s for _, _, s in train])
        model = BertSentenceEncoder.from_preset(init, score_range=(0, 5), sequence_length=128)
    model.compile(optimizer=bert_adamw(2e-5 if job == "stsb" else 1e-4, total_steps=None))
    score = lambda: spearman_of(model.similarity([a for a, _, _ in valid], [b for _, b, _ in valid], 64),  # noqa
                                valid)
    before = score()
    start = time.perf_counter()
    history = model.fit(columns, labels, batch_size=batch_size, epochs=epochs, shuffle_seed=seed, verbose=0)
    seconds = time.perf_counter() - start
    return {"engine": f"kbert ({keras.config.backend()})", "before": before, "after": score(), "seconds": seconds,
            "pairs": len(columns[0]), "epochs": epochs, "loss": history.history["loss"][-1]}


def run_sentence_transformers(pairs, batch_size, seed):
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    from kbert.paths import minilm_dir

    torch.manual_seed(seed)
    train, valid = stsb_split(seed)
    train = train[:pairs] if pairs else train
    model = SentenceTransformer(str(minilm_dir()), device="cpu")
    model.max_seq_length = 128

    def score():
        embeddings = [model.encode([row[i] for row in valid], batch_size=64, normalize_embeddings=True)
                      for i in (0, 1)]
        return spearman_of((embeddings[0] * embeddings[1]).sum(-1), valid)

    before = score()
    data = Dataset.from_dict({"sentence1": [a for a, _, _ in train], "sentence2": [b for _, b, _ in train],
                              "score": [s / 5 for _, _, s in train]})
    arguments = SentenceTransformerTrainingArguments(
        output_dir=os.path.join(os.environ.get("TMPDIR", "/tmp"), "st_benchmark"), num_train_epochs=1,
        per_device_train_batch_size=batch_size, learning_rate=2e-5, warmup_ratio=0.1, weight_decay=0.01,
        max_grad_norm=1.0, lr_scheduler_type="linear", seed=seed, save_strategy="no", report_to="none",
        logging_strategy="no", use_cpu=True, disable_tqdm=True)
    trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=data,
                                         loss=CosineSimilarityLoss(model))
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    return {"engine": "sentence-transformers (torch)", "before": before, "after": score(), "seconds": seconds,
            "pairs": len(train), "epochs": 1, "loss": None}


def child(arguments):
    sys.path.insert(0, ROOT)
    options = json.loads(arguments)
    if options["engine"] == "sentence_transformers":
        result = run_sentence_transformers(options["pairs"], options["batch_size"], options["seed"])
    else:
        result = run_kbert(options["job"], options["init"], options["pairs"], options["batch_size"], options["seed"],
                           options["epochs"])
    print("RESULT " + json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", choices=("stsb", "snli"), default="stsb")
    parser.add_argument("--engines", nargs="+", choices=("kbert", "sentence_transformers"),
                        default=["kbert", "sentence_transformers"])
    parser.add_argument("--backend", default="jax", help="kbert's Keras backend")
    parser.add_argument("--init", help="stsb: all_minilm_l6_v2 (default); snli: bert_mini (default) or a folder")
    parser.add_argument("--pairs", type=int, help="train on the first (stsb) or a seeded sample (snli) of this many")
    parser.add_argument("--batch-size", type=int, help="default 16 (stsb), 64 (snli)")
    parser.add_argument("--epochs", type=int, default=1, help="snli: passes over the pairs (stsb: 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    init = args.init or ("all_minilm_l6_v2" if args.job == "stsb" else "bert_mini")
    batch_size = args.batch_size or (16 if args.job == "stsb" else 64)
    engines = args.engines if args.job == "stsb" else ["kbert"]
    from kbert_core.cpu import describe_cpu

    print(f"embedding benchmark, job {args.job}, init {init}, batch {batch_size}, "
          f"{1 if args.job == 'stsb' else args.epochs} epoch(s); CPU: {describe_cpu()}")
    results = []
    for engine in engines:
        options = {"engine": engine, "job": args.job, "init": init, "pairs": args.pairs, "batch_size": batch_size,
                   "seed": args.seed, "epochs": 1 if args.job == "stsb" else args.epochs}
        env = {**os.environ, "KERAS_BACKEND": "torch" if engine == "sentence_transformers" else args.backend}
        done = subprocess.run([sys.executable, __file__, "--child", json.dumps(options)], env=env,
                              capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            sys.exit(f"{engine} failed:\n{done.stderr[-3000:]}")
        results.append(json.loads(lines[-1][len("RESULT "):]))
    print(f"{'engine':32} {'pairs':>7} {'Spearman before':>16} {'after':>8} {'train s':>8} {'pairs/s':>8}")
    for result in results:
        print(f"{result['engine']:32} {result['pairs']:7d} {result['before']:16.4f} {result['after']:8.4f} "
              f"{result['seconds']:8.1f} {result['pairs'] * result['epochs'] / result['seconds']:8.1f}")
    if len(results) == 2:
        kbert, reference = results
        print(f"kbert - sentence-transformers: Spearman {100 * (kbert['after'] - reference['after']):+.2f} points; "
              f"training speed {reference['seconds'] / kbert['seconds']:.2f}x")


if __name__ == "__main__":
    main()
