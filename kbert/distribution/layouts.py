"""Which distribution trains: the Megatron layout map of a BERT's weights, the meshes of model
parallelism, each backend's data parallelism, and the active one (`activate`, `data_dimension`,
`describe`). See `kbert.distribution`."""

import keras
import numpy as np

from kbert.config import PRESETS
from kbert.distribution import torch_data_parallel
from kbert.distribution.processes import join_jax_job

NAMES = ("data", "model", "none")

# Megatron-LM's tensor parallelism (Shoeybi et al., 2019): the first matmul of each pair is
# split by columns (outputs), the second by rows (inputs), so each pair needs one all-reduce.
# The fused QKV kernel is (hidden, 3 * hidden), [q | k | v]: GSPMD computes its slices exactly
# whatever the split. Embeddings are split along the hidden axis (30,522 ids do not divide by
# 4). Layer norms, biases of row-split kernels and the task heads' logits stay replicated.
_LAYOUTS = {
    r".*_embedding/embeddings": (None, "model"),
    r".*self_attention/qkv_dense/kernel": (None, "model"),
    r".*self_attention/qkv_dense/bias": ("model",),
    r".*self_attention/output_dense/kernel": ("model", None),
    r".*intermediate_dense/kernel": (None, "model"),
    r".*intermediate_dense/bias": ("model",),
    r".*transformer_layer_\d+/output_dense/kernel": ("model", None),
    r".*pooled_dense/kernel": (None, "model"),
    r".*pooled_dense/bias": ("model",),
    r".*mlm_head/dense/kernel": (None, "model"),
}


def check_backend():
    """Raises a ValueError unless the backend runs `keras.distribution` (JAX): model parallelism."""
    backend = keras.config.backend()
    if backend != "jax":
        raise ValueError(
            f"Model parallelism (keras.distribution.ModelParallel) needs the JAX backend "
            f"(KERAS_BACKEND=jax); this process runs {backend!r}, where kbert offers data "
            "parallelism only (data_parallel(): tf.distribute.MirroredStrategy on tensorflow, "
            "torch.distributed processes on torch)."
        )


def bert_layout_map(device_mesh):
    """A `keras.distribution.LayoutMap` that shards a kbert BERT's weights Megatron-style.

    QKV and FFN-in kernels column-wise, attention-output and FFN-out kernels row-wise, the
    embeddings along the hidden axis, all over the mesh axis "model"; the rest replicated.
    Covers `BertBackbone` and the task heads (`pooled_dense`, `mlm_head`).

    Args:
        device_mesh: `keras.distribution.DeviceMesh` with the axes ("batch", "model").

    Example:
    >>> mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), devices=["cpu:0", "cpu:1"])
    >>> bert_layout_map(mesh)["transformer_layer_0/intermediate_dense/kernel"].axes
    (None, 'model')
    """
    if "model" not in device_mesh.axis_names:
        raise ValueError(f"The device mesh needs an axis 'model'; it has {device_mesh.axis_names}.")
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, axes in _LAYOUTS.items():
        layout_map[pattern] = axes
    return layout_map


def data_parallel(devices=None):
    """The backend's data parallelism: the model replicated, each global batch split over the replicas.

    JAX: `keras.distribution.DataParallel` over `devices` (default: every device of every
    process), after joining the job of several processes that the environment describes, if it
    does (`join_jax_job`). TensorFlow: `tf.distribute.MirroredStrategy` over `devices` (default: every
    GPU, else every logical CPU device), one process. torch: a `TorchDataParallel`, this
    process's place among the processes that torchrun (or you) started, read from the
    environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); its process group is joined
    here (gloo on CPU, nccl on GPU). Make it the active distribution with `activate`.
    """
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        logical = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy(devices or [device.name for device in logical])
    if backend == "torch":
        if devices is not None:
            raise ValueError("On torch, data parallelism is one process per device (torchrun): "
                             "data_parallel() takes no devices.")
        return torch_data_parallel.TorchDataParallel.from_environment()
    check_backend()
    join_jax_job()
    return keras.distribution.DataParallel(devices=devices or keras.distribution.list_devices())


