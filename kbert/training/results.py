"""What a finished training writes: its run folder (`write_run_folder`, with `run_metrics`) and its
evaluations (`write_evaluation`)."""

import json
import os
import pathlib

import keras
import numpy as np

from kbert.distribution import describe as describe_distribution
from kbert.distribution import is_chief, writing_alone
from kbert.saving import METRICS_FILE, MODEL_FILE, atomic_output_folder, record_checksums, write_json_atomic
from kbert.training.curves import plot_history
from kbert.training.model_card import write_model_card
from kbert.training.training_logs import LOG_NAMES
from kbert_core.cpu import describe_cpu


def write_run_folder(out, model, tokenizer, metrics, history, title="", extra_json=None, data=None, logs=None):
    """Writes a finished run: `model.keras`, the tokenizer, `metrics.json`, `curves.png`, the
    model card `README.md`, the fit's `history.csv` and TensorBoard `logs/`, and `SHA256SUMS`, the
    SHA-256 of each of them, which loading checks (`kbert.saving.checksums`).

    All of it appears at once, or nothing does (`atomic_output_folder`). `model.keras`
    holds the architecture, the weights and the preprocessor (tokenizer and lengths), not
    the optimizer's state (twice the weights again under AdamW), which a finished run does
    not need. The logs (`history.csv`, `logs/`) are moved in from the folder `logs`, where
    `kbert.training.training_logs.fine_tuning_logs` wrote them while the run trained.
    In a job of several processes, process 0 writes it and the others nothing
    (`kbert.distribution.is_chief`): they hold the same weights.

    Args:
        out: path of the run folder.
        model: the trained Keras model.
        tokenizer: its `kbert.BertTokenizer`.
        metrics: dict, written as `metrics.json`; its `hyperparameters` and the other numbers
            (not `history`) go into the model card.
        history: dict of per-epoch metric lists, plotted as `curves.png`.
        title: str. Title of the plot and of the model card.
        extra_json: dict of file name -> content, more JSON files to write.
        data: dict of role -> data file, for the model card (`write_model_card`).
        logs: path of the folder of the fit's logs, or None.
    """
    if not is_chief():
        return
    with atomic_output_folder(out) as folder, writing_alone():
        _uncompiled(model, folder).save(folder / MODEL_FILE)
        tokenizer.save(folder)
        for name, content in {METRICS_FILE: metrics, **(extra_json or {})}.items():
            (folder / name).write_text(json.dumps(content, indent=2))
        plot_history(history, folder / "curves.png", title=title)
        write_model_card(folder, title, data or {}, metrics.get("hyperparameters", {}),
                         {k: v for k, v in metrics.items() if k not in ("hyperparameters", "history")})
        for name in LOG_NAMES if logs else ():
            if (pathlib.Path(logs) / name).exists():
                os.replace(pathlib.Path(logs) / name, folder / name)
        record_checksums(folder)


def parameter_counts(model):
    """(trainable, all): the numbers of `model`'s trainable and of all its weights (fewer trainable under LoRA).

    Example:
    >>> dense = keras.layers.Dense(2, trainable=False)
    >>> dense.build((None, 3))
    >>> parameter_counts(dense)
    (0, 8)
    """
    return tuple(sum(int(np.prod(w.shape)) for w in weights) for weights in (model.trainable_weights, model.weights))


def run_metrics(task, run, hyperparameters, model, backup, seconds, history, validation, best_epoch):
    """The `metrics.json` of a finished training run, the same fields for every task (fine-tuning and
    pretraining, through `kbert.training.training_run`): what ran (`task`, the
    backend, `run`, `hyperparameters`, the distribution, the machine's CPU: `kbert_core.cpu.describe_cpu`),
    the model's `parameters` and `trainable_parameters` (fewer under LoRA), its optimizer `steps` (and
    `resumed_at_step`), `fit_seconds` and `steps_per_second` (of this process's steps), `best_epoch` (the
    epoch whose weights the run kept), its `fit` history and its `validation` scores.

    Args:
        task: str. The app that trained it: "sentiment", "nli", "similarity", "ner", "qa", "pretrain", ...
        run: dict. What the run read (init, data, ...).
        hyperparameters: dict.
        model: the trained, compiled Keras model.
        backup: the run's `AtomicBackupAndRestore` (`run_backup`).
        seconds: float. Time in `fit`.
        history: `fit`'s `History`.
        validation: dict of the validation scores of the weights the run kept.
        best_epoch: int. The epoch of those weights, from 1 (`ValidationScores.best_epoch` where
            `EarlyStopping` restored the best; else the last).
    """
    steps = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    trainable, total = parameter_counts(model)
    return {
        "task": task, "backend": keras.config.backend(), **run, "hyperparameters": hyperparameters,
        "distribution": describe_distribution(), "machine": describe_cpu(),
        "parameters": total, "trainable_parameters": trainable,
        "steps": steps, "resumed_at_step": backup.resumed_step, "fit_seconds": round(seconds, 1),
        "steps_per_second": round((steps - backup.resumed_step) / seconds, 3), "best_epoch": best_epoch,
        "history": {k: [float(v) for v in values] for k, values in history.history.items()},
        "validation": validation,
    }

def _uncompiled(model, folder):
    """`model` without its optimizer, so that saving it skips the optimizer's state.

    The weights go through a weights file in `folder` (and LoRA updates are merged into
    the kernels on the way, as `model.save` does).
    """
    if getattr(model, "optimizer", None) is None:
        return model
    copy = model.__class__.from_config(model.get_config())
    weights = folder / "weights.weights.h5"
    model.save_weights(weights)
    copy.load_weights(weights)
    weights.unlink()
    return copy


def is_evaluation_file(path):
    """Whether `path` is a file that `write_evaluation` wrote: JSON whose first keys are model, data, backend.

    Example:
    >>> import tempfile
    >>> _, path = write_evaluation(tempfile.mkdtemp(), "dev.tsv", {"accuracy": 0.9})
    Wrote ...
    >>> is_evaluation_file(path), is_evaluation_file(path.parent)
    (True, False)
    """
    try:
        content = json.loads(pathlib.Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(content, dict) and list(content)[:3] == ["model", "data", "backend"]


def write_evaluation(model_dir, data, scores, out=None, summary=None, **fields):
    """Prints `summary` and writes an evaluation of the run folder `model_dir` on the file `data`.

    The JSON file `out` (default `MODEL_DIR/eval_<data file stem>.json`) holds `model`,
    `data`, `backend`, then `fields`, then `scores`.

    Returns: `(metrics, path)`, the dict written and where.

    Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> metrics, path = write_evaluation(folder, "data/dev.tsv", {"accuracy": 0.9}, summary="dev: 0.9")
    dev: 0.9
    Wrote .../eval_dev.json
    >>> path.name, list(metrics)
    ('eval_dev.json', ['model', 'data', 'backend', 'accuracy'])
    """
    metrics = {"model": str(model_dir), "data": str(data), "backend": keras.config.backend(), **fields, **scores}
    if summary:
        print(summary)
    out = pathlib.Path(out or pathlib.Path(model_dir) / f"eval_{pathlib.Path(data).stem}.json")
    write_json_atomic(out, metrics)
    print(f"Wrote {out}")
    return metrics, out
