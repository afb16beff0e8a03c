"""kbert.distribution_torch in one process: the shares of a global batch, the active job, and gradient averaging
(on a one-process gloo group that claims 2 replicas, so that the mean is half the gradient). The real
2-process job is tests/distribution/test_data_parallel.py's."""

import keras
import numpy as np
import pytest

from kbert import distribution_torch
from kbert.distribution_torch import Shard, TorchDataParallel

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="torch.distributed: torch's module")

BATCH = {"x": np.arange(12).reshape(6, 2), "y": np.arange(6)}


def test_process_r_of_n_takes_the_r_th_n_th_of_each_batch():
    second_of_3 = distribution_torch.share(BATCH, TorchDataParallel(1, 3))
    assert second_of_3["x"].tolist() == [[4, 5], [6, 7]] and second_of_3["y"].tolist() == [2, 3]
    stream = distribution_torch.shares([BATCH, {"x": BATCH["x"][:4], "y": BATCH["y"][:4]}], TorchDataParallel(1, 2))
    assert distribution_torch.is_shares(stream) and not distribution_torch.is_shares(iter([BATCH]))
    assert [share["y"].tolist() for share in stream] == [[3, 4, 5], [2, 3]]


def test_a_shard_is_a_pydataset_of_this_processs_rows():
    class Batches(keras.utils.PyDataset):
        epochs_ended = 0

        def __len__(self):
            return 2

        def __getitem__(self, index):
            return {"y": BATCH["y"] + 10 * index}

        def on_epoch_end(self):
            self.epochs_ended += 1

    batches = Batches()
    shard = Shard(batches, TorchDataParallel(0, 2))
    assert len(shard) == 2 and shard[1]["y"].tolist() == [10, 11, 12]
    shard.on_epoch_end()
    assert batches.epochs_ended == 1


def test_without_a_job_nothing_is_shared():
    assert distribution_torch.active() is None
    assert distribution_torch.shared_seed(1234) == 1234
    assert distribution_torch.global_share(keras.ops.convert_to_tensor(3.0)) is None
    with pytest.raises(ValueError, match="On torch, activate takes .*TorchDataParallel, not str"):
        distribution_torch.set_active("data")


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
    distribution_torch.set_active(TorchDataParallel(0, 2))
    yield
    distribution_torch.set_active(None)
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
    with distribution_torch.averaged_gradients(model):
        np.testing.assert_allclose(kernel_gradient(), alone / 2)  # all-reduced over 1 process, divided by 2
        share = distribution_torch.global_share(torch.tensor(5.0))
        assert float(share) == 2.0  # 2 x 5 / 5
        assert float(distribution_torch.global_share(torch.tensor(0.0))) == 0.0
    np.testing.assert_array_equal(kernel_gradient(), alone)  # the hooks are gone
    assert distribution_torch.global_share(torch.tensor(5.0)) is None
    assert distribution_torch.shared_seed(99) == 99


LEAVER = """
import sys
sys.path.insert(0, sys.argv[1])
import torch, torch.distributed as dist
from kbert.distribution_torch import TorchDataParallel
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
