"""The lines that libraries print on stderr as they start, held back (the standard library only).

TensorFlow, CUDA and absl print while TensorFlow loads and first looks for devices, before
absl's logging starts, so TF_CPP_MIN_LOG_LEVEL does not reach them: absl's notice, INFO lines
(oneDNN, "Could not find cuda drivers", CPU instructions and their continuation), and the CUDA
probes of a machine without a GPU; LiteRT notes that it applied its CPU delegate. kbert loads
TensorFlow and LiteRT inside `start_up_lines_held()`; `KBERT_VERBOSE=1` shows the lines.
"""

import contextlib
import os
import re
import sys
import tempfile

START_UP_LINE = re.compile(r"WARNING: All log messages before absl::InitializeLog\(\)|I\d{4} |"
                           r"To enable the following instructions|E\d{4} .*(cuInit|cuda|cuDNN|cuFFT|cuBLAS)|"
                           r"INFO: Created TensorFlow Lite XNNPACK delegate for CPU")


def verbose():
    """Whether start-up lines are to be shown: the environment variable `KBERT_VERBOSE` is set
    (and not 0); the apps' `--verbose` sets it."""
    return os.environ.get("KBERT_VERBOSE", "0") not in ("", "0")


@contextlib.contextmanager
def start_up_lines_held():
    """Holds what stderr receives (C++ code's too) within the block; then writes the lines that are
    not start-up lines (`START_UP_LINE`), also when the block raises. Holds nothing when `verbose()`.

    Example:
    >>> with start_up_lines_held():
    ...     _ = os.write(2, b"I0000 00:00:1 port.cc:153] oneDNN custom operations are on.\\n")
    """
    if verbose():
        yield
        return
    with tempfile.TemporaryFile() as held:
        try:
            with _stderr_to(held):
                yield
        finally:
            held.seek(0)
            lines = held.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not START_UP_LINE.match(line)))


@contextlib.contextmanager
def _stderr_to(file):
    """File descriptor 2 (and so sys.stderr, and C++ code) writes to `file` within the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
