"""kbert_core.start_up: what a block writes on file descriptor 2 (C++ code's too) is held, start-up lines dropped,
the other lines written after, also when the block raises; KBERT_VERBOSE=1 holds nothing."""

import os

import pytest

from kbert_core.start_up import START_UP_LINE, start_up_lines_held

LINES = [b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
         b"I0000 00:00:1795720985.887166   26540 port.cc:153] oneDNN custom operations are on.\n",
         b"E0000 00:00:1795720986.172047   26540 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n",
         b"/x.py:3: UserWarning: a real warning\n"]


def test_start_up_lines_are_dropped_and_the_others_written_after(capfd, monkeypatch):
    monkeypatch.delenv("KBERT_VERBOSE", raising=False)
    with pytest.raises(RuntimeError), start_up_lines_held():
        for line in LINES:
            os.write(2, line)  # as C++ code writes, below sys.stderr
        raise RuntimeError("the block fails")
    assert capfd.readouterr().err == "/x.py:3: UserWarning: a real warning\n"
    assert [bool(START_UP_LINE.match(line.decode())) for line in LINES] == [True, True, True, False]


def test_kbert_verbose_holds_nothing(capfd, monkeypatch):
    monkeypatch.setenv("KBERT_VERBOSE", "1")
    with start_up_lines_held():
        os.write(2, LINES[1])
    assert capfd.readouterr().err == LINES[1].decode()
