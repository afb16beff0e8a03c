"""torch_train_step: `fit`'s fused training step on what it gathered from the model, against Keras's own step
(KBERT_SPEEDUPS=-torch_train_step) for the logs, every gradient and the weights, also after changes that must
invalidate what was gathered (a layer frozen, LoRA enabled, int8 quantization); predict's outputs."""

import re

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertClassifier
from kbert.optimizers import bert_adamw
from kbert.optimizers.lora import enable_lora
from tests.conftest import TINY, tiny_batch

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch's training step")

LABELS = np.array([0, 2, 1])


def classifier(seed=0, dtype=None):
    """A tiny classifier (dropout on: masks from torch's generator, seeded before each fit) with random weights."""
    keras.utils.set_random_seed(seed)
    model = BertClassifier(BertBackbone(**{**TINY, "dropout": 0.1}, dtype=dtype), 3)
    model.compile(optimizer=bert_adamw(1e-2, 10, warmup_ratio=0.2), metrics=["accuracy"])
    return model


@pytest.fixture
def seen(monkeypatch):
    """The gradients each update received (after clipping), by the fused step or by Keras's optimizer path."""
    import kbert.backend_speedups.torch_foreach_adamw as foreach

    steps = []
    real = foreach.adamw_step
    monkeypatch.setattr(foreach, "adamw_step", lambda optimizer, grads, *args, **kwargs: steps.append(
        [g.detach().clone().numpy() for g in grads]) or real(optimizer, grads, *args, **kwargs))
    return steps


def fit(model, monkeypatch, fused, epochs=2, seed=1):
    """(each batch's logs, the weights after) of `fit` with the fused step or Keras's."""
    monkeypatch.setenv("KBERT_SPEEDUPS", "all" if fused else "-torch_train_step")
    record_logs = []
    record = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs=None: record_logs.append(
        {key: float(value) for key, value in logs.items()}))
    keras.utils.set_random_seed(seed)
    model.fit(tiny_batch(), LABELS, batch_size=2, epochs=epochs, shuffle=False, verbose=0, callbacks=[record])
    return record_logs, {w.path: keras.ops.convert_to_numpy(w) for w in model.weights}


def compare(change, monkeypatch, seen, dtype=None):
    """Two fits of the same model, the fused step against Keras's, `change(model)` between the two; returns the
    weights of the fused run before and after its second fit."""
    runs = []
    for fused in (True, False):
        model = classifier(dtype=dtype)
        first = fit(model, monkeypatch, fused)
        change(model)
        steps_before = len(seen)
        second = fit(model, monkeypatch, fused, seed=2)
        runs.append((first, second, seen[steps_before:]))
    (fused_first, fused_second, fused_grads), (keras_first, keras_second, keras_grads) = runs
    for ours, theirs in ((fused_first, keras_first), (fused_second, keras_second)):
        assert len(ours[0]) == len(theirs[0]) and ours[0][0].keys() == theirs[0][0].keys()
        for our_log, their_log in zip(ours[0], theirs[0]):
            np.testing.assert_allclose(list(our_log.values()), list(their_log.values()), rtol=1e-5, atol=1e-6)
        for path, weight in ours[1].items():
            np.testing.assert_allclose(weight, theirs[1][path], rtol=0, atol=1e-5, err_msg=path)
    assert len(fused_grads) == len(keras_grads) > 0
    for ours, theirs in zip(fused_grads, keras_grads):
        assert [g.shape for g in ours] == [g.shape for g in theirs]
        for our_grad, their_grad in zip(ours, theirs):
            np.testing.assert_allclose(our_grad, their_grad, rtol=1e-5, atol=1e-7)
    return fused_first[1], fused_second[1]


@pytest.mark.parametrize("dtype", [None, "mixed_bfloat16", "mixed_float16"])
def test_the_fused_step_trains_as_keras_step(dtype, monkeypatch, seen):
    from kbert.backend_speedups import torch_train_step

    calls = []
    real = torch_train_step.train_step
    monkeypatch.setattr(torch_train_step, "train_step", lambda *args: calls.append(real(*args)) or calls[-1])
    compare(lambda model: None, monkeypatch, seen, dtype=dtype)
    assert len(calls) == 8 and None not in calls  # 2 batches x 2 epochs x 2 fits of the fused run, none in Keras's


