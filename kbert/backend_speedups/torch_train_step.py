"""PyTorch backend only: what `BertTask`'s steps gather from the model (its trainable weights, their optimizer
moments, its metrics, the backbone's weights) kept between steps until the model changes, and `fit`'s training
step on them.

Keras's torch trainer walks every layer for these at each step: the trainable weights three times, the metrics
once, each variable's `.value` read four times (~840 reads a step for BERT-base), the weight decay in a pass of
its own. Here they are gathered once per model and kept until `changes()` moves: Keras's every way of changing
which variables, layers or metrics a model has, or which of them train (a layer frozen or unfrozen, LoRA
enabled, a layer quantized, a weight added or removed), passes through the five methods `_count_changes` wraps:
`Layer.trainable`'s and the torch `Variable.trainable`'s setters, and the `Tracker`'s `add_to_store`, `untrack`
and `replace_tracked_value`, which every layer's weights, sublayers and metrics are stored with. Reading a
model's structure at each step to compare would cost the walk this saves.
"""

import functools

import keras
import torch
from keras.src.backend.torch.core import Variable as TorchVariable
from keras.src.utils.tracking import Tracker

from kbert.backend_speedups import active

_changes = 0


def changes():
    """How many changes Keras has made so far to which variables, layers or metrics any model has, or which
    of them train.

    Example:
    >>> layer = keras.layers.Dense(2)
    >>> before = changes()
    >>> layer.build((None, 3))  # two weights added
    >>> layer.trainable = False
    >>> changes() > before
    True
    """
    return _changes


def _counting(function):
    @functools.wraps(function)
    def counted(*args, **kwargs):
        global _changes
        _changes += 1
        return function(*args, **kwargs)

    return counted


def _count_changes():
    for name in ("add_to_store", "untrack", "replace_tracked_value"):
        setattr(Tracker, name, _counting(getattr(Tracker, name)))
    for cls in (keras.layers.Layer, TorchVariable):
        setattr(cls, "trainable", property(cls.trainable.fget, _counting(cls.trainable.fset)))


_count_changes()


def gathered(owner, name, gather, key=()):
    """`gather()`, kept on `owner` (under `name`) while no model changes (`changes()`) and `key` is the same.

    Example:
    >>> layer = keras.layers.Dense(2)
    >>> layer.build((None, 3))
    >>> len(gathered(layer, "weights", lambda: layer.trainable_weights))
    2
    >>> layer.trainable = False
    >>> len(gathered(layer, "weights", lambda: layer.trainable_weights))
    0
    """
    kept = owner.__dict__.get("__kbert_gathered__")
    if kept is None:  # on the owner, so that it lives as long (not a weak key: what is kept refers to the owner)
        kept = {}
        # past Keras's attribute tracking; a name of "__" that Keras's saving walk skips (it would recurse into it)
        object.__setattr__(owner, "__kbert_gathered__", kept)
    full_key = (_changes, id(owner), *key)  # a copy of the owner gathers its own
    if name not in kept or kept[name][0] != full_key:
        kept[name] = (full_key, gather())
    return kept[name][1]


def _updating(optimizer):
    """The optimizer that updates the weights: a `LossScaleOptimizer`'s inner one, else `optimizer` itself."""
    return optimizer.inner_optimizer if isinstance(optimizer, keras.optimizers.LossScaleOptimizer) else optimizer


class _Plan:
    """What a fused training step reads, gathered from the model and its optimizer (`optimizer`: the one that
    updates the weights; `loss_scaling`: the model's `LossScaleOptimizer`, or None)."""

    def __init__(self, model):
        self.optimizer = optimizer = _updating(model.optimizer)
        self.loss_scaling = model.optimizer if optimizer is not model.optimizer else None
        self.variables = model.trainable_variables
        self.parameters = [variable.value for variable in self.variables]
        index = optimizer._get_variable_index
        self.momentums = [optimizer._momentums[index(variable)].value for variable in self.variables]
        self.velocities = [optimizer._velocities[index(variable)].value for variable in self.variables]
        self.decayed = ([variable.value for variable in self.variables if optimizer._use_weight_decay(variable)]
                        if optimizer.weight_decay else [])
        self.iterations = optimizer.iterations.value
        keras_metrics = (type(model).compute_metrics is keras.Model.compute_metrics
                         and type(model).get_metrics_result is keras.Model.get_metrics_result)
        self.metrics = model.metrics if keras_metrics else None  # None: the model's own compute_metrics
        if self.loss_scaling is not None:
            self.scale, self.scale_steps = self.loss_scaling.dynamic_scale.value, self.loss_scaling.step_counter.value


