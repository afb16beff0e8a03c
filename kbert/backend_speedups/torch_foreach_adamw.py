"""PyTorch backend only: `BertAdamW`'s update and gradient clipping on whole lists of tensors (`torch._foreach_*`).

Eager torch pays for every op on every variable; Keras's own torch optimizers update all
variables in a few fused list ops instead, and this does the same for `BertAdamW`
(`kbert.optimizers.bert_adamw`), which calls it under the torch backend only.
"""

import torch
from keras import ops


@torch.no_grad()
def foreach_update(optimizer, grads, variables, learning_rate):
    """PyTorch's AdamW step (decay applied before, by Keras) on all `variables` at once (`adamw_step` on their
    tensors and their moments)."""
    index = optimizer._get_variable_index
    adamw_step(optimizer, grads, [variable.value for variable in variables],
               [optimizer._momentums[index(variable)].value for variable in variables],
               [optimizer._velocities[index(variable)].value for variable in variables], learning_rate)


@torch.no_grad()
def adamw_step(optimizer, grads, parameters, momentums, velocities, learning_rate, decayed=()):
    """PyTorch's AdamW step of `optimizer` (a `BertAdamW`: its betas, epsilon, weight decay and step count)
    on the tensors `parameters`, their moments updated in place; first the decoupled weight decay of those in
    `decayed`, `w *= 1 - lr * weight_decay`, as Keras's torch optimizers apply it (none when empty).

    The same update as `BertAdamW.update_step`:
    `w -= lr * sqrt(c2) / c1 * m / (sqrt(v) + eps * sqrt(c2))`, with `c1 = 1 - beta_1**t`
    and `c2 = 1 - beta_2**t`. The step count and the learning rate stay tensors on the
    weights' device: reading them as Python numbers would wait for the GPU to finish the
    backward pass before the update could be queued, as `torch.optim.AdamW` never does.
    """
    learning_rate = torch.as_tensor(ops.convert_to_tensor(learning_rate))
    if decayed:
        # The overload that takes a tensor, as below; the factor in float32, as Keras's own.
        torch.ops.aten._foreach_mul_.Tensor(list(decayed), 1 - optimizer.weight_decay * learning_rate.float())
    # float64 scalars: 1 - 0.999**t in float32 loses 5 digits
    step = torch.as_tensor(ops.convert_to_tensor(optimizer.iterations)).double() + 1  # a tensor under accumulation
    root_beta_2_correction = torch.sqrt(1 - optimizer.beta_2**step)
    step_size = (learning_rate.double() * root_beta_2_correction / (1 - optimizer.beta_1**step)).float()
    m, v = momentums, velocities
    torch._foreach_lerp_(m, grads, 1 - optimizer.beta_1)
    torch._foreach_mul_(v, optimizer.beta_2)
    torch._foreach_addcmul_(v, grads, grads, value=1 - optimizer.beta_2)
    denominators = torch._foreach_sqrt(v)
    # The overload that takes a tensor: `torch._foreach_add_` binds a 0-d tensor to its Scalar
    # overload, which reads it back to the host.
    torch.ops.aten._foreach_add_.Tensor(denominators, (optimizer.epsilon * root_beta_2_correction).float())
    torch._foreach_div_(denominators, step_size)  # as torch's capturable Adam; a step size of 0 moves nothing
    torch._foreach_addcdiv_(list(parameters), m, denominators, value=-1.0)


@torch.no_grad()
def foreach_clip_by_global_norm(grads, clip_norm):
    """Keras's `clip_by_global_norm` in three list ops: every gradient times
    `clip_norm / max(global_norm, clip_norm)`, NaN where the norm is not finite.

    Keras squares, sums and scales each of a BERT's ~200 gradients on its own (600 kernels on
    a GPU, a step's largest share of launches); `torch.nn.utils.clip_grad_norm_` does as this.
    """
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    scale = torch.clamp(clip_norm / norm, max=1.0) + (norm - norm)
    return list(torch._foreach_mul(grads, scale))
