"""kbert.distribution.data_shares: process r of n takes the r-th n-th of each global batch (numpy alone: every
backend). Sharing across real processes is tested by test_torch_app_processes.py (torch) and test_multi_process.py
(JAX)."""

import keras
import numpy as np

from kbert.distribution.data_shares import Shard, is_shares, process_share, share, shares, training_on_shares
from kbert.distribution.torch_data_parallel import TorchDataParallel

BATCH = {"x": np.arange(12).reshape(6, 2), "y": np.arange(6)}


def test_process_r_of_n_takes_the_r_th_n_th_of_each_batch():
    second_of_3 = share(BATCH, TorchDataParallel(1, 3))
    assert second_of_3["x"].tolist() == [[4, 5], [6, 7]] and second_of_3["y"].tolist() == [2, 3]
    stream = shares([BATCH, {"x": BATCH["x"][:4], "y": BATCH["y"][:4]}], TorchDataParallel(1, 2))
    assert is_shares(stream) and not is_shares(iter([BATCH]))
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


def test_without_a_job_the_batches_are_whole():
    batches = [BATCH]
    assert process_share(batches) is batches
    with training_on_shares(None, batches):
        pass
