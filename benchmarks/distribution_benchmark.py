"""Per device under `kbert.distribution`: the bytes of parameters and optimizer state under
ModelParallel (JAX, virtual CPU devices), and the step time of 1 vs N devices on the same global
batch on each backend.

bytes: for each preset (bert_base, bert_large by default) and mesh (8x1, 4x2, 2x4, 1x8: replicas x
shards) a `BertPretrainer` (backbone, pooler, MLM head) and its `bert_adamw` are built under
`model_parallel(mesh)` with their variables deferred (`StatelessScope(initialize_variables=False)`:
no memory is allocated, bert_large replicated on 8 devices would take 32 GB). Each variable gets
the layout Keras gives it when it is created (`distribution.get_variable_layout`, the optimizer's
slots their weight's), and a device holds `NamedSharding.shard_shape(shape)` of it. `--check`
first counts bert_tiny so on each mesh and compares with the bytes of each device's
`addressable_shards` of a bert_tiny built for real (its 30,522 x 128 embeddings dominate). Model parallelism's point: the state per device falls by the
model dimension (the embeddings and layer norms, replicated or split, included).

time: per backend, a `BertClassifier` (--time-preset, dropout 0, its default optimizer) trains one
`fit` of --steps + 1 copies of the same global batch (--batch-size x --seq-len) without a
distribution, then under `kbert.distribution.data_parallel()`: JAX on --devices virtual devices,
TensorFlow on --devices logical CPU devices (MirroredStrategy), torch as --processes gloo processes
of one thread each, as torchrun starts them (process 0's time). Prints the median step
(`on_train_batch_begin` to `_end`) after the compiling one. On a CPU the N devices share its
cores: the ratio is the overhead of splitting a step, not a speed-up. Do not run it on a shared
machine.

    python benchmarks/distribution_benchmark.py --jobs bytes --check
    python benchmarks/distribution_benchmark.py --jobs time --devices 8 --processes 2
    python benchmarks/distribution_benchmark.py --jobs time --backends torch --time-preset bert_tiny --steps 2
"""

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BACKENDS = ("jax", "tensorflow", "torch")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", nargs="+", choices=("bytes", "time"), default=["bytes"])
    parser.add_argument("--presets", nargs="+", default=["bert_base", "bert_large"])
    parser.add_argument("--meshes", nargs="+", default=["8x1", "4x2", "2x4", "1x8"], help="REPLICASxSHARDS")
    parser.add_argument("--check", action="store_true",
                        help="first compare the computed bytes with allocated bert_tiny shards on each mesh")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS), help="of the time job")
    parser.add_argument("--devices", type=int, default=8,
                        help="JAX's virtual devices and TensorFlow's logical CPU devices of the time job's second run")
    parser.add_argument("--processes", type=int, default=2, help="torch processes of the time job's second run")
    parser.add_argument("--time-preset", default="bert_mini")
    parser.add_argument("--batch-size", type=int, default=32, help="the global batch of the time job")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10, help="timed steps of the time job")
    parser.add_argument("--worker", choices=("bytes", "time"), help=argparse.SUPPRESS)
    parser.add_argument("--worker-devices", type=int, default=1, help=argparse.SUPPRESS)
    return parser.parse_args()


def run_worker(job, backend, devices, processes=1):
    """Runs this script as the worker `job` on `backend`, split `devices` ways: JAX's virtual devices and
    TensorFlow's logical CPU devices in one process, or `processes` torch processes of one job on localhost
    (their environment as torchrun sets it). Returns process 0's JSON line."""
    env = {**os.environ, "KERAS_BACKEND": backend}
    if backend == "jax":
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    envs = [env]
    if processes > 1:
        port = str(_free_port())
        envs = [{**env, "MASTER_ADDR": "localhost", "MASTER_PORT": port, "RANK": str(rank),
                 "WORLD_SIZE": str(processes), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
                for rank in range(processes)]
    command = [sys.executable, __file__, "--worker", job, "--worker-devices", str(devices), *sys.argv[1:]]
    outputs = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in envs]
    workers = [subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)
               for env, (out, err) in zip(envs, outputs)]
    failed = _wait_all(workers)
    for out, err in outputs:
        out.seek(0), err.seek(0)
    if failed is not None:
        sys.exit(f"worker {job} on {backend}, {devices} devices, process {failed} failed:\n"
                 f"{outputs[failed][1].read()[-3000:]}")
    return json.loads(outputs[0][0].read().strip().splitlines()[-1])


