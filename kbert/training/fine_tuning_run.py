"""`fine_tuning_run`: the part every fine-tuning recipe shares, from a compiled model and its data to the
written run folder: backups beside it, a resumable fit, logs, the metrics file and the folder itself."""

import time

from kbert.training.fit_progress import fit_progress
from kbert.training.non_finite_loss import StopOnNonFiniteLoss
from kbert.training.resumable_fit import resumable_fit
from kbert.training.run_backup import run_backup
from kbert.training.run_results import run_metrics, write_run_folder
from kbert.training.training_logs import fine_tuning_logs


def fine_tuning_run(model, x, y, out, task, run, hyperparameters, inputs, title, data, scorer=None, stopping=None,
                    final_scores=None, curves=None, backup_steps=None, backup_minutes=5.0, verbose="auto"):
    """Fits `model` on `(x, y)` and writes the run folder `out`; returns `(metrics, validation scores)`.

    The run is backed up beside `out` at each epoch's end and every `backup_minutes` within one,
    with the state of `scorer` and `stopping`: the same call after a kill resumes from the last
    backup on the batches the uninterrupted run had (`run_backup`, `resumable_fit`); a backup of a
    run with other settings (`run`, `hyperparameters`, the data files' contents) is not resumed but
    deleted. A loss that goes NaN or infinite stops training (`kbert.training.NonFiniteLossError`),
    keeping the last good backup. The validation scores are the best epoch's (`scorer`, a
    `ValidationScores`, with `stopping` restoring that epoch), or, without a scorer,
    `final_scores(model)` after the last epoch, which returns `(scores, {file name: JSON})` of more
    files for the folder. `metrics.json` has the same fields for every task (`run_metrics`).

    Args:
        model: a compiled `BertTask` with its preprocessor.
        x, y: its raw training inputs and labels.
        out: path of the run folder.
        task: str. The recipe's name ("sentiment", "ner", "qa", "embedding", ...).
        run, hyperparameters: dicts. What the run reads and how it trains; `hyperparameters` holds at
            least `epochs`, `batch_size` and `seed` (which seeds the shuffles).
        inputs: tuple of paths. The data files, whose change since a backup is refused.
        title: str. Of the model card and the curves.
        data: dict of role -> data file, for the model card.
        scorer, stopping: a `ValidationScores` and a `keras.callbacks.EarlyStopping`, or None.
        final_scores: callable, without a scorer (see above).
        curves: callable from the history dict to the curves to plot (default: the history).
        backup_steps, backup_minutes: as `run_backup`'s `every_steps` and `every_minutes`.
        verbose: as `kbert.training.fit_progress`.
    """
    callbacks = [callback for callback in (scorer, stopping) if callback is not None]
    backup = run_backup(out, {**run, **hyperparameters}, callbacks, every_steps=backup_steps,
                        every_minutes=backup_minutes, inputs=inputs)
    verbose, progress = fit_progress(verbose)
    start = time.perf_counter()
    with fine_tuning_logs(backup) as logs:
        history = resumable_fit(model, x, y, backup, epochs=hyperparameters["epochs"],
                                batch_size=hyperparameters["batch_size"], shuffle_seed=hyperparameters["seed"],
                                verbose=verbose,
                                callbacks=[StopOnNonFiniteLoss(backup), *callbacks, backup, *logs, *progress])
    seconds = time.perf_counter() - start
    if scorer is not None:
        validation, files, best_epoch = scorer.best, {}, scorer.best_epoch  # the epoch EarlyStopping restored
    else:
        (validation, files), best_epoch = final_scores(model), len(history.history["loss"])  # the last epoch
    metrics = run_metrics(task, run, hyperparameters, model, backup, seconds, history, validation, best_epoch)
    write_run_folder(out, model, model.preprocessor.tokenizer, metrics,
                     (curves or dict)(history.history), title=title, extra_json=files, data=data,
                     logs=backup.backup_dir)
    backup.delete()
    return metrics, validation
