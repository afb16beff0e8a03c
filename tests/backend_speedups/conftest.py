import pytest


@pytest.fixture(autouse=True)
def speedups_on(monkeypatch):
    """These are the tests of the speed-ups themselves: every one on, whatever KBERT_SPEEDUPS the suite runs with
    (a test that turns some off says so; test_switch.py compares models with every speed-up and with none)."""
    monkeypatch.setenv("KBERT_SPEEDUPS", "all")
