"""One of 2 JAX processes on localhost, each with 4 virtual CPU devices, training a tiny BERT classifier
data-parallel over the 8 global devices (`keras.distribution.initialize`, then `DataParallel`).

argv: COORDINATOR_PORT PROCESS_ID WORKDIR. Reads WORKDIR/initial.npz (weights, data), fits on a
`tf.data.Dataset` of the global batches of 8 rows, of which Keras feeds this process its half
(`DataParallel.distribute_dataset`: rebatch to 4, shard by process), and writes
WORKDIR/process_<ID>.npz (the weights after training, the device counts).
"""

import os
import pathlib
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # before jax is imported
os.environ["KERAS_BACKEND"] = "jax"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

port, process_id, work = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3])
keras.distribution.initialize(f"localhost:{port}", num_processes=2, process_id=process_id)

import kbert.distribution  # noqa: E402
from tests.distribution.test_multi_process import GLOBAL_BATCH, classifier  # noqa: E402

saved = dict(np.load(work / "initial.npz"))
keras.distribution.set_distribution(kbert.distribution.data_parallel())  # every device of both processes
model = classifier([saved[f"weight{i}"] for i in range(sum(key.startswith("weight") for key in saved))])
inputs = {key: saved[key] for key in ("token_ids", "segment_ids", "padding_mask")}
batches = tf.data.Dataset.from_tensor_slices((inputs, saved["labels"])).batch(GLOBAL_BATCH)
model.fit(batches, epochs=1, verbose=0)
np.savez(work / f"process_{process_id}.npz", *model.get_weights(),
         devices=len(keras.distribution.list_devices()), local_devices=len(__import__("jax").local_devices()),
         steps=int(model.optimizer.iterations))
