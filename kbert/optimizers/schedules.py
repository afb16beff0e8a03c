import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's learning rate: linear warmup from 0 to `peak`, then linear decay to 0.

    The steps count from `start_step` (0: the optimizer's first step). A schedule made with
    `planned_by_fit=True` is laid out again by each `fit` of a kbert task (`plan`): warmup
    over `warmup_ratio` of that call's steps, then decay to 0 at its last step.

    Args:
        peak: float. Learning rate at the end of the warmup.
        warmup_steps: int. Steps of the linear warmup.
        total_steps: int. Steps after `start_step` at which the rate reaches 0 (and stays).
        start_step: int. The optimizer step at which the warmup begins.
        planned_by_fit: bool. Let each task `fit` call `plan` with its own step count.
        warmup_ratio: float. Share of the steps spent warming up, when `fit` plans.

    Example:
    >>> schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(s)), 6) for s in (0, 5, 10, 60, 110, 200)]
    [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
    >>> round(float(WarmupLinearDecay(1e-3, warmup_steps=0, total_steps=100)(0)), 6)  # no warmup
    0.001
    >>> schedule.plan(start_step=200, total_steps=20)  # a second fit: warm up and decay again
    >>> [round(float(schedule(s)), 6) for s in (200, 202, 211, 220)]
    [0.0, 0.001, 0.0005, 0.0]
    """

    def __init__(self, peak, warmup_steps, total_steps, start_step=0, planned_by_fit=False,
                 warmup_ratio=0.1):
        if not 0 <= warmup_steps <= total_steps or total_steps <= 0:
            raise ValueError(
                f"Need 0 <= warmup_steps <= total_steps and total_steps > 0; got "
                f"warmup_steps={warmup_steps}, total_steps={total_steps}."
            )
        self.peak = peak
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.start_step = start_step
        self.planned_by_fit = planned_by_fit
        self.warmup_ratio = warmup_ratio

    def plan(self, start_step, total_steps):
        """Lays the warmup and decay over `total_steps` optimizer steps from `start_step`."""
        total_steps = max(int(total_steps), 1)
        self.start_step = int(start_step)
        self.total_steps = total_steps
        self.warmup_steps = int(self.warmup_ratio * total_steps)

    def __call__(self, step, plan=None):
        """The rate at `step`; `plan`: a float tensor `[start_step, warmup_steps, total_steps]`
        to read instead of the attributes (the optimizer's `fit_plan` variable)."""
        # Python numbers enter only through operators on tensors, never as arguments of `ops`:
        # under torch on a GPU, `ops.maximum(x, 1.0)` copies 1.0 to the GPU and waits until the
        # GPU has run its queue, so the optimizer's step could not be queued during the backward.
        step = ops.cast(step, "float32")
        one = ops.ones_like(step)
        if plan is None:
            start_step, warmup_steps, total_steps = self.start_step, self.warmup_steps * one, self.total_steps * one
        else:
            start_step, warmup_steps, total_steps = (ops.cast(plan[i], "float32") for i in range(3))
        step = step - start_step
        warmup = ops.where(warmup_steps > 0, step / ops.maximum(warmup_steps, one), one)
        decay = (total_steps - step) / ops.maximum(total_steps - warmup_steps, one)
        return self.peak * ops.minimum(ops.relu(ops.minimum(warmup, decay)), one)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps,
                "start_step": self.start_step, "planned_by_fit": self.planned_by_fit,
                "warmup_ratio": self.warmup_ratio}
