"""Spawned by tests/distribution/processes.py's `run_commands`: runs workers' commands one after another in this one
process, as a process of a job (or one alone), started once, runs a user's apps in turn. Under JAX it also writes the
rows of every batch a task model traced a training step on during each command (the global batch) to that command's
ROWS_FILE, one number a line.

argv: COMMANDS_FILE, holding a JSON list of commands [ROWS_FILE, WORKER, ARGS...]: tests/distribution/WORKER (e.g.
app_process_worker.py) run as __main__ with the arguments ARGS. The backend, JAX's virtual devices and the job come
from the environment (KERAS_BACKEND, XLA_FLAGS; KERAS_DISTRIBUTION_* on JAX, MASTER_ADDR and the rest on torch).
"""

import json
import os
import pathlib
import runpy
import sys

here = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[1]))
traced = []

if os.environ["KERAS_BACKEND"] == "jax":
    from kbert.tasks.bert_task import BertTask

    train_step = BertTask.train_step

    def recorded_train_step(self, state, data):
        traced.append(int(data[0]["token_ids"].shape[0]))  # at trace time: the global batch's rows
        return train_step(self, state, data)

    BertTask.train_step = recorded_train_step  # every task model's

for rows_file, worker, *arguments in json.loads(pathlib.Path(sys.argv[1]).read_text()):
    traced.clear()
    sys.argv[1:] = arguments
    runpy.run_path(str(here / worker), run_name="__main__")
    pathlib.Path(rows_file).write_text("".join(f"{rows}\n" for rows in traced))
