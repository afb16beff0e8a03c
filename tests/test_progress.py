"""kbert.progress: the lines a log shows on long work, worked out by hand with a clock the test moves."""

import pytest

from kbert.progress import ProgressLines, duration, progress_mode


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_line_every_interval_with_the_rate_and_the_time_left(capsys):
    clock = Clock()
    progress = ProgressLines(1000, "fine-tune", "step", every_seconds=30, clock=clock)
    for step in range(1, 1001):
        clock.now = 3.0 * step  # 3 s a step
        progress.add(1, lambda: {"loss": 0.5})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1000 * 3 // 30  # every 10 steps (30 s), the last one included
    assert lines[0] == "fine-tune: step 10/1,000 (1%), loss 0.5000, 3.00 s/step, about 49 min 30 s left"
    assert lines[49] == "fine-tune: step 500/1,000 (50%), loss 0.5000, 3.00 s/step, about 25 min left"
    assert lines[-1] == "fine-tune: step 1,000/1,000 (100%), loss 0.5000, 3.00 s/step, done in 50 min"


def test_work_done_within_the_interval_prints_nothing(capsys):
    clock = Clock()
    progress = ProgressLines(20, "predict", "batch", every_seconds=30, clock=clock)
    for batch in range(20):
        clock.now = batch + 1.0
        progress.add()
    assert capsys.readouterr().out == ""


def test_fast_work_gives_a_rate_per_second(capsys):
    clock = Clock()
    progress = ProgressLines(1000, "predict", "batch", every_seconds=1, clock=clock)
    clock.now = 1.0
    progress.add(50, {"accuracy": 0.9})
    assert capsys.readouterr().out == "predict: batch 50/1,000 (5%), accuracy 0.9000, 50.0 batches/s, about 19 s left\n"


def test_values_are_read_only_for_a_line():
    clock = Clock()
    progress = ProgressLines(10, "fine-tune", every_seconds=30, clock=clock)
    progress.add(1, lambda: pytest.fail("read without a line to print"))


def test_modes_and_durations():
    assert [progress_mode(v) for v in (0, 1, 2, "lines")] == [None, "bar", "epochs", "lines"]
    with pytest.raises(ValueError, match="verbose=3: expected 0, 1, 2, 'lines' or 'auto'"):
        progress_mode(3)
    assert [duration(s) for s in (0.4, 59.6, 60, 61, 3599, 3600, 7325)] == [
        "0 s", "1 min", "1 min", "1 min 01 s", "59 min 59 s", "1 h 00 min", "2 h 02 min"]
