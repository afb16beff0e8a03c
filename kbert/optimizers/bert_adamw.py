import keras
from keras import ops

from kbert.backend_speedups import active
from kbert.optimizers.schedules import WarmupLinearDecay


@keras.saving.register_keras_serializable(package="kbert")
class BertAdamW(keras.optimizers.AdamW):
    """AdamW with PyTorch's epsilon: added to the bias-corrected `sqrt(v_hat)`.

    Keras's Adam adds `epsilon` before the bias correction, which makes it
    `1 / sqrt(1 - beta_2**t)` times larger early on (31x at the first step): small
    gradients then move weights far less than under `torch.optim.AdamW`, the optimizer
    Hugging Face fine-tunes with. This one follows PyTorch's update, so the same
    recipe gives the same steps. Weight decay is Keras's (decoupled, `lr * wd * w`).
    On TensorFlow, embedding gradients (IndexedSlices) are summed per row before the
    update, as the other backends hand them. With `gradient_accumulation_steps=N`, a
    learning-rate schedule is read at the optimizer step (`iterations`, one per N batches),
    as Hugging Face's Trainer steps its scheduler, not at the batch count that Keras passes
    it: N micro-batches then update the weights as one step on their concatenation.
    A `WarmupLinearDecay(planned_by_fit=True)` schedule reads its plan from the variable
    `fit_plan`, which `plan_fit` sets: each `fit` of a kbert task plans anew without
    tracing its train step again.

    Example:
    >>> import numpy as np
    >>> w = keras.Variable(np.ones(2, "float32"))
    >>> optimizer = BertAdamW(learning_rate=0.1, weight_decay=0.0, epsilon=1e-6)
    >>> optimizer.apply([keras.ops.convert_to_tensor(np.array([1e-5, -2.0], "float32"))], [w])
    >>> [round(float(x), 4) for x in keras.ops.convert_to_numpy(w)]  # each moves ~lr, tiny gradients too
    [0.9091, 1.1]
    """

    # Its update is `torch_foreach_adamw.adamw_step`'s on torch, which the fused training step
    # (`kbert.backend_speedups.torch_train_step`) runs itself for an optimizer that says so.
    updates_as_adamw_step = True

    def apply(self, grads, trainable_variables=None):
        if keras.config.backend() == "tensorflow":
            import tensorflow as tf

            # An embedding's gradient comes as IndexedSlices, a row per occurrence of a token,
            # which Keras squares before it sums them (Adam's second moment, the global norm):
            # a token seen k times got sum(g_i^2), not (sum g_i)^2. Summed here first.
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return super().apply(grads, trainable_variables)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        if self.planned_by_fit:
            schedule = self._learning_rate
            plan = [schedule.start_step, schedule.warmup_steps, schedule.total_steps]
            # The plan as the initial value, not an assign: TensorFlow builds the optimizer
            # while it traces the train step, where an assign would never run.
            self.fit_plan = self.add_variable((3,), initializer=keras.initializers.Constant(plan),
                                              dtype="float32", name="fit_plan")

    @property
    def planned_by_fit(self):
        """Whether each `fit` of a kbert task lays out the learning-rate schedule (`plan_fit`)."""
        return getattr(self._learning_rate, "planned_by_fit", False)

    def plan_fit(self, total_steps):
        """Lays the schedule's warmup and decay over the next `total_steps` optimizer steps."""
        schedule = self._learning_rate
        schedule.plan(int(keras.ops.convert_to_numpy(self.iterations)), total_steps)  # a MirroredVariable has no int()
        if self.built:
            self.fit_plan.assign([schedule.start_step, schedule.warmup_steps, schedule.total_steps])

    def _get_current_learning_rate(self):
        if self.planned_by_fit and self.built:
            return self._learning_rate(self.iterations, plan=self.fit_plan)
        if isinstance(self._learning_rate, keras.optimizers.schedules.LearningRateSchedule):
            return self._learning_rate(self.iterations)
        return super()._get_current_learning_rate()

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        gradient = ops.cast(gradient, dtype)
        step = ops.cast(self.iterations + 1, dtype)
        beta_1_correction = 1 - ops.power(ops.cast(self.beta_1, dtype), step)
        root_beta_2_correction = ops.sqrt(1 - ops.power(ops.cast(self.beta_2, dtype), step))
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        # PyTorch's lr * m_hat / (sqrt(v_hat) + eps), with both bias corrections moved onto
        # the scalars (one pass less over each tensor):
        # lr * sqrt(c2) / c1 * m / (sqrt(v) + eps * sqrt(c2)).
        step_size = ops.cast(learning_rate, dtype) * root_beta_2_correction / beta_1_correction
        denominator = ops.add(ops.sqrt(v), self.epsilon * root_beta_2_correction)
        self.assign_sub(variable, ops.divide(ops.multiply(m, step_size), denominator))

    def _clip_gradients(self, grads):
        if not (self.global_clipnorm and active("torch_foreach_adamw")) or any(g is None for g in grads):
            return super()._clip_gradients(grads)
        from kbert.backend_speedups.torch_foreach_adamw import foreach_clip_by_global_norm

        return foreach_clip_by_global_norm(grads, self.global_clipnorm)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # Under torch, one fused update over all variables, as Keras's own torch optimizers do.
        if not active("torch_foreach_adamw"):
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        from kbert.backend_speedups.torch_foreach_adamw import foreach_update

        foreach_update(self, grads, trainable_variables, learning_rate)


