"""`FineTuning`: how a task model is fine-tuned, one value from the apps' flags (or Python) through a recipe to
`fine_tuning_run`; it builds the recipe's task model the one way every recipe builds it."""

import dataclasses

import keras

from kbert.optimizers import bert_adamw, mixed_compute
from kbert.training.remat import rematerialized


@dataclasses.dataclass(frozen=True)
class FineTuning:
    """The settings of a fine-tuning run (BERT's recipe), and how its model is built.

    Args:
        epochs: int. Passes over the training data.
        batch_size: int. Examples per step.
        learning_rate: float or None. The peak rate of `bert_adamw` (10% warmup, then linear decay to 0);
            None: the task's `default_learning_rate`.
        seed: int. Seeds the head's initialization, dropout, the shuffles, and the recipe's splits.
        mixed_precision: True or "bfloat16": compute in bfloat16 ("mixed_bfloat16"), keep float32 weights;
            "float16": compute in float16 under loss scaling (GPUs without bfloat16); False: float32
            (`kbert.optimizers.mixed_compute`).
        gradient_accumulation: int. Step the optimizer once every this many batches, on their mean gradient
            (the effective batch is `gradient_accumulation * batch_size`).
        remat: bool. Recompute each transformer block in the backward pass (`rematerialized`).
        backup_steps, backup_minutes: int or None, float or None. Back up within an epoch every this many steps,
            or once this many minutes have passed since the last backup (`run_backup`).
        class_weight: None, `{class name or id: weight}` or "balanced": weigh each example (a token classifier's
            each word) by its class (`BertTask.fit`); recorded where given.
        restart: bool. Start over: delete the backup of an earlier run first.
        verbose: 0 silent, 1 Keras's progress bar, 2 a line per epoch, "lines" a line every 30 s with the time
            left, "auto" a bar on a terminal, else lines (`kbert.training.fit_progress`).

    Example:
    >>> from kbert.tasks import BertClassifier
    >>> training = FineTuning(epochs=1, batch_size=8, seed=3)
    >>> model = training.task_model(BertClassifier, "bert_tiny", num_classes=2)
    >>> round(float(model.optimizer.learning_rate), 9), training.hyperparameters(model, patience=1)["learning_rate"]
    (3e-05, 3e-05)
    """

    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = None
    seed: int = 0
    mixed_precision: object = False
    gradient_accumulation: int = 1
    remat: bool = False
    backup_steps: int = None
    backup_minutes: float = 5.0
    class_weight: object = None
    restart: bool = False
    verbose: object = "auto"

    def task_model(self, task_class, init, **arguments):
        """`task_class.from_preset(init, **arguments)`, seeded, built in mixed precision and with remat as asked,
        and compiled with `bert_adamw` at `learning_rate` with `gradient_accumulation` (`built`)."""
        return self.built(lambda: task_class.from_preset(init, compile=False, **arguments))

    def built(self, build):
        """The uncompiled task model `build()` returns, built seeded, in mixed precision and with remat as asked,
        and compiled with `bert_adamw` at `learning_rate` with `gradient_accumulation` (a distillation's student:
        `kbert.training.distillation`)."""
        keras.utils.set_random_seed(self.seed)
        with mixed_compute(self.mixed_precision), rematerialized(self.remat):
            model = build()
        model.compile(optimizer=bert_adamw(self.learning_rate or model.default_learning_rate, total_steps=None,
                                           gradient_accumulation_steps=self.gradient_accumulation))
        return model

    def hyperparameters(self, model, **more):
        """How the run of `model` trains, as `metrics.json` records it and a resumed run must repeat: these
        settings but those of how it runs (backups, restart, progress), and the recipe's `more`."""
        return {"epochs": self.epochs, "batch_size": self.batch_size,
                "learning_rate": self.learning_rate or model.default_learning_rate,
                "mixed_precision": self.mixed_precision, "gradient_accumulation": self.gradient_accumulation,
                "remat": self.remat, "seed": self.seed,
                **({} if self.class_weight is None else {"class_weight": self.class_weight}), **more}