def test_loss_scaling_skips_the_steps_that_overflow_and_grows_the_scale(monkeypatch, seen):
    """float16 compute: the loss scaled, an update skipped and the scale halved where a scaled gradient is not
    finite, the scale doubled after `dynamic_growth_steps` finite steps: as Keras's `LossScaleOptimizer`."""
    from kbert.backend_speedups import torch_train_step

    calls = []
    real = torch_train_step.train_step
    monkeypatch.setattr(torch_train_step, "train_step", lambda *args: calls.append(real(*args)) or calls[-1])
    runs = []
    for fused in (True, False):
        model = classifier(dtype="mixed_float16")
        model.compile(optimizer=keras.optimizers.LossScaleOptimizer(
            bert_adamw(1e-2, 10, warmup_ratio=0.2), initial_scale=2.0**20, dynamic_growth_steps=2))
        scales = []
        monkeypatch.setenv("KBERT_SPEEDUPS", "all" if fused else "-torch_train_step")
        record = keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda batch, logs=None: scales.append(float(model.optimizer.dynamic_scale)))
        updates_before = len(seen)
        keras.utils.set_random_seed(1)
        history = model.fit(tiny_batch(), LABELS, batch_size=2, epochs=6, shuffle=False, verbose=0,
                            callbacks=[record])
        runs.append((scales, history.history["loss"], int(model.optimizer.iterations), len(seen) - updates_before,
                     {w.path: keras.ops.convert_to_numpy(w) for w in model.weights}))
    (scales, losses, iterations, updates, weights), keras_run = runs
    assert len(calls) == 12 and None not in calls  # the fused run's 12 batches
    assert scales == keras_run[0]
    np.testing.assert_allclose(losses, keras_run[1], rtol=1e-5)
    assert iterations == keras_run[2] and updates == keras_run[3] < 12  # 12 batches, some skipped
    assert any(b < a for a, b in zip(scales, scales[1:])) and any(b > a for a, b in zip(scales, scales[1:]))
    for path, weight in weights.items():
        np.testing.assert_allclose(weight, keras_run[4][path], rtol=0, atol=1e-5, err_msg=path)


@pytest.mark.parametrize("setting, refusal", [
    (dict(gradient_accumulation_steps=2), r"the optimizer sets \['gradient_accumulation_steps'\]"),
    (dict(optimizer="adam"), "the optimizer is Adam, not kbert's BertAdamW")])
def test_what_the_fused_step_does_not_do_keras_step_does(setting, refusal, monkeypatch, seen):
    from kbert.backend_speedups.torch_train_step import fused_step_refusal

    model = classifier()
    model.compile(optimizer=setting.get("optimizer") or bert_adamw(1e-2, 10, **setting))
    logs, _ = fit(model, monkeypatch, True)
    assert len(logs) == 4 and np.isfinite(logs[-1]["loss"])
    assert re.fullmatch(refusal, fused_step_refusal(model))


def test_a_layer_frozen_between_two_fits_stays_as_it_was(monkeypatch, seen):
    def freeze(model):
        model.backbone.get_layer("transformer_layer_0").trainable = False

    before, after = compare(freeze, monkeypatch, seen)
    frozen = [path for path in before if path.startswith("transformer_layer_0/")]
    assert frozen and all(np.array_equal(before[path], after[path]) for path in frozen)
    assert not np.array_equal(before["pooled_dense/kernel"], after["pooled_dense/kernel"])


def test_lora_enabled_between_two_fits(monkeypatch, seen):
    def lora(model):
        enable_lora(model.backbone, rank=2)
        model.compile(optimizer=bert_adamw(1e-2, 10, warmup_ratio=0.2), metrics=["accuracy"])

    before, after = compare(lora, monkeypatch, seen)
    kernel = "transformer_layer_0/self_attention/qkv_dense/kernel"
    assert np.array_equal(before[kernel], after[kernel])


