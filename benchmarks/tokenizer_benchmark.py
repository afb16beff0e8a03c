"""Sentences per second of kbert's BertTokenizer against Hugging Face `tokenizers`, same run.

Both tokenize, truncate and pad to --max-length a batch of real sentences (SST-2, STS-B, SNLI,
SQuAD questions and CoNLL sentences from kbert.paths.data_dir(), or embedded samples if that
folder is missing) and return character offsets; Hugging Face runs `encode_batch` (parallel).
A third line maps the task API's `BertTextClassifierPreprocessor` over a `tf.data` pipeline
of the same sentences in batches of 256 (no offsets; each batch padded to its longest row),
as `BertClassifier.fit` does with a dataset of strings.

    python benchmarks/tokenizer_benchmark.py --sentences 20000
"""

import argparse
import json
import time

import tokenizers

import tensorflow as tf

from kbert.paths import data_dir, minilm_dir
from kbert.tasks import BertTextClassifierPreprocessor
from kbert.text import BertTokenizer

SAMPLES = [
    "a gorgeous , witty , seductive movie .",
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
    "What is the capital of the Schweizerische Eidgenossenschaft?",
    "EU rejects German call to boycott British lamb .",
    "A man is playing a flute.",
    "Zürich's café served crème brûlée — naïvely priced at 12,50 €!",
]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20000, help="batch size")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the best counts")
    return parser.parse_args()


def real_sentences(count):
    """Up to `count` sentences, round-robin over the data sets (samples if none is on disk)."""
    root = data_dir()
    sources = []
    for name, columns in [("sst2/train.tsv", [0]), ("stsb/train.tsv", [0, 1]),
                          ("snli/train.tsv", [0, 1])]:
        if (root / name).is_file():
            rows = (root / name).read_text("utf-8").split("\n")[1:]
            sources.append([r.split("\t")[c] for r in rows if r for c in columns])
    if (root / "squad/train-v1.1.json").is_file():
        squad = json.loads((root / "squad/train-v1.1.json").read_text("utf-8"))
        sources.append([q["question"] for article in squad["data"]
                        for paragraph in article["paragraphs"] for q in paragraph["qas"]])
    if (root / "conll2003/train.txt").is_file():
        blocks = (root / "conll2003/train.txt").read_text("utf-8").split("\n\n")
        sources.append([" ".join(line.split(" ")[0] for line in b.split("\n") if line)
                        for b in blocks if b.strip()])
    sources = sources or [SAMPLES]
    mixed = [s for group in zip(*sources) for s in group] + sum(sources, [])
    return (mixed * (count // len(mixed) + 1))[:count]


def best_seconds(run, repeats):
    run()  # warm-up: graph tracing, thread pools
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    args = parse_args()
    texts = real_sentences(args.sentences)
    kbert_tokenizer = BertTokenizer.from_hf(minilm_dir())
    hf_tokenizer = tokenizers.Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    hf_tokenizer.enable_truncation(args.max_length)
    hf_tokenizer.enable_padding(length=args.max_length)
    kbert_seconds = best_seconds(
        lambda: kbert_tokenizer(texts, max_length=args.max_length, return_offsets=True),
        args.repeats)
    hf_seconds = best_seconds(lambda: hf_tokenizer.encode_batch(texts), args.repeats)
    preprocessor = BertTextClassifierPreprocessor(kbert_tokenizer, sequence_length=args.max_length)
    pipeline = tf.data.Dataset.from_tensor_slices(texts).batch(256).map(
        preprocessor, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    pipeline_seconds = best_seconds(lambda: [None for _ in pipeline], args.repeats)
    print(f"{len(texts)} sentences, max_length {args.max_length}, with offsets")
    print(f"kbert BertTokenizer:        {len(texts) / kbert_seconds:10.0f} sentences/s")
    print(f"HF tokenizers encode_batch: {len(texts) / hf_seconds:10.0f} sentences/s")
    print(f"ratio kbert / HF:           {hf_seconds / kbert_seconds:10.2f}")
    print(f"kbert preprocessor, tf.data:{len(texts) / pipeline_seconds:10.0f} sentences/s "
          f"({hf_seconds / pipeline_seconds:.2f}x HF)")


if __name__ == "__main__":
    main()
