"""FitProgress: `fit`'s progress as plain lines (what a log file shows), on the steps of a real fit."""

import re

import keras
import numpy as np

from kbert.training.fit_progress import FitProgress, fit_progress


def test_lines_count_the_steps_of_the_fit_and_name_the_epoch(capsys):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((6, 1)), np.ones((6, 1)), batch_size=2, epochs=2, verbose=0,
              callbacks=[FitProgress("toy", every_seconds=0)])
    lines = capsys.readouterr().out.splitlines()
    steps = [line for line in lines if "done" not in line.split(":")[0] and ": step" in line]
    assert [re.match(r"toy, epoch (\d)/2: step (\d)/6 ", line).groups() for line in steps] == [
        ("1", "1"), ("1", "2"), ("1", "3"), ("2", "4"), ("2", "5"), ("2", "6")]
    assert all(re.search(r", loss \d\.\d{4}, .* (about .* left|done in \d+ s)$", line) for line in steps), steps
    assert "left" in steps[0] and "done in" in steps[-1]
    assert [line.split(" done")[0] for line in lines if "/2 done" in line] == ["toy: epoch 1/2", "toy: epoch 2/2"]


def test_a_resumed_fit_counts_only_the_steps_it_has_left(capsys):
    """A fit that starts at epoch 2 of 3 (as one resumed from a backup does) has one epoch of steps to go."""
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 1)), np.ones((4, 1)), batch_size=2, epochs=3, initial_epoch=2, verbose=0,
              callbacks=[FitProgress("toy", every_seconds=0)])
    assert "toy, epoch 3/3: step 2/2 (100%)" in capsys.readouterr().out


def test_verbose_settings():
    assert fit_progress(0) == (0, []) and fit_progress(1) == (1, []) and fit_progress(2) == (2, [])
    verbose, callbacks = fit_progress("lines", title="ner")
    assert verbose == 0 and isinstance(callbacks[0], FitProgress) and callbacks[0].title == "ner"
