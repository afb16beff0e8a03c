"""Long documents: a classifier that reads all windows of a review against the same classifier reading its first.

all-MiniLM-L6-v2 is fine-tuned once on IMDB reviews (`../shared/data/imdb/train.tsv` less a seeded 10% held out;
`--train` of them, 128 tokens, their first windows, 1 epoch, batches of 32, lr 5e-5: BERT's recipe), then predicts
the held-out reviews that do not fit one window (`--eval` of them): from the first 128 tokens (what a classifier
without windows reads), and from all windows (`doc_stride` 64) combined by the mean, or the max, of their logits.
Same weights, same reviews: the difference is what the windows read. With `--train-windows all` the model trains on
every window of a review (each with the review's label) instead, at the cost of more rows.

Then (`--export-check`, default 20 documents) the model reading all windows is exported as text.tflite in a
TensorFlow process, and its labels and probabilities are compared with Keras's on documents of 2,000 words or more
(held-out reviews of one label joined).

    python benchmarks/long_documents_benchmark.py                      # KERAS_BACKEND=jax by default
    python benchmarks/long_documents_benchmark.py --train 4000 --eval 1000 --train-windows all
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=2000, help="training reviews (a seeded sample)")
    parser.add_argument("--eval", type=int, default=500, help="held-out reviews longer than one window")
    parser.add_argument("--doc-stride", type=int, default=64)
    parser.add_argument("--train-windows", choices=("first", "all"), default="first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--export-check", type=int, default=20, help="2,000-word documents to compare (0: none)")
    parser.add_argument("--export-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export_child:
        return export_child(args.export_child)

    import keras
    import numpy as np

    from kbert import BertClassifier
    from kbert.data import read_sentence_tsv
    from kbert.paths import data_dir
    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert_core.cpu import describe_cpu

    keras.utils.set_random_seed(args.seed)
    reviews = read_sentence_tsv(data_dir() / "imdb" / "train.tsv")
    train, valid = reviews.split(0.1, args.seed)
    train = train.shuffled(args.seed, args.train)
    model = BertClassifier.from_preset("all_minilm_l6_v2", num_classes=2, label_names=reviews.label_names,
                                       sequence_length=128)
    tokenizer = model.preprocessor.tokenizer
    windows = BertTextClassifierPreprocessor(tokenizer, 128, doc_stride=args.doc_stride,
                                             train_windows=args.train_windows)
    if args.train_windows == "all":
        model.preprocessor = windows
    model.compile(learning_rate=5e-5)
    start = time.perf_counter()
    model.fit(train.texts, train.labels, batch_size=32, epochs=1, shuffle_seed=args.seed, verbose=0)
    seconds = time.perf_counter() - start
    lengths = np.array([(ids != 0).sum() for ids in tokenizer(valid.texts, max_length=2**20, padding="longest")
                        ["token_ids"]])
    long = valid.take(np.flatnonzero(lengths > 128)[: args.eval])
    print(f"IMDB: {len(train)} training reviews ({args.train_windows} windows, {seconds:.0f} s on "
          f"{keras.config.backend()}); {len(long)} held-out reviews over 128 tokens (median "
          f"{int(np.median(lengths[lengths > 128]))} tokens); CPU: {describe_cpu()}")
    results = {}
    for name, preprocessor, pooling in (("first window", BertTextClassifierPreprocessor(tokenizer, 128), "mean"),
                                        ("all windows, mean", windows, "mean"), ("all windows, max", windows, "max")):
        model.preprocessor, model.window_pooling = preprocessor, pooling
        start = time.perf_counter()
        predicted = model.predict(long.texts, batch_size=64, verbose=0).argmax(-1)
        results[name] = float(np.mean(predicted == long.labels))
        print(f"  {name:18} accuracy {100 * results[name]:.2f}%  ({time.perf_counter() - start:.0f} s)")
    print(f"all windows (mean) - first window: {100 * (results['all windows, mean'] - results['first window']):+.2f} "
          "points")
    if args.export_check:
        model.preprocessor, model.window_pooling = windows, "mean"
        documents, words = [], []
        for text, label in zip(valid.texts, valid.labels):
            if label == 0:  # negative reviews joined into documents of 2,000 words or more
                words += text.split()
                if len(words) >= 2000:
                    documents.append(" ".join(words))
                    words = []
            if len(documents) == args.export_check:
                break
        folder = tempfile.mkdtemp()
        model.save(os.path.join(folder, "model.keras"))
        with open(os.path.join(folder, "documents.json"), "w") as file:
            json.dump(documents, file)
        done = subprocess.run([sys.executable, __file__, "--export-child", folder],
                              env={**os.environ, "KERAS_BACKEND": "tensorflow"}, capture_output=True, text=True)
        print(done.stdout.strip() or done.stderr[-3000:])


def export_child(folder):
    """In a TensorFlow process: text.tflite of the saved model against its Keras predictions on the documents."""
    import numpy as np

    import kbert  # noqa: F401 (registers the model's classes)
    from kbert.export import export_tflite, load_exportable
    from kbert.export.tflite import interpreter

    with open(os.path.join(folder, "documents.json")) as file:
        documents = json.load(file)
    model, tokenizer, spec = load_exportable(os.path.join(folder, "model.keras"))
    export_tflite(model, tokenizer, spec, os.path.join(folder, "tflite"))
    expected = model.predict(documents, batch_size=64, verbose=0)
    lite = interpreter(os.path.join(folder, "tflite", "text.tflite")).get_signature_runner()
    out = lite(texts=np.array(documents, dtype=object))
    words = [len(document.split()) for document in documents]
    print(f"text.tflite (windows, mean) on {len(documents)} documents of {min(words)} to {max(words)} words "
          f"({out['windows'].min()} to {out['windows'].max()} windows, truncated {int(out['truncated'].sum())}): "
          f"same labels {int((out['probabilities'].argmax(-1) == expected.argmax(-1)).sum())}/{len(documents)}, "
          f"largest probability difference {np.abs(out['probabilities'] - expected).max():.2e}")


if __name__ == "__main__":
    main()
