"""Named-entity recognition (CoNLL-2003 style, `token TAG` per line) with BertTokenClassifier.

    python apps/ner.py train --data ../shared/data/conll2003/train.txt \\
        --valid ../shared/data/conll2003/valid.txt --out saved_models/conll
    python apps/ner.py evaluate --model saved_models/conll --data ../shared/data/conll2003/valid.txt
    python apps/ner.py predict --model saved_models/conll "Angela Merkel visited Paris."
    echo "Angela Merkel visited Paris." | python apps/ner.py predict --model saved_models/conll --json

Tags may be BIO or IOB1 (converted to BIO on reading). Sentences longer than --max-length
tokens are cut into windows at word boundaries, so every word gets a prediction. Scores
are entity-level precision / recall / F1 as conlleval counts them (micro and per type).
"""

import argparse
import json
import sys
import time

import keras
import numpy as np

from kbert.checkpoints import load_backbone
from kbert.data.conll import read_conll
from kbert.data.ner_windows import NerWindows
from kbert.data.padded_batches import PaddedBatches
from kbert.data.token_rows import word_spans_of
from kbert.metrics.entity_f1 import entity_scores, format_entity_scores, get_entities
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from kbert.training import bert_adamw, write_evaluation, write_run_folder
from kbert.training.sentence_task import load_run


