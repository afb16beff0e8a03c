"""Fine-tune, evaluate and run named-entity recognizers (CoNLL-2003 style): the library side of
apps/ner.py, over `kbert.BertTokenClassifier` (its preset, compile, fit and predict).

Sentences longer than `max_length` tokens are cut into windows at word boundaries, which do
not overlap (see `kbert.data.windows.ner.NerWindows`), so every word gets a prediction. Scores are
entity-level precision / recall / F1 as conlleval counts them (micro and per type); they are
computed by `evaluate_sentences` on what `BertTokenClassifier.predict` returns (through
`predict_with`, which also runs the model exported to token_ids.tflite: `kbert_edge.EdgeModel`).
"""

import keras

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data.readers.seeded_split import training_and_validation
from kbert.data.readers.tagged_table import read_tagged_sentences
from kbert.metrics.entity_f1 import entity_scores, format_entity_scores
from kbert.saving import load_run
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from kbert.training.fine_tuning import FineTuning
from kbert.training.training_run import fine_tuning_run
from kbert.training.results import write_evaluation
from kbert.training.validation_scores import ValidationScores


def train(data, init, out, valid=None, max_length=DEFAULT_SEQUENCE_LENGTH, validation_fraction=0.1, limit=None,
          validation_limit=None, patience=1, layout=None, **training):
    """Fine-tunes a `BertTokenClassifier` and writes the run folder `out`.

    The task API's recipe (`BertTokenClassifier.from_preset`, compiled by `FineTuning.task_model`:
    `bert_adamw`, 10% warmup, linear decay over the steps of `fit`), fitted on the words and
    tags of the sentences, with early stopping on the validation entity F1, restoring the
    best epoch. Without `valid`, a seeded `validation_fraction` of the sentences is held
    out. The folder gets `model.keras` (with its preprocessor), the tokenizer,
    `metrics.json`, `curves.png`, the model card `README.md`, `history.csv` and TensorBoard
    `logs/`, all at once at the end. The run is backed up beside `out` at each epoch's end
    and every `backup_minutes` within one: the same call after a kill resumes from the last
    backup, on the batches the uninterrupted run had (`run_backup`, `resumable_fit`); a loss
    that goes NaN or infinite raises `kbert.training.NonFiniteLossError`, keeping the last
    good backup.

    Args:
        data: path of the training file: CoNLL (`token TAG` per line; BIO or IOB1 tags), or a table of
            word and tag lists (`kbert.data.readers.tagged_table.read_tagged_sentences`).
        init: str. The preset of `BertTokenClassifier.from_preset`: a preset name,
            "all_minilm_l6_v2" or a folder (of a run folder, the backbone, with a new head).
        out: path of the run folder to write.
        valid: path of a validation file (laid out as `data`), or None to carve one out of `data`.
        layout: `kbert.data.readers.tables.Layout` or None. How `data` and `valid` are laid out: format, columns, the
            names of tag ids (default: CoNLL text, or a table by its suffix with conll2003's columns).
        max_length: int. Tokens per window, special tokens included (at most the backbone's positions).
        validation_fraction: float. Share of the sentences held out when `valid` is None.
        limit: int or None. Train on a seeded subset of this many sentences.
        validation_limit: int or None. Validate on a seeded subset of this many sentences.
        patience: int. Epochs without improvement of the entity F1 before early stopping.
        **training: the `kbert.training.fine_tuning.FineTuning` settings, as for `kbert.recipes.sentence.train`.

    Returns: the metrics dict written to `metrics.json`.
    """
    training = FineTuning(**training)
    train_sentences = read_tagged_sentences(data, layout=layout)
    label_names = train_sentences.label_names()
    train_sentences, valid_sentences = training_and_validation(
        train_sentences, read_tagged_sentences(valid, label_names, layout=layout) if valid else None,
        validation_fraction, training.seed, limit, validation_limit)
    model = training.task_model(BertTokenClassifier, init, label_names=label_names, sequence_length=max_length)
    max_length = model.preprocessor.sequence_length
    print(f"ner: {len(train_sentences)} training sentences, {len(valid_sentences)} validation sentences; "
          f"labels {label_names}.")
    scorer = EntityF1Callback(valid_sentences, training.batch_size)
    stopping = keras.callbacks.EarlyStopping("val_entity_f1", mode="max", patience=patience,
                                             restore_best_weights=True)
    run = {"task": "ner", "init": str(init), "data": str(data),
           "valid": str(valid) if valid else f"{validation_fraction:.0%} of data (seed {training.seed})",
           "train_sentences": len(train_sentences), "validation_sentences": len(valid_sentences),
           "label_names": label_names, "max_length": max_length,
           **(layout.settings(names_key="tag_names") if layout else {})}
    metrics, validation = fine_tuning_run(
        model, train_sentences.words, train_sentences.tags, out, training, "ner", run, inputs=(data, valid),
        title=f"ner from {init} (entity_f1: validation)", data={"train": data, "validation": valid},
        hyperparameters={"patience": patience, "limit": limit, "validation_limit": validation_limit}, scorer=scorer,
        stopping=stopping, curves=_curves)
    print(format_entity_scores(validation, f"validation ({len(valid_sentences)} sentences)"))
    return metrics


