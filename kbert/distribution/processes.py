"""Process orchestration in a job of several processes (torch's under `data_parallel()`, JAX's after
`keras.distribution.initialize`): which process writes (`is_chief`), process 0's work first (`chief_first`),
joining a JAX job (`join_jax_job`), saving alone (`writing_alone`)."""

import contextlib

import keras
import numpy as np

from kbert.distribution import torch_data_parallel

# What `keras.distribution.initialize()` reads: this process's place in a job of several JAX processes.
JAX_JOB = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES", "KERAS_DISTRIBUTION_PROCESS_ID")


def is_chief():
    """True in the process that writes a run's files and prints: process 0 of a job of several
    processes (torch's under `data_parallel()`, JAX's after `keras.distribution.initialize`), and
    any process of its own. The others train alongside it and write nothing.

    Example:
    >>> is_chief()
    True
    """
    backend = keras.config.backend()
    if backend == "torch":
        return torch_data_parallel.active() is None or torch_data_parallel.active().rank == 0
    if backend == "jax":
        import jax

        return jax.process_index() == 0
    return True


def chief_first(work, read=lambda: None):
    """Process 0 of a job of several processes (torch's under `data_parallel()`, JAX's after
    `keras.distribution.initialize`) runs `work()` (e.g. writes files) while the others wait; they
    then run `read()` (e.g. read those files). Returns `work()`'s result in process 0, `read()`'s in
    the others, `work()`'s in a process of its own. If `work` raises, process 0 raises it and the
    others a RuntimeError naming it: none waits forever.

    Example:
    >>> chief_first(lambda: "written", lambda: "read")
    'written'
    """
    broadcast = _from_process_0()
    if broadcast is None:
        return work()
    if is_chief():
        try:
            result = work()
        except BaseException as error:
            broadcast(f"{type(error).__name__}: {error}")
            raise
        broadcast("")
        return result
    failure = broadcast("")
    if failure:
        raise RuntimeError(f"Process 0 stopped: {failure}")
    return read()


def join_jax_job():
    """Joins the job of several JAX processes that the environment describes (`JAX_JOB`:
    `KERAS_DISTRIBUTION_JOB_ADDRESSES`, the coordinator first, `KERAS_DISTRIBUTION_NUM_PROCESSES`,
    `KERAS_DISTRIBUTION_PROCESS_ID`), with `keras.distribution.initialize()`, unless joined already;
    nothing when none of them is set. Run it before any JAX computation. Returns the number of
    processes. A ValueError names the variables missing when only some are set.

    Example:
    >>> join_jax_job()  # no job in the environment: this process alone
    1
    """
    import os

    import jax

    given = [name for name in JAX_JOB if name in os.environ]
    if given and not jax.distributed.is_initialized():
        missing = [name for name in JAX_JOB if name not in os.environ]
        if missing:
            raise ValueError(f"A job of several JAX processes needs {', '.join(JAX_JOB)} set in each process; "
                             f"{', '.join(given)} set but {', '.join(missing)} not.")
        keras.distribution.initialize()
    return jax.process_count()


@contextlib.contextmanager
def writing_alone():
    """Within it, process 0 may save a model while the others do not: under a `keras.distribution` of
    several JAX processes, that distribution is set aside meanwhile (Keras's saving creates variables,
    e.g. a copy of the model or a stand-in optimizer, and creating one under it is a step every process
    must take together: process 0 alone would wait forever); elsewhere, nothing changes.

    Example:
    >>> with writing_alone():
    ...     pass
    """
    distribution = multi_process_jax()
    if distribution is None:
        yield
        return
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(distribution)


def _from_process_0():
    """In a job of several processes, a function that every process calls with a string and that returns
    process 0's (a collective step); None in a process of its own."""
    backend = keras.config.backend()
    if backend == "torch":
        return None if torch_data_parallel.active() is None else torch_data_parallel.broadcast_from_process_0
    if backend != "jax":
        return None
    import jax

    if jax.process_count() == 1:
        return None
    from jax.experimental import multihost_utils

    def broadcast(text):  # of one shape in every process: the length first, then the bytes
        data = np.frombuffer(text.encode(), np.uint8)
        size = int(multihost_utils.broadcast_one_to_all(np.int32(data.size)))
        if not size:
            return ""
        data = data if is_chief() else np.zeros(size, np.uint8)
        return bytes(np.asarray(multihost_utils.broadcast_one_to_all(data))).decode()

    return broadcast


def multi_process_jax():
    """The active `keras.distribution` if it spans several JAX processes, else None."""
    distribution = keras.distribution.distribution() if keras.config.backend() == "jax" else None
    return distribution if distribution is not None and distribution.num_processes > 1 else None



__all__ = ["JAX_JOB", "chief_first", "is_chief", "join_jax_job", "multi_process_jax", "writing_alone"]
