"""What a torch step would wait for on a GPU, counted on a CPU: tensors made from host data and values read back."""

import os
import traceback

from torch.utils._python_dispatch import TorchDispatchMode

# Made from host data (`torch.tensor` / `torch.as_tensor` of Python numbers, lists or arrays): on a GPU, a copy that
# waits until the GPU has run everything queued before it. Read back (`.item()`, `float()`, `bool()`): the same wait.
MADE_FROM_HOST, READ_BACK = "lift_fresh", "_local_scalar_dense"


class HostTransfers(TorchDispatchMode):
    """Records, in order, every op dispatched while active, with the source line of each host transfer.

    Example:
    >>> import torch
    >>> with HostTransfers() as seen:
    ...     x = torch.ones(2) * 3.0   # a Python number in an operator: no tensor made
    ...     y = x + torch.tensor(1.0)  # a tensor made from host data
    ...     total = float(y.sum())  # a value read back
    >>> [op for op, _ in seen.transfers()]
    ['lift_fresh', '_local_scalar_dense']
    >>> [op for op, _ in seen.transfers(before="add")]
    ['lift_fresh']
    """

    def __init__(self):
        super().__init__()
        self.ops = []  # (op name, where: the innermost frames outside torch, for a host transfer)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        where = ""
        if name in (MADE_FROM_HOST, READ_BACK):
            frames = [f for f in traceback.extract_stack()[:-1] if f"{os.sep}torch{os.sep}" not in f.filename]
            where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in frames[::-1][:3])
        self.ops.append((name, where))
        return func(*args, **(kwargs or {}))

    def transfers(self, before=None):
        """(op, where) of each host transfer, only those before the last op named `before` if given."""
        ops = self.ops
        if before is not None:
            names = [name for name, _ in ops]
            assert before in names, f"no {before} op was dispatched"
            ops = ops[:len(names) - names[::-1].index(before)]
        return [(name, where) for name, where in ops if name in (MADE_FROM_HOST, READ_BACK)]
