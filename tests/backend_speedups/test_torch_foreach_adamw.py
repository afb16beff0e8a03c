"""foreach_update: BertAdamW's step under torch, on whole lists of tensors, against torch.optim.AdamW."""

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch._foreach_* ops: torch only")


def gradients(shapes, steps, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.normal(size=shape) * 10.0 ** rng.integers(-6, 1, size=shape)).astype("float32") for shape in shapes]
            for _ in range(steps)]


def torch_adamw(starts, steps, learning_rate, weight_decay):
    import torch

    parameters = [torch.nn.Parameter(torch.tensor(start)) for start in starts]
    optimizer = torch.optim.AdamW(parameters, lr=learning_rate, betas=(0.9, 0.999), eps=1e-6,
                                  weight_decay=weight_decay, foreach=False)
    for grads in steps:
        for parameter, grad in zip(parameters, grads):
            parameter.grad = torch.tensor(grad)
        optimizer.step()
    return [parameter.detach().numpy() for parameter in parameters]


def test_bert_adamw_under_torch_steps_as_torch_optim_adamw():
    from kbert.optimizers import BertAdamW

    shapes = [(3, 4), (4,), (2, 2, 2)]
    rng = np.random.default_rng(1)
    starts = [rng.normal(size=shape).astype("float32") for shape in shapes]
    steps = gradients(shapes, 4)
    variables = [keras.Variable(start) for start in starts]
    optimizer = BertAdamW(learning_rate=1e-2, weight_decay=0.01, epsilon=1e-6)
    for grads in steps:
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
    for ours, theirs in zip(variables, torch_adamw(starts, steps, 1e-2, 0.01), strict=True):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), theirs, rtol=0, atol=1e-6)


def test_foreach_update_is_adams_step_without_the_decay():
    """Called directly (Keras applies the decay before): torch's AdamW step with weight_decay=0, and the
    moments it leaves are Adam's m and v, worked in numpy."""
    import torch

    from kbert.backend_speedups.torch_foreach_adamw import foreach_update
    from kbert.optimizers import BertAdamW

    shapes = [(5,), (2, 3)]
    starts = [np.linspace(-1, 1, 5, dtype="float32"), np.ones((2, 3), "float32")]
    steps = gradients(shapes, 2, seed=2)
    variables = [keras.Variable(start) for start in starts]
    optimizer = BertAdamW(learning_rate=0.1, weight_decay=0.0, epsilon=1e-6)
    optimizer.build(variables)
    for step, grads in enumerate(steps):
        foreach_update(optimizer, [torch.tensor(g) for g in grads], variables, 0.1)
        optimizer.iterations.assign(step + 1)
    for ours, theirs in zip(variables, torch_adamw(starts, steps, 0.1, 0.0), strict=True):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), theirs, rtol=0, atol=1e-6)
    g1, g2 = steps[0][1], steps[1][1]
    m = keras.ops.convert_to_numpy(optimizer._momentums[optimizer._get_variable_index(variables[1])])
    v = keras.ops.convert_to_numpy(optimizer._velocities[optimizer._get_variable_index(variables[1])])
    np.testing.assert_allclose(m, 0.9 * 0.1 * g1 + 0.1 * g2, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(v, 0.999 * 0.001 * g1**2 + 0.001 * g2**2, rtol=1e-5, atol=1e-20)


@pytest.mark.parametrize("scale", [0.1, 30.0, np.inf])
def test_foreach_clipping_is_torchs_clip_grad_norm(scale):
    """Gradients of global norm below, above and at infinity against `torch.nn.utils.clip_grad_norm_`
    (the clipping Hugging Face trains with), and Keras's NaN for a non-finite norm."""
    import torch

    from kbert.backend_speedups.torch_foreach_adamw import foreach_clip_by_global_norm

    grads = [g * scale for g in gradients([(3, 4), (4,), (2, 2, 2)], 1, seed=3)[0]]
    clipped = [t.numpy() for t in foreach_clip_by_global_norm([torch.tensor(g) for g in grads], 1.0)]
    if np.isinf(scale):
        assert all(np.isnan(c).all() for c in clipped)
        return
    parameters = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for parameter, grad in zip(parameters, grads):
        parameter.grad = torch.tensor(grad)
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    for ours, theirs in zip(clipped, parameters, strict=True):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-6, atol=1e-9)
    assert (scale < 1) == all(np.array_equal(c, g) for c, g in zip(clipped, grads))


def test_a_step_at_learning_rate_zero_moves_nothing():
    """The first step of BERT's warmup has a learning rate of 0: the update divides by the step size, as
    torch's capturable Adam does, and must leave every weight as it was (not NaN)."""
    import torch

    from kbert.backend_speedups.torch_foreach_adamw import foreach_update
    from kbert.optimizers import BertAdamW

    start = np.linspace(-1, 1, 6, dtype="float32")
    variable = keras.Variable(start)
    optimizer = BertAdamW(learning_rate=0.0, weight_decay=0.0)
    optimizer.build([variable])
    foreach_update(optimizer, [torch.tensor(np.full(6, 0.5, "float32"))], [variable], torch.tensor(0.0))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), start)


@pytest.mark.parametrize("planned_by_fit", [False, True])
def test_the_update_is_queued_without_waiting_for_the_gpu(planned_by_fit):
    """Nothing made from host data or read back before the weights' update: on a GPU each would wait for the
    backward pass to finish before the update could be queued (the learning-rate schedule made 16 a step)."""
    from kbert.optimizers import bert_adamw
    from tests.host_transfers import HostTransfers

    variables = [keras.Variable(np.ones((3, 4), "float32"), name="kernel"), keras.Variable(np.ones(4, "float32"))]
    grads = [keras.ops.convert_to_tensor(g) for g in gradients([(3, 4), (4,)], 1)[0]]
    optimizer = bert_adamw(3e-5, total_steps=None if planned_by_fit else 100)
    if planned_by_fit:
        optimizer.plan_fit(100)
    optimizer.apply(grads, variables)  # builds
    with HostTransfers() as seen:
        optimizer.apply(grads, variables)
    assert seen.transfers(before="_foreach_addcdiv_") == []


def test_host_transfers_counts_what_a_gpu_would_wait_for():
    import doctest

    from tests import host_transfers

    result = doctest.testmod(host_transfers)
    assert result.attempted and not result.failed