def _wait_all(workers):
    """Waits for every process of `workers`; returns the index of the first that fails (then kills the
    others, which would wait for it), or None."""
    try:
        while True:
            codes = [worker.poll() for worker in workers]
            if any(codes) or None not in codes:
                return next((index for index, code in enumerate(codes) if code), None)
            time.sleep(0.2)
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()


def _free_port():
    """A port nobody listens on, for torch's process group."""
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def per_device_bytes(variables, distribution):
    """{device: bytes} of `variables` (deferred or not) under the layouts `distribution` gives them."""
    import numpy as np

    totals = {}
    for variable in variables:
        layout = variable._layout or distribution.get_variable_layout(variable)
        sharding = layout.backend_layout
        shard_bytes = int(np.prod(sharding.shard_shape(tuple(variable.shape)))) * np.dtype(variable.dtype).itemsize
        for device in sharding.device_set:
            totals[device.id] = totals.get(device.id, 0) + shard_bytes
    return totals


def build(preset, distribution, deferred):
    """A BertPretrainer of `preset` and its built bert_adamw under `distribution`."""
    import keras

    from kbert import BertBackbone, BertPretrainer
    from kbert.optimizers import bert_adamw

    keras.distribution.set_distribution(distribution)
    optimizer = bert_adamw(1e-4, total_steps=100)  # its step counter: created with a value, never deferred
    with keras.StatelessScope(initialize_variables=False) if deferred else contextlib.nullcontext():
        model = BertPretrainer(BertBackbone.from_preset(preset), next_sentence=False, compile=False)
        if deferred:
            for variable in model.trainable_variables:  # as Keras does when it creates the value
                variable._layout = distribution.get_variable_layout(variable)
        optimizer.build(model.trainable_variables)
    return model, optimizer


def bytes_worker(args):
    import kbert.distribution

    rows = []
    if args.check:
        for mesh in args.meshes:
            distribution = kbert.distribution.model_parallel(_mesh(mesh))
            model, optimizer = build("bert_tiny", distribution, deferred=False)
            variables = model.weights + optimizer.variables
            allocated = {}
            for variable in variables:
                for shard in variable.value.addressable_shards:
                    allocated[shard.device.id] = allocated.get(shard.device.id, 0) + shard.data.nbytes
            deferred, deferred_optimizer = build("bert_tiny", distribution, deferred=True)  # as counted below
            computed = per_device_bytes(deferred.weights + deferred_optimizer.variables, distribution)
            rows.append({"check": "bert_tiny", "mesh": mesh, "allocated": allocated, "computed": computed,
                         "equal": allocated == computed})
    for preset in args.presets:
        for mesh in args.meshes:
            try:
                kbert.distribution.check_mesh(preset, _mesh(mesh))
                refused = None
            except ValueError as error:  # the bytes do not depend on the heads: counted all the same
                refused = str(error).split(";")[0]
            distribution = kbert.distribution.model_parallel(_mesh(mesh))
            model, optimizer = build(preset, distribution, deferred=True)
            parameters = per_device_bytes(model.weights, distribution)
            state = per_device_bytes(optimizer.variables, distribution)
            rows.append({"preset": preset, "mesh": mesh, "parameters": max(parameters.values()),
                         "optimizer": max(state.values()),
                         "total": max(parameters[d] + state[d] for d in parameters),
                         "unsharded": sum(int(_size(v)) for v in model.weights + optimizer.variables),
                         "refused": refused})
    print(json.dumps(rows))


def _size(variable):
    import numpy as np

    return int(np.prod(variable.shape)) * np.dtype(variable.dtype).itemsize


def _mesh(text):
    replicas, shards = text.lower().split("x")
    return int(replicas), int(shards)


