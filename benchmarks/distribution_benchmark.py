"""Per device under `kbert.distribution` (JAX, virtual CPU devices): the bytes of parameters and
optimizer state under ModelParallel, and the step time of 1 vs N devices on the same global batch.

bytes: for each preset (bert_base, bert_large by default) and mesh (8x1, 4x2, 2x4, 1x8: replicas x
shards) a `BertPretrainer` (backbone, pooler, MLM head) and its `bert_adamw` are built under
`model_parallel(mesh)` with their variables deferred (`StatelessScope(initialize_variables=False)`:
no memory is allocated, bert_large replicated on 8 devices would take 32 GB). Each variable gets
the layout Keras gives it when it is created (`distribution.get_variable_layout`, the optimizer's
slots their weight's), and a device holds `NamedSharding.shard_shape(shape)` of it. `--check`
first counts bert_tiny so on each mesh and compares with the bytes of each device's
`addressable_shards` of a bert_tiny built for real (its 30,522 x 128 embeddings dominate). Model parallelism's point: the state per device falls by the
model dimension (the embeddings and layer norms, replicated or split, included).

time: a `BertClassifier` (--time-preset, dropout 0) trains --steps steps of the same global batch
(--batch-size rows of --seq-len tokens) on 1 device and on N devices (data_parallel), each in its
own process; prints the median step time after a compiled warm-up step. On this 2-core machine the
8 "devices" are threads sharing 2 cores: the figure measures the overhead of splitting a step
(collectives, smaller matmuls), not a speed-up. Do not run it on a shared machine.

    python benchmarks/distribution_benchmark.py --jobs bytes --check
    python benchmarks/distribution_benchmark.py --jobs time --devices 8
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", nargs="+", choices=("bytes", "time"), default=["bytes"])
    parser.add_argument("--presets", nargs="+", default=["bert_base", "bert_large"])
    parser.add_argument("--meshes", nargs="+", default=["8x1", "4x2", "2x4", "1x8"], help="REPLICASxSHARDS")
    parser.add_argument("--check", action="store_true",
                        help="first compare the computed bytes with allocated bert_tiny shards on each mesh")
    parser.add_argument("--devices", type=int, default=8, help="virtual devices of the time job's second run")
    parser.add_argument("--time-preset", default="bert_mini")
    parser.add_argument("--batch-size", type=int, default=32, help="the global batch of the time job")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10, help="timed steps of the time job")
    parser.add_argument("--worker", choices=("bytes", "time"), help=argparse.SUPPRESS)
    return parser.parse_args()


def run_worker(job, devices, args):
    """Runs this script as a worker with `devices` virtual JAX devices; returns its JSON line."""
    env = {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    command = [sys.executable, __file__, "--worker", job, *sys.argv[1:]]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"worker {job} on {devices} devices failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


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
    import keras
    import numpy as np

    import kbert
    import kbert.distribution

    devices = len(keras.distribution.list_devices())
    keras.distribution.set_distribution(kbert.distribution.data_parallel() if devices > 1 else None)
    model = kbert.BertClassifier(kbert.BertBackbone.from_preset(args.time_preset, dropout=0.0), num_classes=2)
    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.seq_len)
    batch = {"token_ids": rng.integers(5, model.backbone.vocabulary_size, shape), "segment_ids": np.zeros(shape, "int32"),
             "padding_mask": np.ones(shape, "int32")}
    labels = np.arange(args.batch_size) % 2
    model.fit(batch, labels, batch_size=args.batch_size, epochs=1, verbose=0)  # compiles
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        model.fit(batch, labels, batch_size=args.batch_size, epochs=1, verbose=0)
        times.append(time.perf_counter() - start)
    print(json.dumps({"devices": devices, "median_step_seconds": statistics.median(times)}))


def main():
    args = parse_args()
    if args.worker:
        return {"bytes": bytes_worker, "time": time_worker}[args.worker](args)
    if "bytes" in args.jobs:
        rows = run_worker("bytes", 8, args)
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
        one, many = run_worker("time", 1, args), run_worker("time", args.devices, args)
        print(f"{args.time_preset}, global batch {args.batch_size} x {args.seq_len}, data_parallel, "
              f"{os.cpu_count()} CPU cores: 1 device {one['median_step_seconds']:.3f} s/step, "
              f"{many['devices']} devices {many['median_step_seconds']:.3f} s/step "
              f"({many['median_step_seconds'] / one['median_step_seconds']:.2f}x: overhead on shared cores, "
              "not a speed-up)")


if __name__ == "__main__":
    main()