def fused_step_refusal(model):
    """Why `fit`'s fused training step cannot train `model` as Keras's step would (a sentence), or None."""
    if not model.optimizer.built:
        return "the optimizer is not built yet"
    optimizer = _updating(model.optimizer)
    if not getattr(optimizer, "updates_as_adamw_step", False):  # kbert's BertAdamW says so (not imported: upward)
        return f"the optimizer is {type(optimizer).__name__}, not kbert's BertAdamW"
    settings = {"gradient_accumulation_steps": optimizer.gradient_accumulation_steps, "use_ema": optimizer.use_ema,
                "clipnorm": optimizer.clipnorm, "clipvalue": optimizer.clipvalue,
                "loss_scale_factor": optimizer.loss_scale_factor}
    if any(settings.values()):
        return f"the optimizer sets {[name for name, value in settings.items() if value]}"
    variables = model.trainable_variables
    if any(optimizer._var_key(variable) not in optimizer._trainable_variables_indices for variable in variables):
        return "a weight is unknown to the optimizer (compile again after adding weights): Keras's step says so"
    if any(variable.constraint is not None or variable.overwrite_with_gradient for variable in variables):
        return "a weight has a constraint or is overwritten with its gradient"
    return None


def train_step(model, data):
    """`keras.Model.train_step` on torch for `model`, a kbert task compiled with `BertAdamW` (in a
    `LossScaleOptimizer` where its backbone computes in float16): the same forward pass, loss, gradients (the
    gathered weights' `.grad`), loss scaling, clipping, decoupled weight decay and AdamW update (one fused call,
    `torch_foreach_adamw.adamw_step`), iteration count and logs. None where `fused_step_refusal` gives a
    reason, or the speed-up `torch_foreach_adamw` is off: Keras's step then runs.
    """
    from kbert.backend_speedups.torch_foreach_adamw import adamw_step, foreach_clip_by_global_norm

    refusal = gathered(model, "fused_step_refusal", lambda: fused_step_refusal(model),
                       (id(model.optimizer), model.optimizer.built))
    if refusal or not active("torch_foreach_adamw"):
        return None
    plan = gathered(model, "fused_step_plan", lambda: _Plan(model), (id(model.optimizer),))
    optimizer = plan.optimizer
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    y_pred = model(x, training=True)
    loss = model._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
    # The batch size as Keras's step weighs the loss, made on the device: a Python number would be copied there
    batch_size = next(i for i in keras.tree.flatten(x) if i is not None).shape[0]
    model._loss_tracker.update_state(loss, sample_weight=torch.full((), batch_size, dtype=torch.float32,
                                                                    device=loss.device))
    for parameter in plan.parameters:  # as Keras's step zeroes them (`zero_grad`)
        parameter.grad = None
    # into `.grad`, where hooks on it run (`kbert.distribution.torch_data_parallel`'s averaging)
    (loss if plan.loss_scaling is None else loss * plan.scale).backward()
    grads = [parameter.grad for parameter in plan.parameters]
    with torch.no_grad():
        if any(grad is None for grad in grads):  # Keras's warning and update of the others
            model.optimizer.apply(list(grads), plan.variables)
        elif plan.loss_scaling is None or _unscaled(grads, plan):
            if optimizer.global_clipnorm:
                grads = foreach_clip_by_global_norm(grads, optimizer.global_clipnorm)
            adamw_step(optimizer, grads, plan.parameters, plan.momentums, plan.velocities,
                       optimizer._get_current_learning_rate(), decayed=plan.decayed)
            plan.iterations.add_(1)
    if plan.metrics is None:
        return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)
    if model._compile_metrics is not None:
        model._compile_metrics.update_state(y, y_pred, sample_weight)
    results = {}
    for metric in plan.metrics:  # as `keras.Model.get_metrics_result`
        result = metric.result()
        results.update(result if isinstance(result, dict) else {metric.name: result})
    return results


def _unscaled(grads, plan):
    """Keras's `LossScaleOptimizer` on the gradients of the loss times `plan.scale`: True where all are finite, each
    then multiplied in place by the scale's inverse (Keras divides: the same numbers while the scale is a power of
    two, as it stays from Keras's default 2**15), and the scale doubles once `dynamic_growth_steps` such steps have
    run in a row. False where one is not (the update is skipped), and the scale halves.

    Whether they are finite is read on the host, a wait for the backward pass on a GPU, as in
    `torch.amp.GradScaler`'s step.
    """
    found_inf = torch.zeros((), device=plan.scale.device)
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, plan.scale.reciprocal())
    if found_inf.item():
        plan.scale_steps.zero_()
        plan.scale.mul_(0.5)
        return False
    plan.scale_steps.add_(1)
    grown = plan.scale_steps == plan.loss_scaling.dynamic_growth_steps
    plan.scale.mul_(grown + 1)
    plan.scale_steps.masked_fill_(grown, 0)
    return True
