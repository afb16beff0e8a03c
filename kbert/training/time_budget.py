"""`TimeBudget`: ends `fit` at the step that lands its end on a deadline, re-planned from the steps as they run."""

import time

import keras
import numpy as np

from kbert.progress import duration


class TimeBudget(keras.callbacks.Callback):
    """Stops `fit` at the step whose end, with the epoch ends still ahead, lands at `deadline`.

    The first plan, `planned_steps`, comes from before the fit (a few timed steps of a probe, which can be
    off by 2x). Every `replan_seconds` of fitting (the first after `warmup_steps` untimed steps) the
    callback times the steps of the last interval and re-plans the steps left (`steps_that_fit`), so the
    fit ends on time on whatever machine; also at the planned last step, before stopping there (the first
    plan may have erred short), and as soon as a step at the interval's pace would overrun the deadline. A
    learning rate that `fit` plans (`bert_adamw(total_steps=None)`) decays to 0 at the planned last step,
    laid again at each re-plan (the warmup kept). A re-plan that goes on prints a line (the progress lines count
    to the last step a re-plan would find: `steps_left`). `plans` lists each plan: (steps done, seconds a step,
    last step). `steps` counts the steps this callback has seen.

    Args:
        deadline: float. When the fit should have returned, on `clock`.
        planned_steps: int. The last step of the first plan (counted from this callback's first step).
        epoch_end_seconds: float. What an epoch's end takes (validation, backup) until one is timed.
        replan_seconds: float. Seconds of fitting between re-plans.
        warmup_steps: int. Steps before the first timed interval (they compile and warm caches).
        clock: callable. The time in seconds (`time.perf_counter`; a test's fake clock).

    Example:
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> budget = TimeBudget(deadline=time.perf_counter() + 600, planned_steps=3)
    >>> _ = model.fit(np.ones((20, 1)), np.ones((20, 1)), batch_size=2, verbose=0, callbacks=[budget])
    >>> budget.steps
    3
    """

    def __init__(self, deadline, planned_steps, epoch_end_seconds=0.0, replan_seconds=60.0, warmup_steps=3,
                 clock=time.perf_counter):
        super().__init__()
        self.deadline, self.epoch_end_seconds, self.clock = deadline, epoch_end_seconds, clock
        self.replan_seconds, self.warmup_steps = replan_seconds, warmup_steps
        self.last_step, self.steps, self.plans = planned_steps, 0, [(0, None, planned_steps)]
        self.fit_end_step = self.steps_per_epoch = None
        self.timed_from = self.batch_ended = None  # (step, time) of the interval's start; time of the last step's end
        self.epoch_end_timed = False

    def on_train_begin(self, logs=None):
        if self.steps == 0:  # the first fit of the run (a resumed run fits twice: the rest of an epoch, then on)
            self._end_decay_at_last_step(warmup_ratio_of_plan=True)

    def on_epoch_begin(self, epoch, logs=None):
        self.steps_per_epoch = self.params.get("steps")
        if self.steps_per_epoch and self.fit_end_step is None:
            self.fit_end_step = self.steps + self.steps_per_epoch * (self.params["epochs"] - epoch)

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        self.batch_ended = now = self.clock()
        if self.steps == self.warmup_steps:
            self.timed_from = (self.steps, now)
        elif self.timed_from and (now - self.timed_from[1] >= self.replan_seconds or self.steps >= self.last_step
                                  or self._next_step_overruns(now)):
            self._replan(now)  # also before stopping (the plan may have erred short) and before an overrun
        if self.steps >= self.last_step:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        if self.batch_ended is None:
            return
        took = self.clock() - self.batch_ended  # the callbacks before this one: validation, backup
        if self.timed_from:  # the interval's steps exclude it
            self.timed_from = (self.timed_from[0], self.timed_from[1] + took)
        self.epoch_end_seconds, self.epoch_end_timed = took, True

    def steps_left(self):
        """The steps the fit has still to run: to the last step a re-plan would find now, at the pace of the steps
        timed since the last plan (the plan itself before any are timed). `kbert.training.fit_progress.FitProgress`
        counts to them."""
        if not self.timed_from or self.steps <= self.timed_from[0]:
            return max(self.last_step - self.steps, 0)
        return max(self._last_step_at(self.batch_ended) - self.steps, 0)

    def _seconds_each(self, now):
        """Seconds a step since the last plan (the interval's steps, their epoch ends excluded)."""
        first, start = self.timed_from
        return (now - start) / (self.steps - first)

    def _last_step_at(self, now):
        """The last step that lands the fit's end on the deadline at the interval's pace (`steps_that_fit`)."""
        return steps_that_fit(self.deadline - now, self._seconds_each(now), self.steps, self.epoch_end_seconds,
                              self.steps_per_epoch, self.fit_end_step)

    def _next_step_overruns(self, now):
        """Whether one more step at this interval's pace, and the epoch's end, would pass the deadline: a machine
        that slowed down since the last plan (others' jobs started) stops on time, not at the next re-plan."""
        return now + self._seconds_each(now) + self.epoch_end_seconds > self.deadline

    def _replan(self, now):
        seconds_each, self.last_step = self._seconds_each(now), self._last_step_at(now)
        self.plans.append((self.steps, round(seconds_each, 4), self.last_step))
        self.timed_from = (self.steps, now)
        if self.last_step > self.steps:
            print(f"time budget: {seconds_each:.2f} s a step since the last plan: stopping at step {self.last_step:,}, "
                  f"about {duration(self.deadline - now)} from now", flush=True)
        self._end_decay_at_last_step(warmup_ratio_of_plan=False)

    def _end_decay_at_last_step(self, warmup_ratio_of_plan):
        """Lays a learning-rate schedule that `fit` plans to decay to 0 at `last_step`: its warmup over its share of
        the planned steps at the start, kept as it is at a re-plan."""
        optimizer = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)
        schedule = getattr(optimizer, "_learning_rate", None)
        if not getattr(schedule, "planned_by_fit", False):
            return
        accumulation = getattr(optimizer, "gradient_accumulation_steps", None) or 1
        iteration = int(keras.ops.convert_to_numpy(optimizer.iterations))
        if optimizer.built:  # the plan in use (a resumed run's, restored from its backup)
            schedule.start_step, schedule.warmup_steps, _ = np.asarray(
                keras.ops.convert_to_numpy(optimizer.fit_plan)).astype(int).tolist()
        total = iteration - schedule.start_step + max(self.last_step - self.steps, 0) // accumulation
        if warmup_ratio_of_plan:
            schedule.plan(iteration, total)
        else:
            schedule.total_steps, schedule.warmup_steps = max(total, 1), min(schedule.warmup_steps, max(total, 1))
        if optimizer.built:
            optimizer.fit_plan.assign([schedule.start_step, schedule.warmup_steps, schedule.total_steps])


