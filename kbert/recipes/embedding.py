"""Train and evaluate sentence embeddings (a bi-encoder, `kbert.BertSentenceEncoder`): the library side of
`apps/embed.py train` and `apps/embed.py evaluate`.

Two objectives, as sentence-transformers trains them:

- "cosine": scored pairs (STS-B: `sentence1<TAB>sentence2<TAB>score`, 0 to 5), the squared difference of
  each pair's cosine similarity and its score mapped to [0, 1].
- "ranking": (anchor, positive) pairs, e.g. SNLI's entailment pairs (`sentence1<TAB>sentence2<TAB>label`,
  rows labelled `entailment` kept), each anchor's positive ranked above the batch's other positives.

The validation score is the Spearman correlation of the cosine similarities of scored pairs with their
gold scores (STS-B's metric): held out from the training data under "cosine", from `valid` (a scored TSV)
under "ranking". The score of the starting model (`zero_shot`) is measured before training and recorded beside it.
"""

import dataclasses

import keras
import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data import TsvFormatError
from kbert.data.readers.seeded_split import training_and_validation
from kbert.data.readers.sentence_table import LABEL_COLUMNS, read_sentences
from kbert.data.readers.tables import read_table, table_format
from kbert.metrics import pearson, spearman
from kbert.saving import load_run
from kbert.tasks.bert_sentence_encoder import BertSentenceEncoder
from kbert.training.fine_tuning import FineTuning
from kbert.training.training_run import fine_tuning_run
from kbert.training.results import parameter_counts, write_evaluation
from kbert.training.validation_scores import ValidationScores

NLI_CLASSES = ("entailment", "neutral", "contradiction")


EMBEDDING_TRAINING = FineTuning(epochs=1, batch_size=16)  # sentence-transformers' (and its 2e-5, the task's rate)


def train(data, init, out, objective="cosine", valid=None, score_range=(0.0, 5.0), positive_label="entailment",
          pooling=None, max_length=DEFAULT_SEQUENCE_LENGTH, validation_fraction=0.1, limit=None,
          validation_limit=None, patience=1, layout=None, **training):
    """Trains a `BertSentenceEncoder` from `init` and writes the run folder `out`.

    `BertSentenceEncoder.from_preset(init, pooling=..., objective=...)`, compiled by `FineTuning.task_model`
    (`bert_adamw(learning_rate)`: 10% warmup, linear decay, weight decay 0.01), fitted on the pairs
    with the validation Spearman watched by early stopping (restoring the best epoch). The run is
    backed up and resumes as every fine-tuning does (`kbert.training.training_run.fine_tuning_run`).

    Args:
        data: path of the training TSV: scored pairs ("cosine") or labelled pairs ("ranking").
        init: str. A preset, "all_minilm_l6_v2", or a folder (a backbone folder, a Hugging Face BERT).
        out: path of the run folder to write.
        objective: "cosine" or "ranking" (see the module docstring).
        valid: path of a scored TSV to validate on; None carves `validation_fraction` of `data` ("cosine"
            only: "ranking" needs scored pairs to validate on).
        score_range: (low, high). The scores of the scored files (STS-B's 0 to 5).
        positive_label: str. Under "ranking", the rows of `data` with this label are the pairs; a file of
            two columns has no label and every row is a pair.
        pooling: "mean", "cls" or "max"; None: `init`'s own (a sentence-transformers folder's), else "mean".
        max_length: int. Tokens per text.
        validation_fraction, limit, validation_limit, patience: as for the other recipes.
        **training: the `kbert.training.fine_tuning.FineTuning` settings, as for `kbert.recipes.sentence.train`
            (default: `EMBEDDING_TRAINING`, sentence-transformers' 1 epoch of batches of 16 at 2e-5).
        layout: `kbert.data.readers.tables.Layout` or None. How `data` and `valid` are laid out (a TSV of columns in
            order, or any table with named columns: `kbert.data.readers.sentence_table.read_sentences`).

    Returns: the metrics dict written to `metrics.json`.
    """
    training = dataclasses.replace(EMBEDDING_TRAINING, **training)
    if objective == "ranking" and valid is None:
        raise ValueError("The ranking objective validates on scored pairs: give valid (e.g. STS-B's TSV).")
    train_pairs = _read_pairs(data, objective, positive_label, score_range, layout)
    train_pairs, valid_pairs = training_and_validation(
        train_pairs, _read_pairs(valid, "cosine", layout=layout) if valid else None, validation_fraction,
        training.seed, limit, validation_limit)
    model = training.task_model(BertSentenceEncoder, init, **({} if pooling is None else {"pooling": pooling}),
                                objective=objective, score_range=score_range, sequence_length=max_length)
    zero_shot = evaluate_pairs(model, valid_pairs, training.batch_size)
    trainable, total = parameter_counts(model)
    print(f"embedding ({objective}): {len(train_pairs)} training pairs / {len(valid_pairs)} validation pairs; "
          f"{trainable:,} trainable of {total:,} parameters; validation Spearman before training "
          f"{zero_shot['spearman']:.4f}.")
    scorer = ValidationScores(lambda model: evaluate_pairs(model, valid_pairs, training.batch_size),
                              {"val_spearman": "spearman"}, "val_spearman")
    stopping = keras.callbacks.EarlyStopping("val_spearman", mode="max", patience=patience,
                                             restore_best_weights=True)
    run = {"task": "embedding", "init": str(init), "data": str(data),
           "valid": str(valid) if valid else f"{validation_fraction:.0%} of data (seed {training.seed})",
           "objective": objective, "pooling": model.pooling, "score_range": list(score_range),
           "positive_label": positive_label if objective == "ranking" else None,
           "train_pairs": len(train_pairs), "validation_pairs": len(valid_pairs),
           "max_length": model.preprocessor.sequence_length}
    labels = train_pairs.labels if objective == "cosine" else None
    metrics, validation = fine_tuning_run(
        model, (train_pairs.texts, train_pairs.pairs), labels, out, training, "embedding", run, inputs=(data, valid),
        title=f"embedding ({objective}) from {init}", data={"train": data, "validation": valid},
        hyperparameters={"patience": patience, "limit": limit, "validation_limit": validation_limit},
        scorer=scorer, stopping=stopping, measured={"zero_shot": zero_shot})
    print(format_scores(validation, f"validation ({len(valid_pairs)} pairs)", zero_shot))
    return metrics


