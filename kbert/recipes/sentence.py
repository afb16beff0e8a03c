"""Fine-tune, evaluate and run sentence(-pair) classifiers: the library side of apps/sentiment.py,
apps/nli.py, apps/similarity.py and apps/multi_label.py."""

import dataclasses
import functools

import keras
import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data import TsvFormatError
from kbert.data.readers.seeded_split import training_and_validation
from kbert.data.readers.sentence_table import read_sentences
from kbert.metrics import accuracy, confusion_matrix, macro_f1, multi_label_scores, pearson, spearman
from kbert.optimizers import enable_lora
from kbert.saving import load_run
from kbert.tasks.bert_classifier import BertClassifier
from kbert.tasks.bert_text_classifier_preprocessor import BertTextClassifierPreprocessor
from kbert.training.fine_tuning import FineTuning
from kbert.training.training_run import fine_tuning_run
from kbert.training.results import parameter_counts, write_evaluation
from kbert.training.validation_scores import ValidationScores


@dataclasses.dataclass(frozen=True)
class SentenceProblem:
    """Which sentence(-pair) problem a `BertClassifier` is fine-tuned on: what it reads and predicts.

    Args:
        name: str. Used in messages and the metrics file.
        num_texts: int. 1 (sentiment) or 2 (NLI, similarity: premise and hypothesis).
        label_names: tuple of str or None. Default classes, in id order; data labels may be
            these names or their ids. None: classes come from the training file.
        regression: bool. One float score per example (STS-B) instead of classes.
        multi_label: bool. Any number of the classes per example (`label1,label2` cells).

    Example:
    >>> SentenceProblem("nli", 2, ("entailment", "neutral", "contradiction")).num_texts
    2
    """

    name: str
    num_texts: int = 1
    label_names: tuple = None
    regression: bool = False
    multi_label: bool = False


SENTIMENT = SentenceProblem("sentiment", 1, ("negative", "positive"))
NLI = SentenceProblem("nli", 2, ("entailment", "neutral", "contradiction"))
SIMILARITY = SentenceProblem("similarity", 2, regression=True)
MULTI_LABEL = SentenceProblem("multi_label", 1, multi_label=True)  # classes from the training file (or labels)