def bert_adamw(learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, clipnorm=1.0,
               gradient_accumulation_steps=None):
    """AdamW as BERT trains: warmup then linear decay, no decay on LayerNorm or biases.

    The update is PyTorch's (`BertAdamW`), so a recipe carried over from Hugging Face
    behaves the same here.

    Args:
        learning_rate: float. Peak learning rate (2e-5..5e-5 to fine-tune, 1e-4 to pretrain).
        total_steps: int or None. Optimizer steps of the whole run; None lets each `fit` of
            a kbert task lay the warmup and decay over its own steps
            (`WarmupLinearDecay.plan`).
        warmup_ratio: float. Share of the steps spent warming up.
        weight_decay: float. Decoupled weight decay on kernels and embeddings.
        clipnorm: float or None. Global gradient-norm clipping.
        gradient_accumulation_steps: int or None. Average the gradients of this many
            batches into each optimizer step (as one step on their concatenation, for a
            mean-reduced loss); `total_steps` and the schedule count optimizer steps.
            None or 1: a step every batch.

    Example:
    >>> optimizer = bert_adamw(3e-5, total_steps=1000)
    >>> round(float(optimizer.learning_rate), 8)  # step 0 of the warmup
    0.0
    """
    optimizer = BertAdamW(
        learning_rate=WarmupLinearDecay(
            learning_rate, int(warmup_ratio * (total_steps or 1)), total_steps or 1,
            planned_by_fit=total_steps is None, warmup_ratio=warmup_ratio),
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=clipnorm,
        gradient_accumulation_steps=gradient_accumulation_steps if (gradient_accumulation_steps or 1) > 1 else None,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer


def plan_fit_schedule(optimizer, epochs, steps_per_epoch):
    """Lays `optimizer`'s learning-rate schedule over the optimizer steps of one `fit` of a kbert task, when
    the schedule is planned by fit (`bert_adamw(..., total_steps=None)`); nothing for any other schedule.

    Args:
        optimizer: the compiled optimizer: a `BertAdamW`, also within a `LossScaleOptimizer`.
        epochs: int. Epochs of the fit (0 counts as 1).
        steps_per_epoch: a function of no arguments: the batches of an epoch, or None if unknown. Called
            only for a schedule planned by fit. Gradient accumulation's batches per step are counted.

    Example:
    >>> optimizer = bert_adamw(3e-5, total_steps=None)
    >>> plan_fit_schedule(optimizer, epochs=2, steps_per_epoch=lambda: 50)
    >>> optimizer._learning_rate.total_steps
    100
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # under loss scaling
    if not getattr(getattr(optimizer, "_learning_rate", None), "planned_by_fit", False):
        return
    if not hasattr(optimizer, "plan_fit"):
        raise ValueError("A learning-rate schedule planned by fit needs the optimizer "
                         "kbert.optimizers.BertAdamW, which holds the plan.")
    steps = steps_per_epoch()
    if steps is None:
        raise ValueError("The learning-rate schedule is laid over the steps of fit, and this "
                         "dataset's length is unknown: pass steps_per_epoch, or compile with "
                         "an optimizer of your own.")
    accumulation = optimizer.gradient_accumulation_steps or 1  # batches per optimizer step
    optimizer.plan_fit(steps * max(epochs, 1) // accumulation)