def _curves(history):
    """The fit's history with the validation entity F1 plotted as `entity_f1`."""
    return {k: v for k, v in history.items() if k != "val_entity_f1"} | {"entity_f1": history["val_entity_f1"]}


class EntityF1Callback(ValidationScores):
    """Adds `val_entity_f1` (conlleval micro F1 on `sentences`) to the logs after each epoch.

    The model is a `BertTokenClassifier` with its preprocessor. `best` keeps the full scores of
    the best epoch so far (see `ValidationScores`).

    Args:
        sentences: `kbert.data.readers.tagged_sentences.TaggedSentences`, tagged.
        batch_size: int.
    """

    def __init__(self, sentences, batch_size=64):
        super().__init__(self._score, {"val_entity_f1": "f1"}, "val_entity_f1")
        self.sentences, self.batch_size = sentences, batch_size

    def _score(self, model):
        return evaluate_sentences(model, self.sentences, self.batch_size)


def evaluate(model_dir, data, out=None, batch_size=64, layout=None, verbose="auto"):
    """Scores the run folder `model_dir` on the file `data` (CoNLL, or a table laid out as `layout` says, as
    `train`'s); prints and writes JSON. `verbose`: the progress of the pass (`PaddedBatches.predict`).

    Tags outside the model's labels raise `kbert.data.readers.text_file.DataFormatError` naming the line.

    Returns: dict of metrics, also written to `out` (default `MODEL_DIR/eval_<data name>.json`).
    """
    model = load_run(model_dir)
    sentences = read_tagged_sentences(data, label_names=model.label_names, layout=layout)
    scores = evaluate_sentences(model, sentences, batch_size, verbose=verbose)
    summary = format_entity_scores(scores, f"{data} ({len(sentences)} sentences)")
    return write_evaluation(model_dir, data, scores, out, summary)[0]


def evaluate_sentences(model, sentences, batch_size=64, verbose=0, runner=None):
    """Entity scores (see `kbert.metrics.entity_scores`) of the tags `model.predict` gives the words of the tagged
    `sentences`; `runner` computes the model's outputs instead (`BertTask.predict_with`: an `EdgeModel`)."""
    results = model.predict_with(runner or model, sentences.words, batch_size, verbose)
    return {**entity_scores(sentences.tags, [result["tags"] for result in results]), "sentences": len(sentences)}


def predict(model_dir, texts, batch_size=32, dtype="float32"):
    """The entities of each raw text: type, text, [start, end) char span, mean probability.

    `BertTokenClassifier.predict` of the run's model (`dtype` as there). Words are the tokenizer's (split at
    spaces and punctuation), so "Paris." gives the entity "Paris". Returns: list of dicts
    `{"text", "entities": [...]}`.
    """
    return answers(load_run(model_dir), texts, batch_size, dtype)


def answers(model, texts, batch_size=32, dtype="float32"):
    """The entities of each raw text, from a loaded `BertTokenClassifier`: `[{"text", "entities"}]`."""
    results = model.predict(list(texts), batch_size=batch_size, verbose=0, dtype=dtype)
    return [{"text": result["text"], "entities": result["entities"]} for result in results]