def steps_that_fit(seconds_left, seconds_each, step, epoch_end_seconds, steps_per_epoch=None, fit_end_step=None):
    """The last step of a fit at `step` that has `seconds_left`: as many more steps of `seconds_each` as fit with
    `epoch_end_seconds` for each epoch end they reach (every `steps_per_epoch` steps; one at `step` itself is
    ahead: this runs at a step's end) and for the fit's last; at least `step` (stop now), at most `fit_end_step`.

    >>> steps_that_fit(100, 1.0, step=0, epoch_end_seconds=10)  # 90 steps, then the epoch's end
    90
    >>> steps_that_fit(100, 1.0, step=0, epoch_end_seconds=10, steps_per_epoch=50)  # an epoch end at step 50 too
    80
    >>> steps_that_fit(100, 1.0, step=20, epoch_end_seconds=10, fit_end_step=60), steps_that_fit(5, 1.0, 20, 10)
    (60, 20)
    """
    def seconds(more):  # the steps, the epoch ends ahead (`step`'s own too: it runs after it), the last
        last = step + more
        ends = last // steps_per_epoch - (max(step, 1) - 1) // steps_per_epoch if steps_per_epoch else 0
        last_is_an_epoch_end = bool(steps_per_epoch) and last > 0 and last % steps_per_epoch == 0
        return more * seconds_each + epoch_end_seconds * (ends + (not last_is_an_epoch_end))

    low, high = 0, max(int(seconds_left / seconds_each), 0)  # seconds(more) grows with more: the largest that fits
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if seconds(middle) <= seconds_left else (low, middle - 1)
    last = step + low
    return min(last, fit_end_step) if fit_end_step is not None else last