def time_worker(args):
    """Times the steps of one `fit` on --worker-devices devices (1: no distribution); prints a JSON line."""
    if os.environ["KERAS_BACKEND"] == "tensorflow":  # before anything else touches TensorFlow
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.worker_devices)
    import keras
    import numpy as np

    import kbert
    import kbert.distribution
    from kbert.distribution import torch_data_parallel
    from kbert.distribution.data_shares import Shard

    distribution = kbert.distribution.data_parallel() if args.worker_devices > 1 else None
    kbert.distribution.activate(distribution)
    model = kbert.BertClassifier(kbert.BertBackbone.from_preset(args.time_preset, dropout=0.0), num_classes=2,
                                 dropout=0.0)
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.seq_len)
    batch = {"token_ids": rng.integers(5, model.backbone.vocabulary_size, shape), "segment_ids": np.zeros(shape, "int32"),
             "padding_mask": np.ones(shape, "int32")}
    data = same_batches((batch, np.arange(args.batch_size) % 2), args.steps + 1)
    if torch_data_parallel.active() is not None:
        data = Shard(data, torch_data_parallel.active())  # this process's rows of each
    begins, ends = [], []
    timer = keras.callbacks.LambdaCallback(  # Keras calls the batch end once it has read the step's loss
        on_train_batch_begin=lambda step, logs: begins.append(time.perf_counter()),
        on_train_batch_end=lambda step, logs: ends.append(time.perf_counter()))
    model.fit(data, epochs=1, verbose=0, callbacks=[timer])
    seconds = [end - begin for begin, end in zip(begins, ends)][1:]  # the first step compiles
    print(json.dumps({"replicas": kbert.distribution.data_dimension(model), "rows": len(keras.tree.flatten(data[0])[0]),
                      "steps": len(seconds), "median_step_seconds": statistics.median(seconds)}))  # rows: this process's


def same_batches(batch, count):
    """A PyDataset of `count` times `batch`."""
    import keras

    class SameBatches(keras.utils.PyDataset):
        def __len__(self):
            return count

        def __getitem__(self, index):
            return batch

    return SameBatches()


def main():
    args = parse_args()
    if args.worker:
        return {"bytes": bytes_worker, "time": time_worker}[args.worker](args)
    if "bytes" in args.jobs:
        rows = run_worker("bytes", "jax", 8)
        for row in rows:
            if "check" in row:
                print(f"check {row['check']} {row['mesh']}: computed bytes per device "
                      f"{'equal' if row['equal'] else 'DIFFER from'} the allocated shards' "
                      f"({sorted(set(row['allocated'].values()))} bytes)")
        print(f"{'preset':11} {'mesh':5} {'parameters MB':>14} {'optimizer MB':>13} {'total MB':>9} "
              f"{'of unsharded':>13}   (per device, the most loaded)")
        for row in rows:
            if "preset" in row:
                print(f"{row['preset']:11} {row['mesh']:5} {row['parameters'] / 2**20:14.1f} "
                      f"{row['optimizer'] / 2**20:13.1f} {row['total'] / 2**20:9.1f} "
                      f"{row['total'] / row['unsharded']:13.3f}"
                      + (f"   (check_mesh refuses it: {row['refused']})" if row["refused"] else ""))
    if "time" in args.jobs:
        print(f"{args.time_preset}, global batch {args.batch_size} x {args.seq_len}, median of {args.steps} steps "
              f"after a compiling one, data_parallel(), {os.cpu_count()} CPU cores:")
        for backend in args.backends:
            print_step_times(backend, args)
        print(f"On these {os.cpu_count()} cores the N devices are threads (JAX, TensorFlow) or processes (torch) "
              "sharing the cores of the 1: the ratio is the overhead of splitting a step (collectives, smaller "
              "matmuls), not a speed-up.")


def print_step_times(backend, args):
    """One line: the step time of 1 vs N devices (torch: processes) on `backend`, and what the N ran."""
    torch = backend == "torch"
    devices = args.processes if torch else args.devices
    if args.batch_size % devices:
        sys.exit(f"--batch-size {args.batch_size} does not divide by the {devices} {backend} "
                 f"{'processes' if torch else 'devices'}.")
    one, many = run_worker("time", backend, 1), run_worker("time", backend, devices, devices if torch else 1)
    ratio = many["median_step_seconds"] / one["median_step_seconds"]
    print(f"{backend:10}: 1 {'process' if torch else 'device'} {one['median_step_seconds']:.3f} s/step, "
          f"{devices} {'processes' if torch else 'devices'} {many['median_step_seconds']:.3f} s/step ({ratio:.2f}x; "
          f"{many['replicas']} replicas" + (f", process 0's time on its {many['rows']} rows" if torch else "") + ")")


if __name__ == "__main__":
    main()