def activate(distribution):
    """Makes `distribution` (from `data_parallel`, `model_parallel`, `get`; None for none) the
    active one, for the models built and trained after it.

    JAX: `keras.distribution.set_distribution`. TensorFlow: `tf.distribute.experimental_set_strategy`
    (as if the rest of the program ran in `strategy.scope()`; a `with strategy.scope():` block does
    the same for its models). torch: `BertTask.fit` trains on this process's share of every
    global batch and averages the gradients over the processes.

    Example:
    >>> activate(None)
    >>> data_dimension()
    1
    """
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        if distribution is not None and not isinstance(distribution, tf.distribute.Strategy):
            raise ValueError(f"On tensorflow, activate takes a tf.distribute.Strategy (data_parallel()), "
                             f"not {type(distribution).__name__}.")
        tf.distribute.experimental_set_strategy(distribution)
    elif backend == "torch":
        torch_data_parallel.set_active(distribution)
    else:
        keras.distribution.set_distribution(distribution)


def model_parallel(mesh_shape, config=None, devices=None):
    """`keras.distribution.ModelParallel` on a ("batch", "model") mesh with `bert_layout_map`.

    Args:
        mesh_shape: (replicas, shards): e.g. (2, 4) on 8 devices, each replica of the
            model split over 4 of them.
        config: a `BertConfig`, a preset name, a backbone, or None. If given, checked
            against the mesh (`check_mesh`) before any weight exists.
        devices: list of devices (default: every device); their count must be the mesh's.
    """
    check_backend()
    join_jax_job()
    mesh_shape = tuple(int(size) for size in mesh_shape)
    devices = devices or keras.distribution.list_devices()
    if len(mesh_shape) != 2 or mesh_shape[0] * mesh_shape[1] != len(devices):
        raise ValueError(f"The mesh {'x'.join(map(str, mesh_shape))} must be 2 numbers whose product "
                         f"is the number of devices, {len(devices)}.")
    mesh = keras.distribution.DeviceMesh(mesh_shape, ("batch", "model"), devices=devices)
    if config is not None:
        check_mesh(config, mesh)
    return _CheckedModelParallel(layout_map=bert_layout_map(mesh), batch_dim_name="batch")


class _CheckedModelParallel(keras.distribution.ModelParallel):
    """`ModelParallel` whose layouts refuse, naming the numbers, a weight the mesh does not divide
    (JAX's own IndivisibleError would come from deep in the variable's creation)."""

    def get_variable_layout(self, variable):
        layout = super().get_variable_layout(variable)
        mesh = self.device_mesh
        for size, axis in zip(variable.shape, layout.axes):
            parts = 1 if axis is None else int(mesh.shape[mesh.axis_names.index(axis)])
            if size % parts:
                raise ValueError(f"The mesh's {axis} dimension {parts} does not divide {variable.path}'s size {size} "
                                 f"(shape {tuple(variable.shape)}); choose a {axis} dimension that divides {size}.")
        return layout


def get(name, mesh_shape=None, config=None):
    """The distribution called `name`: "data", "model" (on `mesh_shape`) or "none" (None).

    Example:
    >>> get("none") is None
    True
    """
    if name not in NAMES:
        raise ValueError(f"Unknown distribution {name!r}; choose from {list(NAMES)}.")
    if name == "none":
        return None
    if name == "data":
        if mesh_shape is not None:
            raise ValueError("The data distribution takes no mesh (it uses every device); "
                             "a mesh is for the model distribution.")
        return data_parallel()
    if mesh_shape is None:
        raise ValueError("The model distribution needs a mesh shape, e.g. (2, 4).")
    return model_parallel(mesh_shape, config=config)


