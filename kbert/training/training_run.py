"""The one skeleton of a training run, fine-tuning and pretraining alike (`training_run`): the callbacks every run
has around the run's own fit, its timing, the same `metrics.json` fields for every task (`run_metrics`), the run
folder, the backup; and `fine_tuning_run`, the skeleton filled in for a task model trained on raw inputs."""

import time

from kbert.tasks.class_weights import check_class_weight
from kbert.training.fit_progress import fit_progress
from kbert.training.non_finite_loss import StopOnNonFiniteLoss
from kbert.training.resumable_fit import resumable_fit
from kbert.training.resume_policy import run_backup
from kbert.training.results import run_metrics, write_run_folder
from kbert.training.time_budget import TimeBudget
from kbert.training.training_logs import fine_tuning_logs


def training_run(model, task, run, hyperparameters, backup, fit, scores, write, callbacks=(), logs=None,
                 title="fine-tune", verbose="auto", keep_backup=False):
    """Trains `model` through `fit`, writes its run folder through `write`, and returns the metrics written.

    What every training run does around what is its own (what it reads, which task, which metric):
    `fit(callbacks, verbose)` runs with `[StopOnNonFiniteLoss(backup), *callbacks, backup, *logs,
    *progress]` (a loss that goes NaN or infinite stops it, keeping the last good backup; `backup`,
    a `run_backup`, resumes a killed run and refuses one with other settings), timed; `scores(history)`
    gives the validation scores of the weights the run keeps and their epoch; the metrics, the same
    fields for every task (`run_metrics`: timing, steps, schedule), go to `write(metrics, history)`;
    then the backup is deleted, unless `keep_backup` (pretraining keeps it to train further).

    Args:
        model: the compiled Keras model.
        task, run, hyperparameters: as `run_metrics`'s.
        backup: the run's `AtomicBackupAndRestore` (`run_backup`).
        fit: callable `(callbacks, verbose) -> History`: the run's fit (`resumable_fit` on raw inputs, a stream).
        scores: callable `(history) -> (validation scores, best epoch)`.
        write: callable `(metrics, history)`: writes the run folder (or the end of it).
        callbacks: the run's own callbacks (validation scores, early stopping, a `TimeBudget`, whose stop the
            progress lines count to), before the backup.
        logs: a context manager that yields the log callbacks (default `fine_tuning_logs(backup)`).
        title: str. Of the progress lines.
        verbose: as `kbert.training.fit_progress`.
        keep_backup: bool. Keep the backup once the run folder is written.

    Example:
    >>> import pathlib, tempfile, keras, numpy as np
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = run_backup(out, {"epochs": 2})
    >>> fit = lambda callbacks, verbose: model.fit(np.zeros((4, 2)), np.zeros((4, 1)), epochs=2, callbacks=callbacks,
    ...                                            verbose=verbose)
    >>> metrics = training_run(model, "toy", {}, {"epochs": 2}, backup, fit, lambda history: ({}, 2),
    ...                        lambda metrics, history: None, verbose=0)
    >>> metrics["steps"], metrics["resumed_at_step"], metrics["best_epoch"], sorted(out.parent.iterdir())
    (2, 0, 2, [])
    """
    budgets = [callback for callback in callbacks if isinstance(callback, TimeBudget)]
    verbose, progress = fit_progress(verbose, title=title, budgets=budgets)
    start = time.perf_counter()
    with logs or fine_tuning_logs(backup) as log_callbacks:
        history = fit([StopOnNonFiniteLoss(backup), *callbacks, backup, *log_callbacks, *progress], verbose)
    seconds = time.perf_counter() - start
    validation, best_epoch = scores(history)
    metrics = run_metrics(task, run, hyperparameters, model, backup, seconds, history, validation, best_epoch)
    write(metrics, history)
    if not keep_backup:
        backup.delete()
    return metrics


