"""PyTorch backend only: `BertAdamW`'s update on whole lists of tensors (`torch._foreach_*`).

Eager torch pays for every op on every variable; Keras's own torch optimizers update all
variables in a few fused list ops instead, and this does the same for `BertAdamW`
(`kbert.optimizers.bert_adamw`), which calls it under the torch backend only.
"""

import math

import torch


@torch.no_grad()
def foreach_update(optimizer, grads, variables, learning_rate):
    """PyTorch's AdamW step (decay applied before, by Keras) on all `variables` at once.

    The same update as `BertAdamW.update_step`:
    `w -= lr * sqrt(c2) / c1 * m / (sqrt(v) + eps * sqrt(c2))`, with `c1 = 1 - beta_1**t`
    and `c2 = 1 - beta_2**t`.
    """
    step = int(optimizer.iterations) + 1  # a tensor, not a Variable, under gradient accumulation
    root_beta_2_correction = math.sqrt(1 - optimizer.beta_2**step)
    step_size = float(learning_rate) * root_beta_2_correction / (1 - optimizer.beta_1**step)
    index = optimizer._get_variable_index
    m = [optimizer._momentums[index(variable)].value for variable in variables]
    v = [optimizer._velocities[index(variable)].value for variable in variables]
    torch._foreach_lerp_(m, grads, 1 - optimizer.beta_1)
    torch._foreach_mul_(v, optimizer.beta_2)
    torch._foreach_addcmul_(v, grads, grads, value=1 - optimizer.beta_2)
    denominators = torch._foreach_sqrt(v)
    torch._foreach_add_(denominators, optimizer.epsilon * root_beta_2_correction)
    torch._foreach_addcdiv_([variable.value for variable in variables], m, denominators, value=-step_size)
