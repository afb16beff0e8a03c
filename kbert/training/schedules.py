import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's learning rate: linear warmup from 0 to `peak`, then linear decay to 0.

    Args:
        peak: float. Learning rate at the end of the warmup.
        warmup_steps: int. Steps of the linear warmup.
        total_steps: int. Step at which the rate reaches 0 (and stays there).

    Example:
    >>> schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(s)), 6) for s in (0, 5, 10, 60, 110, 200)]
    [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
    >>> round(float(WarmupLinearDecay(1e-3, warmup_steps=0, total_steps=100)(0)), 6)  # no warmup
    0.001
    """

    def __init__(self, peak, warmup_steps, total_steps):
        if not 0 <= warmup_steps <= total_steps or total_steps <= 0:
            raise ValueError(
                f"Need 0 <= warmup_steps <= total_steps and total_steps > 0; got "
                f"warmup_steps={warmup_steps}, total_steps={total_steps}."
            )
        self.peak = peak
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = step / self.warmup_steps if self.warmup_steps else 1.0
        decay = (self.total_steps - step) / max(self.total_steps - self.warmup_steps, 1)
        return self.peak * ops.clip(ops.minimum(warmup, decay), 0.0, 1.0)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps}
