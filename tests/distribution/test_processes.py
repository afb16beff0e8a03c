"""kbert.distribution.processes in a process of its own: it is the chief, runs process 0's work itself and
refuses a half-described JAX job. Jobs of several processes: test_multi_process.py, test_data_parallel.py (TensorFlow)
and the apps' (test_torch_app_processes.py, test_jax_app_processes.py)."""

import keras
import pytest

from kbert.distribution.processes import JAX_JOB, chief_first, is_chief, join_jax_job, multi_process_jax


def test_a_process_of_its_own_is_the_chief_and_runs_the_work():
    assert is_chief()
    assert chief_first(lambda: "written", lambda: "read") == "written"
    with pytest.raises(OSError, match="disk full"):
        chief_first(lambda: (_ for _ in ()).throw(OSError("disk full")))
    assert multi_process_jax() is None


@pytest.mark.skipif(keras.config.backend() != "jax", reason="joins a job of JAX processes")
def test_a_jax_job_half_described_names_the_missing_variables(monkeypatch):
    for name in JAX_JOB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "2")
    with pytest.raises(ValueError, match="KERAS_DISTRIBUTION_NUM_PROCESSES set but "
                                         "KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_PROCESS_ID not"):
        join_jax_job()