def evaluate(model_dir, data, out=None, batch_size=64, layout=None):
    """Scores the run folder `model_dir` on the scored pairs of the file `data` (laid out as `layout` says)
    (`evaluate_pairs`); prints the scores and writes them as JSON to `out` (default `MODEL_DIR/eval_<data
    name>.json`)."""
    model = load_run(model_dir)
    pairs = _read_pairs(data, "cosine", layout=layout)
    scores = evaluate_pairs(model, pairs, batch_size)
    return write_evaluation(model_dir, data, scores, out, format_scores(scores, f"{data} ({len(pairs)} pairs)"))[0]


def evaluate_pairs(model, pairs, batch_size=64):
    """Spearman and Pearson correlations of the cosine similarities `model` gives the scored `pairs` (a
    `SentenceExamples` of pairs) with their scores, and the pairs' count."""
    similarity = model.similarity(pairs.texts, pairs.pairs, batch_size)
    return {"spearman": spearman(similarity, pairs.labels), "pearson": pearson(similarity, pairs.labels),
            "pairs": len(pairs)}


def format_scores(scores, title, before=None):
    """The correlations as printable lines (with the starting model's, `before`)."""
    lines = [f"{title}:"]
    for key in ("spearman", "pearson"):
        lines.append(f"  {key:9} {scores[key]:.4f}" + (f"  (before training {before[key]:.4f})" if before else ""))
    return "\n".join(lines)


def _read_pairs(path, objective, positive_label=None, score_range=None, layout=None):
    """The pairs of the file `path`: scored (in `score_range`, if given), or, for "ranking", the rows labelled
    `positive_label` (every row of a file without labels)."""
    if objective == "cosine":
        return read_sentences(path, 2, regression=True, score_range=score_range, layout=layout)
    if not _has_labels(path, layout):
        return read_sentences(path, 2, labeled=False, layout=layout)
    names = list(NLI_CLASSES) if positive_label in NLI_CLASSES else None
    pairs = read_sentences(path, 2, label_names=names, layout=layout)
    if positive_label not in pairs.label_names:
        raise TsvFormatError(f"{path}: no pair is labelled {positive_label!r} (its labels: {pairs.label_names}).")
    return pairs.take(np.flatnonzero(pairs.labels == pairs.label_names.index(positive_label)))


def _has_labels(path, layout):
    """Whether the pairs of `path` have labels: a TSV of columns in order, a third column; a table, a label column."""
    if layout and layout.column("label"):
        return True
    data_format = table_format(path, layout and layout.data_format)
    if data_format == "tsv" and not (layout and layout.columns):
        with open(path, encoding="utf-8", errors="replace") as file:
            return len(file.readline().rstrip("\r\n").split("\t")) > 2
    return read_table(path, data_format, layout and layout.delimiter).first_of(LABEL_COLUMNS) is not None
