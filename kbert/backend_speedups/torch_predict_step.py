"""PyTorch backend only: `predict`'s step for a kbert task model, its functional graph run node by node without
Keras's per-call work (imports torch: torch backend only).

Keras's `predict_step` calls the model, whose `Layer.__call__` converts and checks the inputs, resolves masks and
the `training` argument, clears every layer's losses and runs `nn.Module`'s hooks, then walks the graph calling each
node's layer through the same `__call__`: some 6,000 Python calls a batch for a 12-layer BERT classifier at width
64 on torch (cProfile), where the backbone's own plain-torch pass makes 700.
Here the graph's nodes are called as `kbert.backend_speedups.sublayer_calls.sublayer_call` calls a block's sublayers at
inference: a layer's own `call` where `__call__` would change nothing (same dtypes, no quantization, no
`keras.distribution`, no masks), else the layer itself; under a mixed policy ("mixed_bfloat16"), in the autocast
scopes that `Layer.__call__` opens.
"""

import keras
import torch
from keras.src.backend.common.variables import AutocastScope
from keras.src.layers.layer import Layer
from keras.src.models.functional import Functional, unpack_singleton

from kbert.backend_speedups.torch_train_step import gathered
from kbert.backend_speedups.sublayer_calls import sublayer_call


def predict_step_refusal(model):
    """Why `predict_step` cannot run `model` as Keras's `predict_step` would (a sentence), or None."""
    if not isinstance(model, Functional) or type(model).call is not Functional.call or not model.built:
        return "the model is not a built functional model with Keras's call"
    if model.dtype_policy.quantization_mode:
        return f"the model computes under the quantized policy {model.dtype_policy.name!r}"
    if _model_scope(model) and any(keras.backend.is_float_dtype(i.dtype) for i in model.inputs):
        return "the model has float inputs, which its call under a mixed policy would cast to its compute dtype"
    masking = [op.name for op in model.operations
               if isinstance(op, Layer) and type(op).compute_mask is not Layer.compute_mask]
    if masking:
        return f"the layers {masking} compute masks, which Keras's call passes on"
    return None


def _model_scope(model):
    """The dtype of the autocast scope that the model's `Layer.__call__` opens around its graph (a mixed policy's
    compute dtype), or None."""
    policy = model.dtype_policy
    return policy.compute_dtype if policy.compute_dtype != policy.variable_dtype else None


def _node_calls(model):
    """{id of a graph node's operation: what computes it at inference}: an operation's own `call`; a layer's
    `sublayer_call` (its `call`, with `training=False` where it takes one, given inputs in its dtype), or the layer
    itself, called as Keras's `Functional.call` calls it (every layer under a mixed policy's scope)."""
    outer = _model_scope(model)
    calls = {}
    for operation in model.operations:
        if not isinstance(operation, Layer):
            calls[id(operation)] = operation.call
            continue
        # under the model's autocast scope, each layer through its `__call__`, which opens its own in it
        direct = operation if outer else sublayer_call(operation, training=False)
        if direct is operation:  # as `Functional.call` calls it
            calls[id(operation)] = _with_training(operation)
        else:
            takes_training = direct == operation.call and operation._call_has_training_arg
            calls[id(operation)] = _in_dtype(operation, _with_training(direct) if takes_training else direct)
    return calls


def _with_training(call):
    def called(*args, **kwargs):
        return call(*args, **{**kwargs, "training": False})

    return called


def _in_dtype(layer, direct):
    """`direct`, where every float tensor it is given has the layer's input dtype; else the layer itself, whose
    `Layer.__call__` casts them."""
    dtype = getattr(torch, layer.input_dtype)
    full = _with_training(layer)

    def called(*args, **kwargs):
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor) and value.dtype != dtype and value.dtype.is_floating_point:
                return full(*args, **kwargs)
        return direct(*args, **kwargs)

    return called


def predict_step(model, data):
    """`keras.Model.predict_step` on torch for `model`, a kbert task: the model's outputs on the batch `data` at
    inference, its graph's nodes called directly (`_node_calls`): the backbone's own `call` (its plain-torch pass,
    `torch_backbone`, where that runs), the head's layers' `call`. None where `predict_step_refusal` gives a
    reason, the inputs are not a dict of the model's inputs, or a `keras.distribution` is active: Keras's step
    then runs."""
    x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
    if keras.distribution.distribution() is not None or not isinstance(x, dict):
        return None
    if gathered(model, "predict_step_refusal", lambda: predict_step_refusal(model)):
        return None
    if not isinstance(model._inputs_struct, dict) or x.keys() != model._inputs_struct.keys():
        return None
    flat = []
    dtypes = gathered(model, "predict_input_dtypes", lambda: [getattr(torch, i.dtype) for i in model.inputs])
    for value, reference, dtype in zip(keras.tree.flatten(x), model.inputs, dtypes):
        if not isinstance(value, torch.Tensor) or value.dtype != dtype:  # as `Functional._standardize_inputs`
            value = keras.ops.convert_to_tensor(value, dtype=reference.dtype)
        if len(value.shape) != len(reference.shape) or getattr(value, "_keras_mask", None) is not None:
            return None
        flat.append(value)
    calls = gathered(model, "predict_node_calls", lambda: _node_calls(model))
    outer = _model_scope(model)
    if outer is None:
        outputs = model._run_through_graph(flat, operation_fn=lambda operation: calls[id(operation)])
    else:
        with AutocastScope(outer):  # as the model's `Layer.__call__` runs its graph
            outputs = model._run_through_graph(flat, operation_fn=lambda operation: calls[id(operation)])
    return unpack_singleton(outputs)
