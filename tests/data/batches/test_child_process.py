"""Batches made in a child process: the same batches as in-process, errors carried over, no orphans."""

import itertools
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import keras
import pytest
import tensorflow as tf

from kbert.data.batches.child_process import process_batches
from kbert.data.pretraining.dataset import pretraining_dataset
from kbert.text import BertTokenizer

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "ran", "."]


def test_the_child_makes_the_batches_the_pipeline_makes_in_process(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat. The dog ran.\nThe cat ran.\n\nThe dog sat. The mat.\n" * 20)
    options = dict(tokenizer=BertTokenizer(VOCAB), batch_size=4, max_seq_length=12, repeat=False, seed=3)
    tf.random.set_seed(None)  # tf.data's shuffle also reads TensorFlow's global seed; the child has none
    expected = list(pretraining_dataset([corpus], **options).as_numpy_iterator())
    batches = list(process_batches(pretraining_dataset, [corpus], **options))
    assert len(batches) == len(expected) > 2
    for (x, y, w), (x0, y0, w0) in zip(batches, expected):
        for got, want in ((x, x0), (y, y0), (w, w0)):
            assert got.keys() == want.keys() and all((got[key] == want[key]).all() for key in want)
    assert not multiprocessing.active_children()  # the child ended with its data


def test_an_error_in_the_child_is_raised_with_its_traceback(tmp_path):
    batches = process_batches(pretraining_dataset, [tmp_path / "missing.txt"], BertTokenizer(VOCAB), 4)
    with pytest.raises(RuntimeError, match=r"(?s)batch process failed.*missing\.txt"):
        next(batches)


def noisy_batches(lines):
    """Writes `lines` to stderr, then yields one batch."""
    for line in lines:
        print(line, file=sys.stderr, flush=True)
    yield 1


def test_the_child_s_stderr_lines_pass_through_the_filter(capfd):
    lines = ["I0000 00:00:1.0 1 port.cc:153] start-up chatter", "UserWarning: a real warning"]
    assert list(process_batches(noisy_batches, lines, stderr_filter=lambda line: not line.startswith("I0000"))) == [1]
    stderr = capfd.readouterr().err
    assert "a real warning" in stderr and "start-up chatter" not in stderr, stderr
    assert list(process_batches(noisy_batches, lines)) == [1]  # no filter: the child writes to stderr itself
    assert "start-up chatter" in capfd.readouterr().err


PARENT = """
import multiprocessing, time
from kbert.data.batches.child_process import process_batches


def slow_to_close():
    \"\"\"Batches of 1 MB (more than the pipe holds) from a pipeline whose teardown takes 10 minutes, as a tf.data
    iterator's waits on its threads.\"\"\"
    try:
        while True:
            yield bytes(1 << 20)
    finally:
        time.sleep(600)


if __name__ == "__main__":
    batches = process_batches(slow_to_close)
    next(batches)
    print(multiprocessing.active_children()[0].pid, flush=True)
    time.sleep(600)
"""


def test_closing_stops_the_child_and_so_does_the_parent_s_kill_9(tmp_path):
    batches = process_batches(itertools.count)
    assert next(batches) == 0
    batches.close()
    assert not multiprocessing.active_children()

    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 30
    while time.time() < deadline and _running(child):
        time.sleep(0.2)
    assert not _running(child), "the child outlived its parent"


def _running(pid):
    """True while `pid` exists and is not a zombie (an exited child nobody has reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False

