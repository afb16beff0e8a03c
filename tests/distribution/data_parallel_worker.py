"""Spawned by tests/distribution/test_data_parallel.py (and run by commands_worker.py for
test_torch_app_processes.py): trains `data_parallel_training.train` data-parallel and writes the weights to OUT
(.npz).

argv: tensorflow OUT: on 2 logical CPU devices, under `tf.distribute.MirroredStrategy`, and on one device
(no strategy) in the same process, unshuffled: under a strategy, Keras's TensorFlow trainer reads the
data once to build the model before the first epoch, a pass after which the batches reshuffle.

argv: tensorflow-app INIT DATA RUN: on 2 logical CPU devices, the sentiment app trains `--distribution
data --remat` on the backbone folder INIT and the file DATA into RUN, in a process of its own: run after the
comparisons in one process (a second MirroredStrategy), its fit failed with a collective's shape mismatch.

argv: torch OUT: one of the torch processes of a job described by MASTER_ADDR, MASTER_PORT, RANK and
WORLD_SIZE (as torchrun sets them); shuffles from seed RANK, so only a shuffle seed shared with process 0
gives the one-process batches.
"""

import os
import pathlib
import sys

job, out = sys.argv[1], sys.argv[2]
backend = job.split("-")[0]
os.environ["KERAS_BACKEND"] = backend
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
if backend == "tensorflow":
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402

import kbert  # noqa: E402
import kbert.distribution  # noqa: E402
from tests.distribution.data_parallel_training import TEXTS, train  # noqa: E402

results = {}
if job == "tensorflow-app":
    sys.path.append(str(pathlib.Path(__file__).resolve().parents[2] / "apps"))
    import sentence_cli

    init, data, run = sys.argv[2:5]
    sentence_cli.main("sentiment", ["train", "--data", data, "--init", init, "--out", run, "--epochs", "1",
                                    "--batch-size", "5", "--distribution", "data", "--remat"])
    sys.exit()
if backend == "tensorflow":
    single, results["single_steps"], _ = train(None, shuffle=False)
    results.update({f"single{i}": weight for i, weight in enumerate(single)})
    strategy = kbert.distribution.data_parallel()
    results["replicas"] = strategy.num_replicas_in_sync
    weights, results["steps"], results["moved"] = train(strategy, shuffle=False)
    kbert.distribution.activate(strategy)  # the pretrainer masks per batch: unpadded, 5 rows on 2 devices
    try:
        kbert.BertPretrainer.from_preset("bert_tiny", sequence_length=16, next_sentence=False).fit(
            TEXTS, batch_size=5, verbose=0)
    except ValueError as error:
        results["refusal"] = str(error)
    kbert.distribution.activate(None)
else:
    distribution = kbert.distribution.data_parallel()
    results["replicas"] = distribution.num_replicas_in_sync
    weights, results["steps"], results["moved"] = train(distribution, shuffle_seed=distribution.rank)
results.update({f"weight{i}": weight for i, weight in enumerate(weights)})
np.savez(out, **results)
