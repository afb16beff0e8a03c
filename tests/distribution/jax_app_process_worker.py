"""Spawned by tests/distribution/test_jax_app_processes.py: tests/distribution/app_process_worker.py (a task app's
command, in a folder of its own) on JAX with DEVICES virtual CPU devices, which also writes the rows of every batch
the task model traced a training step on (the global batch) to SHAPES_FILE, one number a line.

argv: DEVICES SHAPES_FILE WORKDIR STDOUT_FILE APP ARGS...: a JAX job's process when KERAS_DISTRIBUTION_JOB_ADDRESSES,
KERAS_DISTRIBUTION_NUM_PROCESSES and KERAS_DISTRIBUTION_PROCESS_ID are set, else one process. APP pretrain runs
apps/pretrain.py through tests/distribution/pretrain_process_worker.py instead, ARGS being its AUDIT_FILE and the
app's arguments.
"""

import os
import pathlib
import runpy
import sys

devices, shapes_file = sys.argv[1], pathlib.Path(sys.argv[2])
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"  # before jax is imported
os.environ["KERAS_BACKEND"] = "jax"
pretrain = sys.argv[5] == "pretrain"
sys.argv[1:] = ["app", *sys.argv[3:5], *sys.argv[6:]] if pretrain else sys.argv[3:]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from kbert.tasks.bert_task import BertTask  # noqa: E402

traced = []
train_step = BertTask.train_step


def recorded_train_step(self, state, data):
    traced.append(int(data[0]["token_ids"].shape[0]))  # at trace time: the global batch's rows
    return train_step(self, state, data)


BertTask.train_step = recorded_train_step  # every task model's
worker = "pretrain_process_worker.py" if pretrain else "app_process_worker.py"
runpy.run_path(str(pathlib.Path(__file__).with_name(worker)), run_name="__main__")
shapes_file.write_text("".join(f"{rows}\n" for rows in traced))
