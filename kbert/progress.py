"""Progress a person can read in a log: a line every half minute with the time left, not a bar.

Keras's progress bar redraws one line with carriage returns: on a terminal that is what a person
wants, but in a log file, a CI job or a notebook cell it prints nothing until the end of an epoch
(or garbles the log). `ProgressLines` prints a plain line at most every `every_seconds`, and
`progress_mode` decides which of the two a `verbose` setting means here.
"""

import sys
import time


def progress_mode(verbose):
    """What a `verbose` setting of kbert's long jobs means: None (silent), "bar" (Keras's bar),
    "epochs" (a line per epoch) or "lines" (`ProgressLines`). "auto": a bar on a terminal, else lines.

    Example:
    >>> [progress_mode(v) for v in (0, 1, 2, "lines")]
    [None, 'bar', 'epochs', 'lines']
    """
    if verbose == "auto":
        return "bar" if sys.stdout.isatty() else "lines"
    modes = {0: None, 1: "bar", 2: "epochs", "lines": "lines"}
    if verbose not in modes:
        raise ValueError(f"verbose={verbose!r}: expected 0, 1, 2, 'lines' or 'auto'.")
    return modes[verbose]


class ProgressLines:
    """Counts work done of `total` units and prints a line with the rate and the time left, at most every
    `every_seconds` (the first one after that long: work done sooner prints nothing), and a last line
    when the work ends, if a line was printed before it.

    Args:
        total: int. Units of work (steps, batches).
        title: str. What the work is, at the start of each line ("fine-tune", "predict").
        unit: str. What a unit is ("step", "batch").
        every_seconds: float. Seconds between lines.
        clock: callable returning seconds (time.monotonic); tests pass their own.

    Example:
    >>> now = [0.0]
    >>> progress = ProgressLines(100, "fine-tune", "step", every_seconds=30, clock=lambda: now[0])
    >>> now[0] = 10.0; progress.add(5)
    >>> now[0] = 31.0; progress.add(5, {"loss": 0.6931})
    fine-tune: step 10/100 (10%), loss 0.6931, 3.10 s/step, about 4 min 39 s left
    """

    def __init__(self, total, title, unit="step", every_seconds=30.0, clock=time.monotonic):
        self.total, self.title, self.unit = total, title, unit
        self.every_seconds, self.clock = every_seconds, clock
        self.done = 0
        self.start = self.last_line = clock()
        self.printed = False

    def add(self, count=1, values=None):
        """`count` more units done. `values`: a dict of numbers for the line (e.g. {"loss": 0.41}), or a
        function returning one, called only when a line is printed."""
        self.done += count
        now = self.clock()
        finished = self.done >= self.total
        if now - self.last_line >= self.every_seconds or (finished and self.printed):
            self.last_line, self.printed = now, True
            print(self.line(now, values() if callable(values) else values), flush=True)

    def line(self, now, values=None):
        """The progress line: units done of the total, `values`, the rate and the time left."""
        seconds_each = (now - self.start) / max(self.done, 1)
        parts = [f"{self.title}: {self.unit} {self.done:,}/{self.total:,} ({self.done / max(self.total, 1):.0%})"]
        parts += [f"{name} {value:.4f}" for name, value in (values or {}).items()]
        plural = self.unit + ("es" if self.unit.endswith(("s", "ch", "sh", "x")) else "s")
        rate = f"{seconds_each:.2f} s/{self.unit}" if seconds_each >= 0.1 else f"{1 / seconds_each:.1f} {plural}/s"
        left = max(self.total - self.done, 0) * seconds_each
        parts.append(f"{rate}, about {duration(left)} left" if left else
                     f"{rate}, done in {duration(now - self.start)}")
        return ", ".join(parts)


def duration(seconds):
    """A span of time for people: "42 s", "3 min 20 s", "1 h 05 min".

    Example:
    >>> duration(42.4), duration(200), duration(3900)
    ('42 s', '3 min 20 s', '1 h 05 min')
    """
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s" if seconds % 60 else f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