def fine_tuning_run(model, x, y, out, training, task, run, inputs, title, data, hyperparameters=None, scorer=None,
                    stopping=None, final_scores=None, curves=None, measured=None, callbacks=(), prepare=None):
    """Fits `model` on `(x, y)` and writes the run folder `out`; returns `(metrics, validation scores)`.

    `training_run` for a task model trained on raw inputs as `training` (a `FineTuning`) says. The run is backed up
    beside `out` at each epoch's end and every `backup_minutes` within one, with the state of `scorer` and
    `stopping`: the same call after a kill resumes from the last backup on the batches the
    uninterrupted run had (`run_backup`, `resumable_fit`); a backup of a run with other settings
    (`run`, the hyperparameters, the data files' contents) is refused, naming them
    (`kbert.saving.SettingsChangedError`), unless `restart` deletes it first. The validation scores
    are the best epoch's (`scorer`, a `ValidationScores`, with `stopping` restoring that epoch), or,
    without a scorer, `final_scores(model)` after the last epoch, which returns `(scores, {file name:
    JSON})` of more files for the folder. `metrics.json` has the same fields for every task (`run_metrics`).

    Args:
        model: a compiled `BertTask` with its preprocessor (`FineTuning.task_model`).
        x, y: its raw training inputs and labels.
        out: path of the run folder.
        training: `kbert.training.fine_tuning.FineTuning`. Epochs, batch size, the seed of the shuffles, backups,
            `restart`, progress (`verbose`); its `hyperparameters` are settings of the run.
        task: str. The recipe's name ("sentiment", "ner", "qa", "embedding", ...).
        run: dict. What the run reads: its settings.
        inputs: tuple of paths. The data files, whose change since a backup is refused.
        title: str. Of the model card and the curves.
        data: dict of role -> data file, for the model card.
        hyperparameters: dict or None. The recipe's own settings of how it trains (e.g. `patience`), recorded
            beside `training`'s.
        scorer, stopping: a `ValidationScores` and a `keras.callbacks.EarlyStopping`, or None.
        final_scores: callable, without a scorer (see above).
        curves: callable from the history dict to the curves to plot (default: the history).
        measured: dict or None. More fields of `metrics.json` that are measured, not settings (never compared).
        callbacks: more callbacks for the fit, whose state no backup keeps (the demo's time budget).
        prepare: callable `(x, y, folder) -> (x, y)` or None. Run once the resume policy has let the run start or
            resume, before the fit: the inputs that cost time to make, which a refused rerun must not wait for (a
            teacher's outputs), and may keep in `folder` (the backup's `prepared_dir`) for a rerun to read.
    """
    if training.class_weight is not None:
        check_class_weight(model, training.class_weight, y)  # before the backup folder is made
    backed_up = [callback for callback in (scorer, stopping) if callback is not None]
    hyperparameters = training.hyperparameters(model, **(hyperparameters or {}))
    backup = run_backup(out, {**run, **hyperparameters}, backed_up, every_steps=training.backup_steps,
                        every_minutes=training.backup_minutes, inputs=inputs, restart=training.restart)
    if prepare is not None:
        x, y = prepare(x, y, backup.prepared_dir)
    files = {}

    def fit(callbacks, verbose):
        return resumable_fit(model, x, y, backup, epochs=training.epochs, batch_size=training.batch_size,
                             shuffle_seed=training.seed, class_weight=training.class_weight, verbose=verbose,
                             callbacks=callbacks)

    def scores(history):
        if scorer is not None:
            return scorer.best, scorer.best_epoch  # the epoch EarlyStopping restored
        validation, more = final_scores(model)
        files.update(more)
        return validation, len(history.history["loss"])  # the last epoch

    def write(metrics, history):
        write_run_folder(out, model, model.preprocessor.tokenizer, metrics, (curves or dict)(history.history),
                         title=title, extra_json=files, data=data, logs=backup.backup_dir)

    metrics = training_run(model, task, {**run, **(measured or {})}, hyperparameters, backup, fit, scores, write,
                           [*backed_up, *callbacks], verbose=training.verbose)
    return metrics, metrics["validation"]
