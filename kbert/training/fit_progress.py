import keras

from kbert.progress import ProgressLines, duration, progress_mode


class FitProgress(keras.callbacks.Callback):
    """`fit`'s progress as plain lines (`kbert.progress.ProgressLines`): every `every_seconds`, the
    steps done of the fit's, the loss so far this epoch, the time a step takes and the time left;
    and a line at the end of each epoch. For logs, CI jobs and notebook cells, where Keras's bar
    prints nothing until an epoch ends. Under a time budget that stops the fit sooner, the steps
    and the time left are those to the step where the budget would stop it (`TimeBudget.steps_left`).

    Args:
        title: str. What is trained, at the start of each line.
        every_seconds: float. Seconds between lines.
        budgets: the fit's `kbert.training.time_budget.TimeBudget`s, listed before this callback.

    Example:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.ones((4, 1)), np.ones((4, 1)), batch_size=2, epochs=2, verbose=0,
    ...               callbacks=[FitProgress("toy", every_seconds=0)])
    toy, epoch 1/2: step 1/4 (25%), loss ...
    toy: epoch 2/2 done in ... s, loss ...
    """

    def __init__(self, title="fine-tune", every_seconds=30.0, budgets=()):
        super().__init__()
        self.title, self.every_seconds, self.budgets = title, every_seconds, list(budgets)
        self.progress = self.fit_steps = None

    def on_train_begin(self, logs=None):
        self.progress = None

    def on_epoch_begin(self, epoch, logs=None):
        epochs, steps = self.params["epochs"], self.params.get("steps")
        if self.progress is None and steps:  # the steps still to go in this fit (it may resume at a later epoch)
            self.fit_steps = steps * (epochs - epoch)
            self.progress = ProgressLines(self.fit_steps, self.title, "step", self.every_seconds)
        if self.progress is not None:
            self.progress.title = f"{self.title}, epoch {epoch + 1}/{epochs}"
        self.epoch_start = self.progress.clock() if self.progress else None

    def on_train_batch_end(self, batch, logs=None):
        if self.progress is not None:
            if self.budgets:  # the budgets have counted this step: the fit ends at the first end planned
                ends = [self.fit_steps] + [self.progress.done + 1 + budget.steps_left() for budget in self.budgets]
                self.progress.total = min(ends)
            self.progress.add(1, lambda: _numbers(logs, ("loss",)))

    def on_epoch_end(self, epoch, logs=None):
        took = f" in {duration(self.progress.clock() - self.epoch_start)}" if self.progress else ""
        scores = ", ".join(f"{name} {value:.4f}" for name, value in _numbers(logs).items())
        print(f"{self.title}: epoch {epoch + 1}/{self.params['epochs']} done{took}" + (f", {scores}" if scores else ""),
              flush=True)


def fit_progress(verbose, title="fine-tune", budgets=()):
    """(verbose, callbacks) for `fit` from a `verbose` setting of the recipes (`kbert.progress.progress_mode`):
    Keras's bar or epoch lines as Keras prints them; "lines" (and "auto" off a terminal) as `FitProgress`, which
    counts to the end that the fit's time `budgets` plan, if sooner.

    Example:
    >>> fit_progress(1), fit_progress(0)
    ((1, []), (0, []))
    >>> verbose, callbacks = fit_progress("lines")
    >>> verbose, type(callbacks[0]).__name__
    (0, 'FitProgress')
    """
    mode = progress_mode(verbose)
    if mode == "lines":
        return 0, [FitProgress(title, budgets=budgets)]
    return {None: 0, "bar": 1, "epochs": 2}[mode], []


def _numbers(logs, names=None):
    """The values of `logs` (all, or `names`) as floats."""
    return {name: float(value) for name, value in (logs or {}).items()
            if (names is None or name in names) and value is not None}