def train(problem, data, init, out, valid=None, max_length=DEFAULT_SEQUENCE_LENGTH, lora_rank=None,
          validation_fraction=0.1, limit=None, validation_limit=None, patience=1, labels=None, skip_bad_rows=False,
          doc_stride=None, train_windows="first", window_pooling="mean", layout=None, callbacks=(), distillation=None,
          **training):
    """Fine-tunes a `BertClassifier` with BERT's recipe and writes the run folder `out`.

    A thin layer over the task API: `BertClassifier.from_preset(init, ...)` builds the
    backbone, the head and the preprocessor (tokenizer and `max_length`), compiled with
    BERT's defaults (`FineTuning.task_model`: `bert_adamw` at peak `learning_rate`, warmup
    over 10% of the steps, then linear decay; dropout 0.1) and `fit` reads the raw texts, with early stopping on
    the validation split that restores the best epoch. Without `valid`, a seeded
    `validation_fraction` of `data` is held out. The validation data is read once an epoch
    (`ValidationScores`: its loss, accuracy or MAE, and the full scores of the best epoch,
    reported without another pass). The folder gets `model.keras` (which holds the
    preprocessor), the tokenizer (vocab.txt, tokenizer_config.json), `metrics.json`,
    `curves.png`, the model card `README.md`, `history.csv` and TensorBoard `logs/`, all at
    once when training has finished (`write_run_folder`).

    The run is backed up beside `out` at each epoch's end and every `backup_minutes` within
    one: the same call after a kill resumes from the last backup, on the batches the
    uninterrupted run had (`run_backup`, `resumable_fit`). A loss that goes NaN or infinite stops training with
    `kbert.training.NonFiniteLossError`, keeping the last good backup.

    Args:
        problem: `SentenceProblem`.
        data: path of the training file: a TSV, or any file `kbert.data.readers.sentence_table.read_sentences` reads.
        init: str. What `BertClassifier.from_preset` starts from: a preset, "all_minilm_l6_v2" or a folder.
        out: path of the run folder to write.
        valid: path of a validation file (laid out as `data`), or None to carve one out of `data`.
        layout: `kbert.data.readers.tables.Layout` or None. How `data` and `valid` are laid out: format and columns
            (default: by the suffix; a TSV's columns in order, a table's by Hugging Face's names).
        callbacks: more Keras callbacks for the fit (not backed up: e.g. `kbert.training.time_budget.TimeBudget`).
        max_length: int. Tokens per input, special tokens included.
        lora_rank: int or None. Train LoRA factors of rank `lora_rank` (and the head) only.
        validation_fraction: float. Share of `data` held out when `valid` is None.
        limit: int or None. Train on a seeded subset of this many training examples.
        validation_limit: int or None. Validate on a seeded subset of this many examples.
        patience: int. Epochs without improvement before early stopping.
        labels: list of str or None. Classes, overriding the problem's defaults.
        doc_stride: int or None. Read a text longer than `max_length` through windows starting every
            `doc_stride` tokens, which predict and evaluate combine (`BertTextClassifierPreprocessor`).
        train_windows: "first" or "all". With `doc_stride`, the windows of a text that train.
        window_pooling: "mean" or "max". With `doc_stride`, how a text's window logits combine.
        skip_bad_rows: bool. Skip unreadable TSV rows (counted) instead of failing.
        distillation: a `kbert.training.distillation.Distillation`, or None. Distil its teacher into the model
            `init` names (its `student`) instead, on the teacher's outputs and the labels
            (`kbert.recipes.distillation`); the run folder is the same.
        **training: the `kbert.training.fine_tuning.FineTuning` settings (epochs, batch_size, learning_rate,
            seed, mixed_precision, gradient_accumulation, remat, backup_steps, backup_minutes, restart, verbose;
            a backup of a run with other settings is refused, naming them, unless `restart`).

    Returns: the metrics dict written to `metrics.json`.
    """
    training = FineTuning(**training)
    label_names = None if problem.regression else (labels or problem.label_names)
    read = dict(num_texts=problem.num_texts, label_names=label_names, regression=problem.regression,
                skip_bad_rows=skip_bad_rows, multi_label=problem.multi_label, layout=layout)
    train_examples = read_sentences(data, **read)
    read["label_names"] = train_examples.label_names
    valid_examples = read_sentences(valid, **read) if valid else None

    arguments = dict(num_classes=1 if problem.regression else len(train_examples.label_names),
                     label_names=train_examples.label_names, multi_label=problem.multi_label,
                     sequence_length=max_length, window_pooling=window_pooling)
    model = (distillation.student(training, init, **arguments) if distillation
             else training.task_model(BertClassifier, init, **arguments))
    if doc_stride:
        model.preprocessor = BertTextClassifierPreprocessor(model.preprocessor.tokenizer,
                                                            model.preprocessor.sequence_length, doc_stride,
                                                            train_windows)
    for examples in (train_examples, valid_examples):
        _check_labels(model, examples)
    train_examples, valid_examples = training_and_validation(train_examples, valid_examples, validation_fraction,
                                                             training.seed, limit, validation_limit)
    if model.preprocessor.sequence_length < max_length:
        print(f"max_length {max_length} is beyond the model's {model.backbone.max_sequence_length} "
              f"positions; using {model.preprocessor.sequence_length}.")
        max_length = model.preprocessor.sequence_length
    if lora_rank:
        adapted = enable_lora(model.backbone, lora_rank)
        print(f"LoRA rank {lora_rank} on {adapted} layers.")
    trainable, total = parameter_counts(model)
    print(f"{problem.name}: {len(train_examples)} training / {len(valid_examples)} validation examples; "
          f"{trainable:,} trainable of {total:,} parameters.")

    score = "mae" if model.regression else "micro_f1" if model.multi_label else "accuracy"
    monitor, mode = ("val_loss", "min") if model.regression else (f"val_{score}", "max")
    logged = {"val_loss": "loss", f"val_{score}": score}
    scorer = ValidationScores(lambda model: evaluate_examples(model, valid_examples, training.batch_size), logged,
                              monitor, mode)
    stopping = keras.callbacks.EarlyStopping(monitor, mode=mode, patience=patience, restore_best_weights=True)
    run = {"task": problem.name, "init": str(init), "data": str(data),
           "valid": str(valid) if valid else f"{validation_fraction:.0%} of data (seed {training.seed})",
           "train_examples": len(train_examples), "validation_examples": len(valid_examples),
           "label_names": model.label_names, "max_length": max_length, "doc_stride": doc_stride,
           "train_windows": train_windows, "window_pooling": window_pooling, **(layout.settings() if layout else {}),
           **(distillation.settings() if distillation else {})}
    x, y, files, title = _inputs(train_examples), train_examples.labels, (data, valid), f"{problem.name} from {init}"
    if distillation:
        files, title = (*files, *distillation.files), f"{problem.name} distilled from {distillation.source} into {init}"
    metrics, validation = fine_tuning_run(
        model, x, y, out, training, problem.name, run, inputs=files, title=title,
        data={"train": data, "validation": valid},
        hyperparameters={"lora_rank": lora_rank, "patience": patience, "limit": limit,
                         "validation_limit": validation_limit},
        scorer=scorer, stopping=stopping, callbacks=callbacks,
        # the teacher's outputs, which the model's loss holds: once a rerun's settings are checked
        prepare=functools.partial(distillation.targets, model) if distillation else None)
    print(format_metrics(validation, f"validation ({len(valid_examples)} examples)"))
    return metrics