def check_mesh(config, mesh):
    """Raises a ValueError, naming the numbers, if the mesh's "model" axis does not divide
    the heads, the hidden size, the intermediate size or the embedding width (ALBERT's, ELECTRA's) of `config`.

    Args:
        config: a `BertConfig`, a preset name, or a backbone (anything with its fields).
        mesh: a `DeviceMesh`, a distribution, or a (replicas, shards) shape.

    Example:
    >>> check_mesh("bert_tiny", (4, 2))  # 2 heads, hidden 128, intermediate 512: fine
    >>> check_mesh("bert_tiny", (2, 4))
    Traceback (most recent call last):
    ...
    ValueError: The mesh's model dimension 4 does not divide num_heads=2 of the model; choose a
    model dimension that divides 2.
    """
    if isinstance(config, str):
        if config not in PRESETS:
            raise ValueError(f"Unknown preset {config!r}; choose from {sorted(PRESETS)}.")
        config = PRESETS[config]
    shards = _model_dimension(mesh)
    for field in ("num_heads", "hidden_dim", "intermediate_dim", "embedding_dim"):
        value = getattr(config, field, None)  # embedding_dim: None where the tables are hidden_dim wide
        if value is not None and value % shards:
            raise ValueError(f"The mesh's model dimension {shards} does not divide {field}={value} of the "
                             f"model; choose a model dimension that divides {value}.")


def data_dimension(distribution=None):
    """How many ways `distribution` splits each global batch; 1 if none.

    Args:
        distribution: a `keras.distribution` distribution, a `tf.distribute.Strategy`, a
            `TorchDataParallel`, a model (on TensorFlow: the strategy it was built under), or
            None for the active one.
    """
    distribution = _active(distribution)
    if distribution is None:
        return 1
    if hasattr(distribution, "num_replicas_in_sync"):  # tf.distribute, torch processes
        return int(distribution.num_replicas_in_sync)
    mesh = distribution.device_mesh
    return int(mesh.shape[mesh.axis_names.index(distribution.batch_dim_name)])


def describe(distribution=None):
    """The active distribution (or `distribution`) as a run's metrics record it.

    Example:
    >>> describe()
    {'distribution': 'none', 'mesh': None, 'devices': 1}
    """
    distribution = _active(distribution)
    if distribution is None:
        return {"distribution": "none", "mesh": None, "devices": 1}
    if hasattr(distribution, "num_replicas_in_sync"):  # tf.distribute, torch processes
        return {"distribution": "data", "mesh": None, "devices": int(distribution.num_replicas_in_sync)}
    mesh = distribution.device_mesh
    name = "model" if isinstance(distribution, keras.distribution.ModelParallel) else "data"
    return {"distribution": name, "mesh": [int(size) for size in mesh.shape] if name == "model" else None,
            "devices": int(np.prod(mesh.shape))}


def _active(distribution):
    """`distribution`, a model's (its tf.distribute strategy), or the backend's active one (None if none)."""
    if isinstance(distribution, keras.Model):  # on TensorFlow, the strategy it was built under
        distribution = getattr(distribution, "distribute_strategy", None)
    if distribution is not None or keras.config.backend() == "jax":
        return distribution or keras.distribution.distribution()
    if keras.config.backend() == "tensorflow":
        import tensorflow as tf

        return tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
    return torch_data_parallel.active()


def _model_dimension(mesh):
    if hasattr(mesh, "device_mesh"):  # a distribution
        mesh = mesh.device_mesh
    if isinstance(mesh, keras.distribution.DeviceMesh):
        return int(mesh.shape[mesh.axis_names.index("model")]) if "model" in mesh.axis_names else 1
    return int(tuple(mesh)[1])


__all__ = ["NAMES", "activate", "bert_layout_map", "check_backend", "check_mesh", "data_dimension", "data_parallel",
           "describe", "get", "model_parallel"]
