"""Each process's share of the global batches: process r of n trains on the r-th n-th of every batch
(`share`, `shares`, `Shard`), under torch's data parallelism (`kbert.distribution.torch_data_parallel`) and
across the processes of a JAX job (`process_share`, `taking_process_shares`), and what Keras's `fit` trains
within on such shares (`training_on_shares`)."""

import contextlib
import types

import keras

from kbert.distribution import torch_data_parallel
from kbert.distribution.processes import multi_process_jax


def share(batch, distribution=None):
    """This process's rows of the global `batch` (a nest of arrays whose rows divide by the processes):
    process r of n takes the r-th n-th.

    Args:
        batch: a nest of arrays (a batch of `fit`: a tuple of a dict of token ids and labels, ...).
        distribution: anything with `rank` and `num_replicas_in_sync` (a `TorchDataParallel`), or None
            for the active `TorchDataParallel`.

    Example:
    >>> import numpy as np
    >>> from kbert.distribution.torch_data_parallel import TorchDataParallel
    >>> share({"y": np.arange(6)}, TorchDataParallel(1, 3))["y"].tolist()
    [2, 3]
    """
    distribution = distribution or torch_data_parallel.active()
    parts, rank = distribution.num_replicas_in_sync, distribution.rank

    def rows(value):
        size = len(value) // parts
        return value[rank * size : (rank + 1) * size]

    return keras.tree.map_structure(rows, batch)


def shares(batches, distribution=None):
    """A generator of this process's share (`share`) of each global batch of the iterable `batches`
    (e.g. `kbert.data.batches.child_process`' stream, drawn alike in every process): `BertTask.fit` takes it
    under the active `TorchDataParallel` (`is_shares`)."""
    distribution = distribution or torch_data_parallel.active()
    for batch in batches:
        yield share(batch, distribution)


def is_shares(data):
    """True for a generator `shares` made."""
    return isinstance(data, types.GeneratorType) and data.gi_code is shares.__code__


class Shard(keras.utils.PyDataset):
    """This process's rows of every batch of `batches` (a PyDataset of global batches whose rows
    divide by the processes): process r of n takes the r-th n-th of each batch."""

    def __init__(self, batches, distribution):
        super().__init__()
        self.batches = batches
        self.distribution = distribution

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        return share(self.batches[index], self.distribution)

    def on_epoch_end(self):
        self.batches.on_epoch_end()


def process_share(batches):
    """This process's rows of every batch of `batches`, when the active `keras.distribution` spans
    several JAX processes: process p of n takes the p-th n-th of each global batch, the rows of its
    own devices along the data axis (Keras's JAX trainer assembles the global batch from the
    processes' shares, `jax.make_array_from_process_local_data`). A `PyDataset` of global batches
    comes back as a `Shard`, another iterable of them (e.g. the pretraining stream of
    `kbert.data.batches.child_process`) as a generator of shares (`shares`); `batches` itself without
    such a job. Every process must
    make the same global batches (same data, same seed). Keras's `fit` and `evaluate` take the
    shares within `taking_process_shares`.
    """
    distribution = multi_process_jax()
    if distribution is None:
        return batches
    if isinstance(distribution, keras.distribution.ModelParallel):
        raise ValueError("Model parallelism across JAX processes takes a tf.data.Dataset of global batches "
                         "(Keras shards it); kbert's batches are shared out by process under data "
                         "parallelism only.")
    import jax

    process = types.SimpleNamespace(rank=jax.process_index(), num_replicas_in_sync=jax.process_count())
    if isinstance(batches, keras.utils.PyDataset):
        return Shard(batches, process)
    return shares(batches, process)


@contextlib.contextmanager
def taking_process_shares(data):
    """Within it, Keras's `fit` and `evaluate` take `data` when it is this process's shares of the
    batches (`process_share`) under a `keras.distribution` of several JAX processes: its
    `auto_shard_dataset` is turned off meanwhile (with it on, Keras takes only a tf.data.Dataset,
    which it shares out itself); elsewhere, nothing changes.

    Example:
    >>> with taking_process_shares([1, 2]):
    ...     pass
    """
    distribution = multi_process_jax()
    if distribution is None or not (isinstance(data, Shard) or is_shares(data)):
        yield
        return
    auto_shard = distribution.auto_shard_dataset
    distribution.auto_shard_dataset = False
    try:
        yield
    finally:
        distribution.auto_shard_dataset = auto_shard



@contextlib.contextmanager
def training_on_shares(model, data):
    """Within it, Keras's `fit` trains `model` on `data`: under the active `TorchDataParallel`, this process's
    shares of the global batches (a `Shard`, or `shares` of a stream), with the gradients averaged over the
    processes (`torch_data_parallel.averaged_gradients`; other data is refused); across JAX processes, within
    `taking_process_shares`; elsewhere, nothing changes.

    Example:
    >>> with training_on_shares(None, [1, 2]):
    ...     pass
    """
    if torch_data_parallel.active() is None:
        with taking_process_shares(data):
            yield
        return
    if not (isinstance(data, Shard) or is_shares(data)):
        raise ValueError("Data parallelism on torch shards raw inputs (lists or arrays of strings) "
                         "over the processes, and a stream of global batches given as "
                         "kbert.distribution.data_shares.shares(batches); for other token ids or a tf.data.Dataset, "
                         "give each process its own share and train under "
                         "kbert.distribution.torch_data_parallel.averaged_gradients.")
    with torch_data_parallel.averaged_gradients(model):
        yield


__all__ = ["Shard", "is_shares", "process_share", "share", "shares", "taking_process_shares", "training_on_shares"]