def evaluate(problem, model_dir, data, out=None, batch_size=64, skip_bad_rows=False, layout=None, verbose="auto"):
    """Scores the model of `model_dir` on the file `data` (laid out as `layout` says, as `train`'s);
    prints and writes the metrics. `verbose`: the progress of the pass (`PaddedBatches.predict`).

    Returns: dict of metrics, also written as JSON to `out` (default
    `MODEL_DIR/eval_<data file name>.json`).
    """
    model = load_run(model_dir)
    examples = read_sentences(data, problem.num_texts, label_names=model.label_names, regression=model.regression,
                              skip_bad_rows=skip_bad_rows, multi_label=model.multi_label, layout=layout)
    _check_labels(model, examples)
    scores = evaluate_examples(model, examples, batch_size, verbose=verbose)
    summary = format_metrics(scores, f"{data} ({len(examples)} examples)")
    return write_evaluation(model_dir, data, scores, out, summary)[0]


def evaluate_examples(model, examples, batch_size=64, verbose=0):
    """Metrics of `model` (a `BertClassifier` with its preprocessor) on labeled `examples`:
    the loss (as `compile`'s: cross-entropy, or MSE for regression), then accuracy, macro-F1
    and the confusion matrix for classes; Pearson, Spearman, MSE and MAE for regression; for
    multi-label, binary cross-entropy, the share of right (example, class) decisions at the
    model's threshold, micro and macro F1 and each class's scores. `verbose` as
    `PaddedBatches.predict`'s."""
    outputs = model.predict(_inputs(examples), batch_size=batch_size, verbose=verbose)
    if model.regression:
        errors = outputs - np.asarray(examples.labels, "float32")
        mse = float(np.mean(errors ** 2))
        return {"loss": mse, "pearson": pearson(outputs, examples.labels),
                "spearman": spearman(outputs, examples.labels), "mse": mse, "mae": float(np.mean(np.abs(errors))),
                "examples": len(examples)}
    if model.multi_label:
        labels = np.asarray(examples.labels, "float32")
        clipped = np.clip(outputs, 1e-7, 1 - 1e-7)
        chosen = outputs >= model.threshold
        return {"loss": float(-np.mean(labels * np.log(clipped) + (1 - labels) * np.log(1 - clipped))),
                "accuracy": float(np.mean(chosen == labels.astype(bool))),
                **multi_label_scores(labels, chosen, model.label_names),
                "label_names": model.label_names, "examples": len(examples)}
    predictions = outputs.argmax(axis=-1)
    labels = np.asarray(examples.labels)
    chosen = outputs[np.arange(len(labels)), labels]  # probabilities of the true classes
    return {"loss": float(-np.mean(np.log(np.maximum(chosen, 1e-7)))),
            "accuracy": accuracy(examples.labels, predictions),
            "macro_f1": macro_f1(examples.labels, predictions, model.num_classes),
            "confusion_matrix": confusion_matrix(examples.labels, predictions, model.num_classes).tolist(),
            "label_names": model.label_names, "examples": len(examples)}


def predict(model_dir, texts, pairs=None, batch_size=32, dtype="float32"):
    """Label and probability (or score) for each text (or text pair) of the run in `model_dir`:
    `BertClassifier.answers` of its model."""
    return load_run(model_dir).answers(texts if pairs is None else (texts, pairs), batch_size, dtype=dtype)


def format_metrics(metrics, title):
    """Metrics as printable lines: the scores, and the confusion matrix with named rows."""
    lines = [f"{title}:"]
    for key in ("accuracy", "micro_f1", "macro_f1", "pearson", "spearman", "mse"):
        if key in metrics:
            lines.append(f"  {key:9} {metrics[key]:.4f}")
    if "per_label" in metrics:
        width = max(8, *map(len, metrics["per_label"])) + 1
        lines.append(f"  {'':>{width}} precision  recall      f1  support")
        for name, scores in metrics["per_label"].items():
            lines.append(f"  {name:>{width}} {scores['precision']:9.4f} {scores['recall']:7.4f} {scores['f1']:7.4f} "
                         f"{scores['support']:8d}")
    if "confusion_matrix" in metrics:
        names = [str(name) for name in metrics["label_names"] or range(len(metrics["confusion_matrix"]))]
        width = max(8, *map(len, names)) + 1
        lines.append("  confusion matrix (rows: label, columns: prediction):")
        lines.append("  " + " " * width + "".join(f"{name:>{width}}" for name in names))
        for name, row in zip(names, metrics["confusion_matrix"]):
            lines.append(f"  {name:>{width}}" + "".join(f"{count:>{width}}" for count in row))
    return "\n".join(lines)


def _inputs(examples):
    """The raw inputs `BertClassifier` takes for `examples`: texts, or (texts, pairs)."""
    return examples.texts if examples.pairs is None else (examples.texts, examples.pairs)


def _check_labels(model, examples):
    """Refuses labels the model cannot train on (e.g. a score that is not finite) before any step,
    through the task's own check; the message names the file."""
    if examples is None:
        return
    try:
        model.check_labels(examples.labels)
    except ValueError as error:
        raise TsvFormatError(f"{examples.source}: {error}") from None
