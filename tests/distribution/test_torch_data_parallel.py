"""kbert.distribution.torch_data_parallel in one process: the active job, and gradient averaging (on a one-process
gloo group that claims 2 replicas, so that the mean is half the gradient). The real 2-process job is
tests/distribution/test_torch_app_processes.py's; the shares of a global batch, test_data_shares.py's."""

import keras
import numpy as np
import pytest

from kbert.distribution import torch_data_parallel
from kbert.distribution.torch_data_parallel import TorchDataParallel

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's module")


def test_without_a_job_nothing_is_shared():
    assert torch_data_parallel.active() is None
    assert torch_data_parallel.shared_seed(1234) == 1234
    assert torch_data_parallel.global_share(keras.ops.convert_to_tensor(3.0)) is None
    with pytest.raises(ValueError, match="On torch, activate takes .*TorchDataParallel, not str"):
        torch_data_parallel.set_active("data")


def test_from_environment_names_the_missing_variables(monkeypatch):
    import torch.distributed as dist

    assert not dist.is_initialized()
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    for name in ("MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="started by torchrun .*; MASTER_PORT, RANK, WORLD_SIZE not set in this"):
        TorchDataParallel.from_environment()


@pytest.fixture
def one_process_claiming_two(tmp_path):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    torch_data_parallel.set_active(TorchDataParallel(0, 2))
    yield
    torch_data_parallel.set_active(None)
    dist.destroy_process_group()


def test_averaged_gradients_divide_the_summed_gradients_by_the_processes(one_process_claiming_two):
    import torch

    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, name="dense")(inputs))
    x = torch.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    kernel = model.get_layer("dense").kernel

    def kernel_gradient():
        kernel.value.grad = None
        model(x).sum().backward()
        return kernel.value.grad.numpy().copy()

    alone = kernel_gradient()
    np.testing.assert_array_equal(alone, np.tile(x.numpy().sum(0)[:, None], (1, 2)))  # d sum(xW+b)/dW
    with torch_data_parallel.averaged_gradients(model):
        np.testing.assert_allclose(kernel_gradient(), alone / 2)  # all-reduced over 1 process, divided by 2
        share = torch_data_parallel.global_share(torch.tensor(5.0))
        assert float(share) == 2.0  # 2 x 5 / 5
        assert float(torch_data_parallel.global_share(torch.tensor(0.0))) == 0.0
    np.testing.assert_array_equal(kernel_gradient(), alone)  # the hooks are gone
    assert torch_data_parallel.global_share(torch.tensor(5.0)) is None
    assert torch_data_parallel.shared_seed(99) == 99


LEAVER = """
import sys
sys.path.insert(0, sys.argv[1])
import torch, torch.distributed as dist
from kbert.distribution.torch_data_parallel import TorchDataParallel
TorchDataParallel.from_environment()
dist.all_reduce(torch.ones(1000))
"""


def test_a_job_that_ends_leaves_its_process_group():
    # Without destroy_process_group at exit, gloo's threads outlive the interpreter and about half of the
    # processes of such a pair abort ("terminate called without an active exception"); 4 pairs all exit cleanly.
    import os

    from tests.conftest import TESTS
    from tests.distribution.processes import free_port, run_together

    for _ in range(4):
        port = free_port()
        envs = [{**os.environ, "KERAS_BACKEND": "torch", "OMP_NUM_THREADS": "1", "MASTER_ADDR": "localhost",
                 "MASTER_PORT": str(port), "RANK": str(rank), "WORLD_SIZE": "2"} for rank in (0, 1)]
        run_together("-c", [(LEAVER, TESTS.parent), (LEAVER, TESTS.parent)], envs)
