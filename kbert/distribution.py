"""Data- and model-parallel BERT on `keras.distribution`: a Megatron layout map and presets.

`keras.distribution` runs on the JAX backend (Keras's TensorFlow prototype says "do not use",
and torch has none): the helpers here refuse other backends with a clear error.

Example, on 8 devices: 2 replicas of the model, each sharded over 4 devices:

```python
import keras, kbert, kbert.distribution

keras.distribution.set_distribution(kbert.distribution.model_parallel((2, 4), config="bert_base"))
model = kbert.BertClassifier.from_preset("bert_base", num_classes=2)  # weights sharded here
model.fit(["a gripping film", "a dull film"], [1, 0], batch_size=16)
```
"""

import keras
import numpy as np

from kbert.config import PRESETS

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
    """Raises a ValueError unless the backend runs `keras.distribution` (JAX)."""
    backend = keras.config.backend()
    if backend != "jax":
        raise ValueError(
            f"kbert.distribution needs the JAX backend (KERAS_BACKEND=jax); this process runs "
            f"{backend!r}, where keras.distribution is not supported (tf.distribute and torch "
            "DDP are not built into kbert yet)."
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
    """`keras.distribution.DataParallel` over `devices` (default: every device), weights replicated."""
    check_backend()
    return keras.distribution.DataParallel(devices=devices or keras.distribution.list_devices())


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
    the heads, the hidden size or the intermediate size of `config`.

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
    for field in ("num_heads", "hidden_dim", "intermediate_dim"):
        value = getattr(config, field)
        if value % shards:
            raise ValueError(f"The mesh's model dimension {shards} does not divide {field}={value} of the "
                             f"model; choose a model dimension that divides {value}.")


def data_dimension(distribution=None):
    """How many ways `distribution` (default: the active one) splits each batch; 1 if none."""
    distribution = distribution or keras.distribution.distribution()
    if distribution is None:
        return 1
    mesh = distribution.device_mesh
    return int(mesh.shape[mesh.axis_names.index(distribution.batch_dim_name)])


def describe(distribution=None):
    """The active distribution (or `distribution`) as a run's metrics record it.

    Example:
    >>> describe()
    {'distribution': 'none', 'mesh': None, 'devices': 1}
    """
    distribution = distribution or keras.distribution.distribution()
    if distribution is None:
        return {"distribution": "none", "mesh": None, "devices": 1}
    mesh = distribution.device_mesh
    name = "model" if isinstance(distribution, keras.distribution.ModelParallel) else "data"
    return {"distribution": name, "mesh": [int(size) for size in mesh.shape] if name == "model" else None,
            "devices": int(np.prod(mesh.shape))}


def _model_dimension(mesh):
    if hasattr(mesh, "device_mesh"):  # a distribution
        mesh = mesh.device_mesh
    if isinstance(mesh, keras.distribution.DeviceMesh):
        return int(mesh.shape[mesh.axis_names.index("model")]) if "model" in mesh.axis_names else 1
    return int(tuple(mesh)[1])


__all__ = ["bert_layout_map", "check_mesh", "data_dimension", "data_parallel", "describe", "get",
           "model_parallel"]
