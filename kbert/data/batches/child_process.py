"""Batches made in a child process: a data pipeline that cannot slow the training process."""

import contextlib
import multiprocessing
import os
import queue
import sys
import threading
import traceback

_END = "end"
_ERROR = "error"
_BATCH = "batch"


def process_batches(make_batches, *args, buffer=16, backend="tensorflow", stderr_filter=None, **kwargs):
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
        stderr_filter: a function of each line the child writes to stderr, true to pass the
            line on to this process's stderr (e.g. one that drops TensorFlow's start-up lines,
            which the child prints as it loads TensorFlow). None: the child writes there itself.

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
        with _stderr_filtered(stderr_filter) as forwarding:
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
        if forwarding:
            forwarding.join(timeout=5.0)  # the child has ended: its last lines are on their way


@contextlib.contextmanager
def _stderr_filtered(keep):
    """Within the block, processes started get a pipe as their stderr (file descriptor 2); a
    thread passes on the lines `keep` accepts to this process's stderr. Yields the thread (None
    without `keep`)."""
    if keep is None:
        yield None
        return
    read_end, write_end = os.pipe()
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(write_end, 2)  # inherited by a process started now
    os.close(write_end)
    try:
        forwarding = threading.Thread(target=_forward_lines, args=(read_end, keep), daemon=True)
        yield forwarding
    except BaseException:
        os.close(read_end)  # no process was started to write to it
        raise
    finally:
        os.dup2(saved, 2)  # this process's stderr again; the pipe's write end now lives in the child alone
        os.close(saved)
    forwarding.start()


def _forward_lines(read_end, keep):
    with open(read_end, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if keep(line):
                sys.stderr.write(line)
                sys.stderr.flush()


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
            _send(batches, parent, (_BATCH, batch))
        _send(batches, parent, (_END, None))
    except BaseException:
        _send(batches, parent, (_ERROR, traceback.format_exc()))


def _send(batches, parent, message):
    """Puts `message`, waiting while the buffer is full. Once the parent has died the child exits on the spot
    (`os._exit`), without closing the pipeline or the queue: nobody reads what it made, and a clean exit can take long
    or never end - the queue's feeder thread waits for a reader to make room in the pipe, a tf.data iterator's teardown
    for its threads (an orphan of a killed pretraining run lingered 40 s in `~IteratorResource`)."""
    while os.getppid() == parent:
        try:
            batches.put(message, timeout=1.0)
            return
        except queue.Full:
            pass
    os._exit(0)
