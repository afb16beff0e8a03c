"""Batches made in a child process: a data pipeline that cannot slow the training process."""

import multiprocessing
import os
import queue
import traceback

_END = "end"
_ERROR = "error"
_BATCH = "batch"


def process_batches(make_batches, *args, buffer=16, backend="tensorflow", **kwargs):
    """Yields the batches `make_batches(*args, **kwargs)` yields, made in a child process.

    The child is a fresh interpreter (multiprocessing's "spawn"), so the pipeline (e.g. a
    tf.data one: TensorFlow's thread pools, tf-text kernels) lives outside the process that
    trains: on torch, a tf.data pipeline run in the training process leaves torch's matmuls
    about 2x slower for the rest of the process (tools/bf16_after_pipeline.py). The child
    runs ahead by `buffer` batches; a `tf.data.Dataset` is iterated as numpy. The child
    stops when the generator is closed or garbage-collected, when the parent dies (even by
    kill -9) and at the end of the data; an error in the child is raised here with the
    child's traceback.

    Args:
        make_batches: a module-level function (the child imports it by name) returning an
            iterable of batches (numpy arrays, or nests of them) or a `tf.data.Dataset`.
        *args, **kwargs: its arguments (picklable: paths, numbers, not a tokenizer object).
        buffer: int. Batches made ahead.
        backend: str. The child's `KERAS_BACKEND` (it imports kbert): TensorFlow by default,
            the one a tf.data pipeline needs anyway.

    Example:
    >>> import itertools
    >>> batches = process_batches(itertools.repeat, [1, 2], 3)
    >>> list(batches)
    [[1, 2], [1, 2], [1, 2]]
    """
    context = multiprocessing.get_context("spawn")
    batches = context.Queue(maxsize=buffer)
    child = context.Process(target=_make_and_send, args=(batches, os.getpid(), make_batches, args, kwargs),
                            daemon=True)
    environment = os.environ.get("KERAS_BACKEND")
    os.environ["KERAS_BACKEND"] = backend  # the spawned interpreter inherits the environment at start
    try:
        child.start()
    finally:
        if environment is None:
            del os.environ["KERAS_BACKEND"]
        else:
            os.environ["KERAS_BACKEND"] = environment
    try:
        while True:
            kind, value = _receive(batches, child)
            if kind == _END:
                return
            if kind == _ERROR:
                raise RuntimeError(f"The batch process failed:\n{value}")
            yield value
    finally:
        child.terminate()
        child.join()
        batches.close()


def _receive(batches, child):
    while True:
        try:
            return batches.get(timeout=1.0)
        except queue.Empty:
            if not child.is_alive():
                raise RuntimeError(f"The batch process ended without a word (exit code {child.exitcode}).") from None


def _make_and_send(batches, parent, make_batches, args, kwargs):
    """The child's loop: sends ("batch", b) for each batch, then ("end", None), or ("error", traceback)."""
    try:
        made = make_batches(*args, **kwargs)
        if hasattr(made, "as_numpy_iterator"):  # a tf.data.Dataset
            made = made.as_numpy_iterator()
        for batch in made:
            if not _send(batches, parent, (_BATCH, batch)):
                return
        _send(batches, parent, (_END, None))
    except BaseException:
        _send(batches, parent, (_ERROR, traceback.format_exc()))


def _send(batches, parent, message):
    """Puts `message`, waiting while the buffer is full; False once the parent has died."""
    while os.getppid() == parent:
        try:
            batches.put(message, timeout=1.0)
            return True
        except queue.Full:
            pass
    return False
