"""Data parallelism on the torch backend: one process per device, gradients averaged over
`torch.distributed`, as `torch.nn.parallel.DistributedDataParallel` does.

Keras's torch trainer calls the model itself in `train_step` (not a wrapper that DDP could
own) and reads each weight's `.grad` after `loss.backward()`. So instead of wrapping the
model in DDP, `averaged_gradients(model)` installs DDP's mechanism directly: a hook on each
trainable weight that, once its gradient is accumulated in the backward pass, all-reduces it
and divides by the number of processes; the optimizer then applies the same mean gradient in
every process. With the same initial weights (broadcast from process 0 when training starts)
every process takes the same steps. Each process trains on its share of every global batch
(`kbert.distribution.data_shares`), so the mean of the processes' gradients is the gradient of the global
batch.
"""

import atexit
import contextlib
import os

_ACTIVE = None
_AVERAGING = False  # within `averaged_gradients`: every process runs the same steps (and validations)

ENVIRONMENT = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")


class TorchDataParallel:
    """This process's place in a data-parallel torch job: `rank` of `num_replicas_in_sync` processes.

    Build it with `TorchDataParallel.from_environment()` (what `kbert.distribution.data_parallel()`
    does on torch), which joins the process group, then `kbert.distribution.activate` it.
    """

    def __init__(self, rank, num_replicas_in_sync):
        self.rank = int(rank)
        self.num_replicas_in_sync = int(num_replicas_in_sync)

    @classmethod
    def from_environment(cls):
        """Joins the process group torchrun describes in the environment (gloo on CPU, nccl on GPU)."""
        import torch
        import torch.distributed as dist

        missing = [name for name in ENVIRONMENT if name not in os.environ]
        if missing and not dist.is_initialized():
            raise ValueError(f"Data parallelism on torch runs one process per device, started by torchrun "
                             f"(or with {', '.join(ENVIRONMENT)} set in each); {', '.join(missing)} "
                             "not set in this process.")
        if not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
            # Left at exit, while the interpreter is whole: gloo's threads outliving it abort the process
            # ("terminate called without an active exception", pytorch/pytorch#190489).
            atexit.register(_leave_process_group)
        return cls(dist.get_rank(), dist.get_world_size())

    def __repr__(self):
        return f"TorchDataParallel(rank={self.rank}, num_replicas_in_sync={self.num_replicas_in_sync})"


def _leave_process_group():
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def set_active(distribution):
    """Makes `distribution` (a `TorchDataParallel` or None) the active one (`kbert.distribution.activate`)."""
    global _ACTIVE
    if distribution is not None and not isinstance(distribution, TorchDataParallel):
        raise ValueError(f"On torch, activate takes kbert.distribution.data_parallel()'s TorchDataParallel, "
                         f"not {type(distribution).__name__}.")
    _ACTIVE = distribution


def active():
    """The active `TorchDataParallel`, or None."""
    return _ACTIVE


def shared_seed(seed):
    """Process 0's `seed`, in every process: they must shuffle the global batches alike."""
    if _ACTIVE is None:
        return seed
    import torch
    import torch.distributed as dist

    value = torch.tensor([seed], dtype=torch.int64)
    dist.broadcast(value, src=0)
    return int(value.item())


def broadcast_from_process_0(text):
    """Process 0's `text`, in every process of the active job (a collective step: all must call it)."""
    import torch.distributed as dist

    message = [text]
    dist.broadcast_object_list(message, src=0)
    return message[0]


def global_share(amount):
    """n x `amount` / its sum over the n processes (0 if that is 0), while `averaged_gradients` is open;
    None otherwise. A share's mean weighted by `amount` (e.g. its masked tokens), scaled by it, averages
    over the processes to the global batch's weighted mean (the mean of the shares' means would not)."""
    if _ACTIVE is None or not _AVERAGING:
        return None
    import torch
    import torch.distributed as dist

    total = amount.detach().to(torch.float64).clone()
    dist.all_reduce(total)
    share = amount.detach().to(torch.float64) * _ACTIVE.num_replicas_in_sync / total
    return torch.where(total > 0, share, torch.zeros_like(share)).to(amount.dtype)


@contextlib.contextmanager
def averaged_gradients(model):
    """While open, `model`'s processes start from process 0's weights and each backward pass leaves
    in every trainable weight's `.grad` its mean over the processes (the active `TorchDataParallel`'s),
    and `global_share` answers. Every process must run the same steps and validations meanwhile."""
    import torch.distributed as dist

    global _AVERAGING

    parts = _ACTIVE.num_replicas_in_sync

    def average(parameter):
        dist.all_reduce(parameter.grad)
        parameter.grad.div_(parts)

    for weight in model.weights:
        dist.broadcast(weight.value.data, src=0)
    handles = [weight.value.register_post_accumulate_grad_hook(average) for weight in model.trainable_variables]
    _AVERAGING = True
    try:
        yield
    finally:
        _AVERAGING = False
        for handle in handles:
            handle.remove()


__all__ = ["TorchDataParallel", "active", "averaged_gradients", "broadcast_from_process_0", "global_share",
           "set_active", "shared_seed"]