def test_a_model_quantized_between_two_fits(monkeypatch, seen):
    compare(lambda model: model.backbone.quantize("int8"), monkeypatch, seen)


def test_weights_added_without_compiling_again_are_refused_by_keras(monkeypatch):
    model = classifier()
    fit(model, monkeypatch, True)
    enable_lora(model.backbone, rank=2)
    with pytest.raises(ValueError, match="Unknown variable"):
        fit(model, monkeypatch, True)


def test_predict_gives_keras_outputs_after_training(monkeypatch):
    """The backbone's weights gathered for predict are the variables' own tensors: updated by fit in place."""
    model = classifier()
    batch = tiny_batch()
    monkeypatch.setenv("KBERT_SPEEDUPS", "all")
    before = model.predict(batch, verbose=0)
    fit(model, monkeypatch, True)
    monkeypatch.setenv("KBERT_SPEEDUPS", "all")
    fast = model.predict(batch, verbose=0)
    monkeypatch.setenv("KBERT_SPEEDUPS", "-torch_train_step")
    np.testing.assert_allclose(fast, model.predict(batch, verbose=0), rtol=0, atol=1e-6)
    assert not np.allclose(before, fast)


def test_the_step_reads_nothing_back_and_makes_two_tensors_from_host_data():
    """On batches already tensors: nothing read back, and of the tensors made from host data (each a wait on a GPU,
    tests/host_transfers.py) Keras's step makes 4, this one the 2 of Keras's loss and accuracy (its count), none
    for the loss tracker."""
    import torch

    from tests.host_transfers import HostTransfers

    model = classifier()
    data = ({key: torch.as_tensor(value) for key, value in tiny_batch().items()}, torch.as_tensor(LABELS))
    model.fit(*data, verbose=0)  # builds the optimizer
    model.train_step(data)
    with HostTransfers() as seen:
        logs = model.train_step(data)
    assert [(op, where.split(" <- ")[1]) for op, where in seen.transfers()] == [
        ("lift_fresh", "loss.py:155 reduce_values"), ("lift_fresh", "reduction_metrics.py:149 update_state")]
    assert set(logs) == {"loss", "accuracy"}


def test_what_is_gathered_goes_with_the_model():
    """Kept on the model and the backbone themselves: a model trained, run and dropped is freed."""
    import gc
    import weakref

    model = classifier()
    model.fit(tiny_batch(), LABELS, verbose=0)
    model.predict(tiny_batch(), verbose=0)
    assert {"fused_step_plan", "trainable_variables"} <= set(model.__dict__["__kbert_gathered__"])
    assert {"backbone_weights", "layers"} <= set(model.backbone.__dict__["__kbert_gathered__"])
    references = [weakref.ref(model), weakref.ref(model.backbone)]
    del model
    gc.collect()
    assert [reference() for reference in references] == [None, None]


def test_hooks_on_the_gradients_run(monkeypatch, seen):
    """The gradients come through each weight's `.grad`, where `kbert.distribution.torch_data_parallel` averages
    them over the processes by a post-accumulate hook: a hook that doubles them doubles what the update gets."""
    model = classifier()
    model.compile(optimizer=bert_adamw(1e-2, 10, clipnorm=None))  # clipping would undo the doubling
    fit(model, monkeypatch, True, epochs=1)
    data = ({key: keras.ops.convert_to_tensor(value) for key, value in tiny_batch().items()},
            keras.ops.convert_to_tensor(LABELS))
    weights = model.get_weights()

    def double(parameter):
        parameter.grad.mul_(2)

    for hooked in (False, True):
        model.set_weights(weights)
        handles = [w.value.register_post_accumulate_grad_hook(double) for w in model.trainable_variables if hooked]
        keras.utils.set_random_seed(3)  # the same dropout masks
        model.train_step(data)
        for handle in handles:
            handle.remove()
    plain, doubled = seen[-2:]
    for ours, theirs in zip(doubled, plain, strict=True):
        np.testing.assert_allclose(ours, 2 * theirs, rtol=1e-5, atol=1e-8)
