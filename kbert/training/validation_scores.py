import keras


class ValidationScores(keras.callbacks.Callback):
    """Scores the model on held-out data once after each epoch; logs some scores, keeps the best epoch's.

    One pass over the validation data gives both what early stopping watches and the full
    scores the run reports (a confusion matrix, entity F1 by type, ...): no `validation_data`
    for `fit`, and no second pass after it. Put it before `EarlyStopping` (which reads the
    logs it adds) and before the loggers. `best` is the full scores of the epoch with the
    best `monitor` (the first of equals, as `EarlyStopping` picks it); a resumed fit gets
    it back from the backup (`backed_up`).

    Args:
        score: callable(model) -> dict of scores on the validation data.
        logged: dict of log name -> score name, e.g. `{"val_entity_f1": "f1"}`.
        monitor: str. The log name that decides the best epoch.
        mode: "max" or "min".

    Example:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> scores = ValidationScores(lambda m: {"mse": float(np.mean(m.predict(np.ones((2, 1)), verbose=0) ** 2))},
    ...                           {"val_loss": "mse"}, "val_loss", mode="min")
    >>> history = model.fit(np.ones((2, 1)), np.zeros((2, 1)), epochs=2, callbacks=[scores], verbose=0)
    <BLANKLINE>
    epoch 1: val_loss ...
    <BLANKLINE>
    epoch 2: val_loss ...
    >>> scores.best["mse"] == min(history.history["val_loss"])
    True
    """

    backed_up = ("best", "best_epoch")  # what `AtomicBackupAndRestore` saves and restores

    def __init__(self, score, logged, monitor, mode="max"):
        super().__init__()
        self.score, self.logged, self.monitor, self.mode = score, dict(logged), monitor, mode
        self.best = None
        self.best_epoch = None  # counted from 1

    def on_epoch_end(self, epoch, logs=None):
        scores = self.score(self.model)
        added = {name: float(scores[key]) for name, key in self.logged.items()}
        if logs is not None:
            logs.update(added)
        if self.best is None or self._better(added[self.monitor], self._best_value()):
            self.best, self.best_epoch = scores, epoch + 1
        print(f"\nepoch {epoch + 1}: " + ", ".join(f"{name} {value:.4f}" for name, value in added.items()))

    def _best_value(self):
        return float(self.best[self.logged[self.monitor]])

    def _better(self, value, best):
        return value > best if self.mode == "max" else value < best