def train(data, init, out, valid=None, epochs=3, batch_size=32, learning_rate=5e-5, max_length=128,
          validation_fraction=0.1, limit=None, patience=1, seed=0, verbose="auto"):
    """Fine-tunes a `BertTokenClassifier` and writes the run folder `out`.

    BERT's recipe: `bert_adamw` (10% warmup, linear decay), early stopping on the
    validation entity F1, restoring the best epoch. Without `valid`, a seeded
    `validation_fraction` of the sentences is held out. The folder gets `model.keras`, the
    tokenizer, `metrics.json` and `curves.png`, all at once at the end.

    Returns: the metrics dict written to `metrics.json`.
    """
    keras.utils.set_random_seed(seed)
    train_sentences = read_conll(data)
    label_names = train_sentences.label_names()
    if valid:
        valid_sentences = read_conll(valid, label_names=label_names)
    else:
        order = np.random.default_rng(seed).permutation(len(train_sentences))
        size = max(1, round(validation_fraction * len(order)))
        valid_sentences = train_sentences.take(np.sort(order[:size]))
        train_sentences = train_sentences.take(np.sort(order[size:]))
    if limit:
        order = np.random.default_rng(seed).permutation(len(train_sentences))
        train_sentences = train_sentences.take(order[:limit])
    backbone, tokenizer = load_backbone(init)
    max_length = min(max_length, backbone.max_sequence_length)
    model = BertTokenClassifier(backbone, label_names)
    ids = {name: i for i, name in enumerate(label_names)}
    windows = _windows(tokenizer, train_sentences, max_length, ids)
    print(f"ner: {len(train_sentences)} training sentences ({len(windows)} windows), "
          f"{len(valid_sentences)} validation sentences; labels {label_names}.")
    batches = PaddedBatches(windows.inputs, windows.labels, windows.sample_weight, batch_size,
                            shuffle=True, seed=seed, group_by_length=True)
    model.compile(optimizer=bert_adamw(learning_rate, len(batches) * epochs),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    scorer = EntityF1Callback(tokenizer, valid_sentences, max_length, batch_size)
    stopping = keras.callbacks.EarlyStopping("val_entity_f1", mode="max", patience=patience,
                                             restore_best_weights=True)
    start = time.perf_counter()
    history = model.fit(batches, epochs=epochs, callbacks=[scorer, stopping], verbose=verbose)
    seconds = time.perf_counter() - start
    validation = scorer.best  # the epoch EarlyStopping restored
    metrics = {
        "task": "ner", "backend": keras.config.backend(), "init": str(init), "data": str(data),
        "valid": str(valid) if valid else f"{validation_fraction:.0%} of data (seed {seed})",
        "train_sentences": len(train_sentences), "validation_sentences": len(valid_sentences),
        "label_names": label_names, "max_length": max_length,
        "hyperparameters": {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate,
                            "patience": patience, "seed": seed, "limit": limit},
        "steps": int(model.optimizer.iterations), "train_seconds": round(seconds, 1),
        "history": {k: [float(v) for v in values] for k, values in history.history.items()},
        "validation": validation,
    }
    curves = {k: v for k, v in history.history.items() if k != "val_entity_f1"}
    write_run_folder(out, model, tokenizer, metrics, curves | {"entity_f1": history.history["val_entity_f1"]},
                     title=f"ner from {init} (entity_f1: validation)")
    print(format_entity_scores(validation, f"validation ({len(valid_sentences)} sentences)"))
    return metrics


class EntityF1Callback(keras.callbacks.Callback):
    """Adds `val_entity_f1` (conlleval micro F1 on `sentences`) to the logs after each epoch.

    `best` keeps the full scores of the best epoch so far.
    """

    def __init__(self, tokenizer, sentences, max_length, batch_size):
        super().__init__()
        self.tokenizer, self.sentences = tokenizer, sentences
        self.max_length, self.batch_size = max_length, batch_size
        self.best = None

    def on_epoch_end(self, epoch, logs=None):
        scores = evaluate_sentences(self.model, self.tokenizer, self.sentences, self.max_length,
                                    self.batch_size)
        logs["val_entity_f1"] = scores["f1"]
        if self.best is None or scores["f1"] > self.best["f1"]:
            self.best = scores
        print(f"\nepoch {epoch + 1}: validation entity F1 {100 * scores['f1']:.2f}")


def evaluate(model_dir, data, out=None, batch_size=64):
    """Scores the run folder `model_dir` on the CoNLL file `data`; prints and writes JSON.

    Returns: dict of metrics, also written to `out` (default `MODEL_DIR/eval_<data name>.json`).
    """
    model, tokenizer, max_length = load_run(model_dir)
    sentences = read_conll(data, label_names=model.label_names)
    metrics = {"model": str(model_dir), "data": str(data), "backend": keras.config.backend(),
               **evaluate_sentences(model, tokenizer, sentences, max_length, batch_size)}
    print(format_entity_scores(metrics, f"{data} ({len(sentences)} sentences)"))
    write_evaluation(model_dir, data, metrics, out)
    return metrics


def evaluate_sentences(model, tokenizer, sentences, max_length, batch_size=64):
    """Entity scores of `model` on tagged `sentences` (see `kbert.metrics.entity_scores`)."""
    texts = sentences.texts()
    predicted, _ = predict_tags(model, tokenizer, texts, _joined_spans(sentences.words), max_length, batch_size)
    return {**entity_scores(sentences.tags, predicted), "sentences": len(sentences)}


def predict_tags(model, tokenizer, texts, word_spans, max_length, batch_size=64):
    """The tag of every word of every text, and its probability.

    Returns: (tags, probabilities): lists (per text) of lists (per word). A word without
    any token (only characters BERT deletes) is tagged `O` with probability 1.
    """
    windows = NerWindows(tokenizer, texts, word_spans, max_length)
    logits = PaddedBatches(windows.inputs, batch_size=batch_size).predict(model)
    tags, probabilities = [], []
    for word_logits in windows.word_logits(logits):
        missing = np.isnan(word_logits[:, 0])
        word_logits = np.where(missing[:, None], 0.0, word_logits)
        exp = np.exp(word_logits - word_logits.max(axis=-1, keepdims=True))
        probs = exp / exp.sum(axis=-1, keepdims=True)
        best = np.where(missing, model.label_names.index("O"), probs.argmax(-1))
        tags.append([model.label_names[i] for i in best])
        probabilities.append(np.where(missing, 1.0, probs.max(-1)).tolist())
    return tags, probabilities


def predict(model_dir, texts, batch_size=32):
    """The entities of each raw text: type, text, [start, end) char span, mean probability.

    Words are the tokenizer's (split at spaces and punctuation), so "Paris." gives the
    entity "Paris". Returns: list of dicts `{"text", "entities": [...]}`.
    """
    model, tokenizer, max_length = load_run(model_dir)
    spans = word_spans_of(tokenizer, texts)
    tags, probabilities = predict_tags(model, tokenizer, texts, spans, max_length, batch_size)
    results = []
    for text, word_spans, word_tags, word_probs in zip(texts, spans, tags, probabilities):
        entities = []
        for kind, first, last in get_entities(word_tags):
            start, end = int(word_spans[first][0]), int(word_spans[last][1])
            entities.append({"type": kind, "text": text[start:end], "start": start, "end": end,
                             "score": round(float(np.mean(word_probs[first : last + 1])), 4)})
        results.append({"text": text, "entities": entities})
    return results


def _windows(tokenizer, sentences, max_length, ids):
    labels = [np.array([ids[tag] for tag in tags], "int32") for tags in sentences.tags]
    return NerWindows(tokenizer, sentences.texts(), _joined_spans(sentences.words), max_length, labels)


def _joined_spans(sentences):
    """Char spans of the words of each sentence in the sentence joined by single spaces."""
    spans = []
    for words in sentences:
        lengths = np.array([len(word) for word in words], "int64")
        starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]) if len(words) else lengths
        spans.append(np.stack([starts, starts + lengths], axis=1))
    return spans


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    train_ = commands.add_parser("train", help="fine-tune and write a run folder")
    train_.add_argument("--data", required=True, help="training CoNLL file (token TAG per line)")
    train_.add_argument("--valid", help="validation CoNLL file (default: a seeded split of --data)")
    train_.add_argument("--init", default="all_minilm_l6_v2", help="preset, 'all_minilm_l6_v2' or a folder")
    train_.add_argument("--out", required=True, help="run folder to write (e.g. saved_models/conll)")
    train_.add_argument("--epochs", type=int, default=3)
    train_.add_argument("--batch-size", type=int, default=32)
    train_.add_argument("--lr", type=float, default=5e-5, help="peak learning rate")
    train_.add_argument("--max-length", type=int, default=128, help="tokens per window, specials included")
    train_.add_argument("--validation-fraction", type=float, default=0.1)
    train_.add_argument("--limit", type=int, help="train on a seeded subset of this many sentences")
    train_.add_argument("--patience", type=int, default=1, help="early stopping patience, in epochs")
    train_.add_argument("--seed", type=int, default=0)
    train_.add_argument("--verbose", type=lambda v: v if v == "auto" else int(v), default="auto")
    evaluate_ = commands.add_parser("evaluate", help="entity P/R/F1 of a run folder on a CoNLL file")
    evaluate_.add_argument("--model", required=True, help="run folder written by train")
    evaluate_.add_argument("--data", required=True)
    evaluate_.add_argument("--out", help="metrics JSON (default: MODEL/eval_<data name>.json)")
    evaluate_.add_argument("--batch-size", type=int, default=64)
    predict_ = commands.add_parser("predict", help="entities of raw texts")
    predict_.add_argument("--model", required=True, help="run folder written by train")
    predict_.add_argument("texts", nargs="*", help="texts (default: one per line on stdin)")
    predict_.add_argument("--json", action="store_true", help="one JSON object per line")
    predict_.add_argument("--batch-size", type=int, default=32)
    return parser


def main(argv=None):
    args = parser().parse_args(argv)
    if args.command == "train":
        train(args.data, args.init, args.out, valid=args.valid, epochs=args.epochs,
              batch_size=args.batch_size, learning_rate=args.lr, max_length=args.max_length,
              validation_fraction=args.validation_fraction, limit=args.limit,
              patience=args.patience, seed=args.seed, verbose=args.verbose)
    elif args.command == "evaluate":
        evaluate(args.model, args.data, out=args.out, batch_size=args.batch_size)
    else:
        texts = args.texts or [line.rstrip("\r\n") for line in sys.stdin]
        if not texts:
            sys.exit("Nothing to predict: give texts as arguments or lines on stdin.")
        for result in predict(args.model, texts, batch_size=args.batch_size):
            if args.json:
                print(json.dumps(result))
                continue
            print(result["text"])
            for e in result["entities"]:
                print(f"  {e['type']:5} {e['text']!r} [{e['start']}, {e['end']}) {e['score']:.3f}")
            if not result["entities"]:
                print("  (no entities)")


if __name__ == "__main__":
    main()
