"""ONNX export: the token-ids model for onnxruntime, with the vocabulary beside it.

`token_ids.onnx` is the SavedModel's `token_ids` signature (`kbert.export.serving`), converted by tf2onnx:
inputs `token_ids`, `segment_ids`, `padding_mask` (int64, batch x length: both axes dynamic), outputs the
model's raw outputs and what the signature adds (a classifier's `logits` and `probabilities`, or a regressor's
`score`; NER's per-token `logits` and `probabilities`; QA's `start_logits` and `end_logits`; a backbone's
mean-pooled, L2-normalised `embeddings` and its `sequence_output`). int64, as Hugging Face's ONNX exports and
onnxruntime-extensions' tokenizers give ids. Text is tokenized outside the model, by `kbert_core.WordPiece`
or Hugging Face `tokenizers` on the folder's `vocab.txt` (the same ids as kbert's tokenizer).

No string-in model: onnxruntime-extensions' `BertTokenizer` op gives other ids than BERT's tokenizer where
lower-casing or accent stripping leaves Latin-1 (Pāli, Meštrović, ΣΑΣ, Ёжик, İstanbul), on Hangul, on
punctuation outside ASCII (⟩, ،) and on control and format characters (16 of the tokenizer tests' 40 hard
strings; 240 of the first 5,000 SQuAD paragraphs), and takes one text per call.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from kbert.export.loading import require_tensorflow_backend
from kbert.export.saved_model import write_export_json
from kbert.export.serving import serving_functions
from kbert.export.tflite import ExportError
from kbert.models.bert_backbone import INPUT_KEYS

QUANTIZATIONS = ("none", "dynamic-int8")
MODEL_FILE = "token_ids.onnx"
OPSET = 17
AXES = ("batch", "length")


def export_onnx(model, tokenizer, spec, out, quantize="none"):
    """Writes `token_ids.onnx` (see the module's docstring), `vocab.txt`, `tokenizer_config.json` and
    `export.json` to the folder `out`, which appears whole or not at all.

    The model is run in onnxruntime on a small batch before the folder is committed.

    Args:
        model, tokenizer, spec: from `kbert.export.load_exportable`. The length axis is dynamic whatever
            `spec.padding` says; inputs longer than `spec.max_length` exceed the model's positions.
        out: path of the folder to write.
        quantize: one of `QUANTIZATIONS`: float32 weights, or int8 weights with activations quantized on
            the fly (onnxruntime's `quantize_dynamic`).

    Returns: dict of file name -> size in bytes.

    Example (not run here: TensorFlow backend only)::

        export_onnx(*load_exportable("saved_models/sst2"), "exports/sst2_onnx")
        session = onnxruntime.InferenceSession("exports/sst2_onnx/token_ids.onnx")
    """
    from kbert.saving import atomic_output_folder, remove_leftovers

    require_tensorflow_backend()
    if quantize not in QUANTIZATIONS:
        raise ExportError(f"quantize must be one of {QUANTIZATIONS} for ONNX, got {quantize!r}.")
    spec = dataclasses.replace(spec, padding="longest")
    remove_leftovers(out)
    with atomic_output_folder(out) as folder:
        path = folder / MODEL_FILE
        onnx_model = convert(model, tokenizer, spec)
        if quantize == "none":
            path.write_bytes(onnx_model.SerializeToString())
        else:
            quantize_int8(onnx_model, path)
        signature = check_onnx(path, tokenizer, spec)
        tokenizer.save(folder)
        sizes = {MODEL_FILE: path.stat().st_size}
        write_export_json(folder, model, tokenizer, spec, {MODEL_FILE: signature}, "onnx", quantize=quantize,
                          files=sizes, opset=OPSET)
    return sizes


def convert(model, tokenizer, spec):
    """The `onnx.ModelProto` of the `token_ids` signature with int64 inputs, its axes named `AXES`."""
    import tf2onnx

    ids_function = serving_functions(model, tokenizer, spec, text_model=False)["token_ids"]
    signature = [tf.TensorSpec([None, None], tf.int64, name=key) for key in INPUT_KEYS]

    @tf.function(input_signature=signature)
    def from_int64(token_ids, segment_ids, padding_mask):
        return ids_function(*(tf.cast(ids, tf.int32) for ids in (token_ids, segment_ids, padding_mask)))

    try:
        onnx_model, _ = tf2onnx.convert.from_function(from_int64, input_signature=signature, opset=OPSET,
                                                      custom_op_handlers={"Erfc": (_erfc, [])})
    except Exception as error:  # tf2onnx raises many types; say which model failed
        raise ExportError(f"ONNX conversion of the {spec.model_kind} failed: {str(error)[-2000:]}") from error
    _name_axes(onnx_model)
    graph = _Graph(onnx_model.graph)
    _remove(graph, _fuse_layer_norms(graph) | _gelu_in_the_form_onnxruntime_fuses(graph)
            | _dense_matmuls_on_their_inputs(graph))
    return onnx_model


def _erfc(graph, node, name, args):
    """TensorFlow's exact GELU computes erfc, which ONNX lacks: 1 - erf(x)."""
    from tf2onnx import utils

    node.type = "Erf"
    output = node.output[0]
    one = graph.make_const(utils.make_name("one"), np.array(1, utils.map_onnx_to_numpy_type(graph.get_dtype(output))))
    graph.insert_new_node_on_output("Sub", output, inputs=[one.output[0], output])


def _name_axes(onnx_model):
    """Names the dynamic axes: the first of every input and output "batch", the second "length"."""
    for value in [*onnx_model.graph.input, *onnx_model.graph.output]:
        for dim, axis in zip(value.type.tensor_type.shape.dim, AXES):
            if not dim.HasField("dim_value"):
                dim.dim_param = axis


class _Graph:
    """An `onnx.GraphProto` as it was read: nodes by output, consumers by input, initializers by name (as numpy
    arrays when asked for). The rewrites append their nodes to `graph` and leave these maps as read."""

    def __init__(self, graph):
        self.graph, self.read = graph, len(graph.node)
        self.producer = {output: node for node in graph.node for output in node.output}
        self.consumers = {}
        for node in graph.node:
            for name in dict.fromkeys(node.input):  # a node reading a value twice (x * x) is one consumer
                self.consumers.setdefault(name, []).append(node)
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}

    def only_consumer(self, name, op_type):
        """The one node reading `name`, if it is an `op_type`; else None."""
        readers = self.consumers.get(name, [])
        return readers[0] if len(readers) == 1 and readers[0].op_type == op_type else None

    def other_input(self, node, name):
        """The input of a two-input `node` that is not `name`."""
        first, second = node.input
        return second if first == name else first

    def constant(self, name, value=None):
        """The initializer `name` as an array (None if it is not one, or is not the scalar `value`); only those the
        patterns reach are converted, not the model's weights."""
        from onnx import numpy_helper

        if name not in self.initializers:
            return None
        array = numpy_helper.to_array(self.initializers[name])
        if value is not None and (array.size != 1 or not np.isclose(array.item(), value)):
            return None
        return array

    def add_constant(self, name, array):
        from onnx import numpy_helper

        self.graph.initializer.append(numpy_helper.from_array(array, name))


def _fuse_layer_norms(graph):
    """Replaces each layer norm that tf2onnx writes out op by op (Keras's moments and TensorFlow's
    batch-normalization formula: 13 nodes, `_layer_norm_from`) by one ONNX `LayerNormalization` (opset 17), which
    onnxruntime runs as one kernel, as in Hugging Face's exports. The same arithmetic: the mean, the mean squared
    difference, epsilon inside the square root. Returns the first outputs of the nodes it replaced (`_remove`)."""
    from onnx import helper

    dead = set()
    for mean in [node for node in graph.graph.node if node.op_type == "GlobalAveragePool"]:
        found = _layer_norm_from(graph, mean)
        if found is None:
            continue
        gamma, beta, epsilon, nodes = found
        name = mean.name.rsplit("/", 1)[0]  # ".../moments_1": one layer norm's
        graph.add_constant(f"{name}/layer_norm_gamma", gamma.reshape(-1))
        graph.add_constant(f"{name}/layer_norm_beta", beta.reshape(-1))
        graph.graph.node.append(helper.make_node(
            "LayerNormalization", [mean.input[0], f"{name}/layer_norm_gamma", f"{name}/layer_norm_beta"],
            list(nodes[-1].output), name=f"{name}/LayerNormalization", axis=-1, epsilon=epsilon))
        dead |= {node.output[0] for node in nodes}
    return dead


def _layer_norm_from(graph, mean):
    """(gamma, beta, epsilon, its nodes: the last makes its output) of the layer norm whose mean over the last axis
    is the GlobalAveragePool `mean`, written as tf2onnx writes it, each value read by the next node alone:

        mean = GlobalAveragePool(x); variance = GlobalAveragePool((x - mean) * (x - mean))
        scale = Reciprocal(Sqrt(variance + epsilon)) * gamma; x * scale + (Neg(mean) * scale + beta)

    or, where beta is all zeros and TensorFlow has folded its addition away, x * scale + Neg(mean) * scale.
    None where the graph differs."""
    x, average = mean.input[0], mean.output[0]
    readers = graph.consumers.get(average, [])
    difference = next((node for node in readers if node.op_type == "Sub" and list(node.input) == [x, average]), None)
    negated = next((node for node in readers if node.op_type == "Neg"), None)
    if len(readers) != 2 or difference is None or negated is None:
        return None
    square = graph.only_consumer(difference.output[0], "Mul")
    if square is None or list(square.input) != [difference.output[0]] * 2:
        return None
    variance = graph.only_consumer(square.output[0], "GlobalAveragePool")
    plus_epsilon = variance and graph.only_consumer(variance.output[0], "Add")
    epsilon = plus_epsilon and graph.constant(graph.other_input(plus_epsilon, variance.output[0]))
    if epsilon is None or epsilon.size != 1:
        return None
    root = graph.only_consumer(plus_epsilon.output[0], "Sqrt")
    inverse = root and graph.only_consumer(root.output[0], "Reciprocal")
    scale = inverse and graph.only_consumer(inverse.output[0], "Mul")
    gamma = scale and graph.constant(graph.other_input(scale, inverse.output[0]))
    if gamma is None or gamma.ndim == 0 or gamma.size != gamma.shape[-1]:  # one value per feature, of the last axis
        return None
    uses = graph.consumers.get(scale.output[0], [])
    times_x = next((node for node in uses if node.op_type == "Mul" and sorted(node.input) == sorted(
        [x, scale.output[0]])), None)
    times_mean = graph.only_consumer(negated.output[0], "Mul")
    if len(uses) != 2 or times_x is None or times_mean is None or times_mean not in uses:
        return None
    shift = graph.only_consumer(times_mean.output[0], "Add")
    if shift is None:
        return None
    nodes = [mean, difference, negated, square, variance, plus_epsilon, root, inverse, scale, times_x, times_mean,
             shift]
    if sorted(shift.input) == sorted([times_x.output[0], times_mean.output[0]]):  # beta all zeros, folded away
        if graph.only_consumer(times_x.output[0], "Add") != shift:
            return None
        return gamma, np.zeros_like(gamma), float(epsilon.item()), nodes
    beta = graph.constant(graph.other_input(shift, times_mean.output[0]))
    total = beta is not None and beta.size == gamma.size and graph.only_consumer(shift.output[0], "Add")
    if not total or graph.only_consumer(times_x.output[0], "Add") != total:
        return None
    return gamma, beta, float(epsilon.item()), [*nodes, total]


def _gelu_in_the_form_onnxruntime_fuses(graph):
    """Rewrites TensorFlow's exact GELU, 0.5 x erfc(-x / sqrt 2) (tf2onnx: Neg, Mul, Erf, 1 - erf, Mul), as
    0.5 x (1 + erf(x / sqrt 2)) (Div, Erf, Add): the same function (erf is odd), in the form onnxruntime fuses into
    one Gelu kernel (with the dense layer's bias before it: BiasGelu), as it does Hugging Face's. Returns the first
    outputs of the nodes it replaced (`_remove`)."""
    from onnx import helper

    dead = set()
    for erf in [node for node in graph.graph.node[:graph.read] if node.op_type == "Erf"]:
        scaled = graph.producer.get(erf.input[0])
        negated = scaled and scaled.op_type == "Mul" and next(
            (graph.producer[name] for name in scaled.input
             if name in graph.producer and graph.producer[name].op_type == "Neg"), None)
        if not negated or graph.constant(graph.other_input(scaled, negated.output[0]), 0.5**0.5) is None:
            continue
        complement = graph.only_consumer(erf.output[0], "Sub")
        if not complement or complement.input[1] != erf.output[0] or graph.constant(complement.input[0], 1.0) is None:
            continue
        if graph.consumers[negated.output[0]] != [scaled] or graph.consumers[scaled.output[0]] != [erf]:
            continue
        x, one = negated.input[0], complement.input[0]
        name = erf.name.rsplit("/", 1)[0]
        graph.add_constant(f"{name}/sqrt_2", np.array(2.0**0.5, graph.constant(one).dtype))
        graph.graph.node.extend([
            helper.make_node("Div", [x, f"{name}/sqrt_2"], [f"{name}/scaled:0"], name=f"{name}/Div"),
            helper.make_node("Erf", [f"{name}/scaled:0"], [f"{name}/erf:0"], name=f"{name}/Erf"),
            helper.make_node("Add", [f"{name}/erf:0", one], list(complement.output), name=f"{name}/Add"),
        ])
        dead |= {node.output[0] for node in (negated, scaled, erf, complement)}
    return dead


def _dense_matmuls_on_their_inputs(graph):
    """tf2onnx writes a dense layer on (batch, length, width) inputs as TensorFlow's tensordot computes it: the
    inputs reshaped to (-1, width), a MatMul, the product reshaped back to the inputs' leading axes (read from
    their Shape at run time) and the layer's units. ONNX's MatMul takes the inputs as they are, as in Hugging
    Face's exports: each such Reshape, MatMul, Reshape becomes one MatMul, the same products, with the bias's Add
    right after it, where onnxruntime fuses the bias into a GELU that follows (BiasGelu). Returns the first outputs
    of the nodes it replaced (`_remove`)."""
    from onnx import helper

    dead = set()
    for matmul in [node for node in graph.graph.node[:graph.read] if node.op_type == "MatMul"]:
        flatten, kernel = graph.producer.get(matmul.input[0]), graph.initializers.get(matmul.input[1])
        if not flatten or flatten.op_type != "Reshape" or kernel is None or len(kernel.dims) != 2:
            continue
        x, (width, units) = flatten.input[0], kernel.dims
        flat_shape = graph.constant(flatten.input[1])
        restore = graph.only_consumer(matmul.output[0], "Reshape")
        if (flat_shape is None or list(flat_shape) != [-1, width] or graph.consumers[flatten.output[0]] != [matmul]
                or not restore or restore.input[0] != matmul.output[0]
                or not _is_tensordot_output_shape(graph, restore.input[1], x, units)):
            continue
        graph.graph.node.append(helper.make_node("MatMul", [x, matmul.input[1]], list(restore.output),
                                                 name=f"{matmul.name}_on_inputs"))
        dead |= {flatten.output[0], matmul.output[0], restore.output[0]}
    return dead


def _is_tensordot_output_shape(graph, shape, x, units):
    """Whether the 1-D tensor `shape` is the output shape tf2onnx writes for a tensordot of `x`: the leading axes of
    `x` (all but its last, gathered from Shape(x), through any Casts) followed by the constant `units`."""
    def made_by(name, op_type):
        node = graph.producer.get(name)
        while node is not None and node.op_type == "Cast":
            node = graph.producer.get(node.input[0])
        return node if node is not None and node.op_type == op_type else None

    concat = made_by(shape, "Concat")
    if not concat or len(concat.input) != 2 or not np.array_equal(graph.constant(concat.input[1]), [units]):
        return False
    gather = made_by(concat.input[0], "Gather")
    axes = gather and graph.constant(gather.input[1])
    source = gather and made_by(gather.input[0], "Shape")
    return bool(source and source.input[0] == x and axes is not None and axes.ndim == 1
                and np.array_equal(axes, np.arange(len(axes))) and all(a.i == 0 for a in gather.attribute))


def _remove(graph, dead):
    """Drops the nodes of the `_Graph` as it was read whose first output is in `dead` (nodes added since, which
    may make those outputs now, stay), then every node and constant that no longer leads to an output, and puts
    the rest in an order where each node reads only what comes before it (ONNX asks for the nodes sorted so)."""
    from onnx import NodeProto

    model_graph = graph.graph
    known = {value.name for value in model_graph.input} | {tensor.name for tensor in model_graph.initializer}
    ordered, waiting = [], [node for position, node in enumerate(model_graph.node)
                            if position >= graph.read or node.output[0] not in dead]
    while waiting:
        ready = [node for node in waiting if all(not name or name in known for name in node.input)]
        if not ready:
            raise ExportError("rewriting the ONNX graph left a node whose inputs nothing makes.")
        ordered += ready
        known |= {name for node in ready for name in node.output}
        waiting = [node for node in waiting if node.output[0] not in known]
    wanted, kept = {value.name for value in model_graph.output}, []
    for node in reversed(ordered):  # and the nodes whose outputs nothing reads now (the shape arithmetic of a Reshape)
        if wanted.intersection(node.output):
            kept.append(node)
            wanted.update(node.input)
    ordered = [NodeProto.FromString(node.SerializeToString()) for node in reversed(kept)]  # outlive the clearing
    del model_graph.node[:]
    model_graph.node.extend(ordered)
    read_now = {name for node in ordered for name in node.input} | {value.name for value in model_graph.output}
    unread = [tensor for tensor in model_graph.initializer if tensor.name not in read_now]
    for tensor in unread:  # the constants of the nodes dropped (a layer norm's gamma as (1, 1, width))
        model_graph.initializer.remove(tensor)


def quantize_int8(onnx_model, path):
    """Writes `onnx_model` to `path` with int8 weights: onnxruntime's `quantize_dynamic` (per tensor), after its
    pre-processing (onnx shape inference, onnxruntime's basic graph optimizations), which the quantizer asks for.
    The pre-processing's symbolic shape inference fails on this graph and is skipped: all-MiniLM-L6-v2's int8
    outputs were the same with and without the pre-processing."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    staging, prepared = path.with_name(".float32.onnx"), path.with_name(".prepared.onnx")
    staging.write_bytes(onnx_model.SerializeToString())
    try:
        quant_pre_process(staging, prepared, skip_symbolic_shape=True)
        quantize_dynamic(prepared, path, weight_type=QuantType.QInt8)
    except Exception as error:  # the quantizer raises many types
        raise ExportError(f"int8 quantization of {path.name} failed: {str(error)[-2000:]}") from error
    finally:
        staging.unlink()
        prepared.unlink(missing_ok=True)


def session(path, num_threads=None):
    """onnxruntime's `InferenceSession` on `path` (CPU), with `num_threads` intra-op threads (default: its own).

    Example (not run here)::

        session("exports/sst2_onnx/token_ids.onnx").run(None, batch)
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = num_threads
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def int64_inputs(batch):
    """The ONNX model's feed from a tokenizer's batch (kbert's and `kbert_core.WordPiece`'s give int32).

    >>> int64_inputs({"token_ids": np.ones((1, 3), "int32"), "segment_ids": np.zeros((1, 3), "int32"),
    ...               "padding_mask": np.ones((1, 3), "int32"), "offsets": None})["token_ids"].dtype
    dtype('int64')
    """
    return {key: np.asarray(batch[key], np.int64) for key in INPUT_KEYS}


def check_onnx(path, tokenizer, spec):
    """Runs `path` in onnxruntime on a small batch; returns its signature (inputs and outputs: dtype and shape)
    for export.json; an ExportError says what failed."""
    try:
        runner = session(path)
        batch = tokenizer(["", "A short text."], ["", "Another one."] if spec.num_texts == 2 else None,
                          max_length=spec.max_length, padding="longest")
        runner.run(None, int64_inputs(batch))
    except Exception as error:
        raise ExportError(f"{path.name} was converted but does not run in onnxruntime: {error}") from error
    return {kind: {value.name: [_dtype_name(value.type), value.shape] for value in values}
            for kind, values in (("inputs", runner.get_inputs()), ("outputs", runner.get_outputs()))}


def _dtype_name(onnx_type):
    """numpy's name of an onnxruntime type: "tensor(float)" -> "float32", "tensor(int64)" -> "int64"."""
    name = onnx_type.removeprefix("tensor(").removesuffix(")")
    return {"float": "float32", "double": "float64"}.get(name, name)

