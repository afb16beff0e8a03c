"""A `BertBackbone`'s forward pass in plain torch calls, at inference and in training (imports torch: torch
backend only)."""

import functools

import torch
import torch.nn.functional as F
from keras import ops
from keras.src.backend.common.stateless_scope import in_stateless_scope
from keras.src.backend.common.variables import AutocastScope

from kbert.backend_speedups import active
from kbert.backend_speedups.torch_dropout import dropout as torch_dropout


def backbone_forward(backbone, inputs, training=False, compiled=False):
    """What `backbone(inputs, training=training)` computes, written as torch calls on its own
    weights: `{"sequence_output", "pooled_output"}` (no `pooled_output` without a pooler), for every
    family's settings (a projected embedding, shared blocks, offset positions, no token types, GELU's
    tanh form).

    Walking the functional graph and dispatching each `keras.ops` call costs Keras 10-30 us a
    call on torch; all-MiniLM-L6-v2 on a batch of 32 short sentences makes some 200 of them, a
    sixth of the pass. The same math from the same weights (read through the layers'
    `kernel` / `embeddings` properties, so LoRA's update is included), in the backbone's compute
    dtype with layer norms normalizing in float32, as Keras's do; under a mixed policy
    ("mixed_bfloat16", "mixed_float16") the float32 weights are cast to the compute dtype where
    Keras's layers cast them (autograd carries the gradients back to float32); sums may round differently
    (`tests/backend_speedups/test_torch_backbone.py` compares it with the Keras graph).

    In training, autograd runs through the same calls into the weights' own tensors, so Keras's
    torch trainer reads their gradients as from the graph; dropout (the backbone's rate) falls
    where the graph's Dropout layers are: after the embeddings' layer norm, on the attention
    probabilities (inside PyTorch's fused attention, `dropout_p`, where the graph computes the
    attention explicitly to drop), and on both residual branches of each block; masks from
    torch's global generator (`torch_dropout`), as `kbert.layers.Dropout` draws them on torch.
    With `compiled`, `forward` runs under `torch.compile` (`compiled_forward`): kbert's compiled
    mode on torch, which `BertTask.compile(jit_compile=True)` turns on (not on Keras's meta tensors).
    Called by `BertBackbone.call` when `_runs_in_plain_torch` allows it, and by `BertBackbone.packed_outputs`
    with `padding_mask` (batch, length, length), which keys each query attends to, and `position_ids`.
    """
    token_ids, segment_ids, padding_mask = (ops.convert_to_tensor(inputs[key])
                                            for key in ("token_ids", "segment_ids", "padding_mask"))
    # Keras's shape inference (a layer called on symbolic inputs, `fit`'s first build) runs this on meta tensors
    # without gradients: a program compiled for them would never run again, so it runs uncompiled
    run = compiled_forward() if compiled and token_ids.device.type != "meta" else forward
    outputs = run(_gathered_weights(backbone), token_ids, segment_ids, padding_mask,
                  rate=backbone.dropout if training else 0.0, num_heads=backbone.num_heads,
                  epsilon=backbone.layer_norm_epsilon, dtype=getattr(torch, backbone.token_embedding.compute_dtype),
                  position_offset=backbone.position_offset, approximate=backbone.activation == "gelu_approximate",
                  position_ids=None if "position_ids" not in inputs else ops.convert_to_tensor(inputs["position_ids"]))
    return dict(zip(("sequence_output", "pooled_output"), outputs))


@functools.cache
def compiled_forward():
    """`forward` under `torch.compile` (Inductor), compiled at its first call for each kind of call
    (training or inference, dropout rate) and shape; when a shape changes, it compiles once more with the
    changing sizes symbolic (torch's automatic dynamic shapes), after which other lengths and batch
    sizes reuse that program. Weights are arguments, so one program serves every backbone of a shape.
    Keras's own `jit_compile=True` on torch compiles its whole train step instead (minutes for
    BERT-base)."""
    return torch.compile(forward)


def backbone_weights(backbone):
    """The backbone's weights as torch tensors, nested as `forward` reads them: (kernel, bias)
    of each dense layer, (gamma, beta) of each layer norm; the variables' own tensors (autograd
    reaches them), or a LoRA-updated kernel. A block whose weights several share comes as often as it
    is called (autograd sums its gradients); a part the backbone has not (segments, projection, pooler) is None."""
    layer = backbone.get_layer

    def dense(d):
        return _weight(d.kernel), None if d.bias is None else _weight(d.bias)

    def norm(n):
        return _weight(n.gamma), _weight(n.beta)

    blocks = []
    for block in backbone.transformer_layers:
        attention = block.self_attention
        blocks.append((dense(attention.qkv_dense), dense(attention.output_dense), norm(block.attention_layer_norm),
                       dense(block.intermediate_dense), dense(block.output_dense), norm(block.output_layer_norm)))
    return {"token": _weight(backbone.token_embedding.embeddings),
            "segment": _weight(layer("segment_embedding").embeddings) if backbone.num_segments else None,
            "position": _weight(layer("position_embedding").embeddings),
            "embeddings_norm": norm(layer("embeddings_layer_norm")),
            "projection": dense(layer("embeddings_projection")) if backbone.embedding_dim is not None else None,
            "blocks": blocks, "pooler": None if backbone.pooler is None else dense(backbone.pooler)}


def _gathered_weights(backbone):
    """`backbone_weights`, kept between calls while the model does not change (`torch_train_step.gathered`,
    with the speed-up `torch_train_step`) where every one is a variable's own tensor: not a LoRA-updated kernel,
    nor the copy that a variable reads in a stateless scope. In a mixed-precision scope too, read outside it: `forward`
    casts the kernels and embeddings to the compute dtype where the scope would have (the same `.to`), and the layer
    norms' weights, which Keras never casts (`autocast=False`), it reads in float32."""
    if not active("torch_train_step") or in_stateless_scope():
        return backbone_weights(backbone)
    from kbert.backend_speedups.torch_train_step import gathered

    def own_tensors():
        with AutocastScope(None):
            return _own_tensors(backbone_weights(backbone))

    weights = gathered(backbone, "backbone_weights", own_tensors)
    return backbone_weights(backbone) if weights is None else weights


def _own_tensors(weights):
    """`weights` if every tensor in it is a variable's own (a `torch.nn.Parameter`), else None."""
    tensors = [t for t in torch.utils._pytree.tree_leaves(weights) if t is not None]
    return weights if all(isinstance(t, torch.nn.Parameter) for t in tensors) else None


def forward(weights, token_ids, segment_ids, padding_mask, rate, num_heads, epsilon, dtype, position_offset=0,
            approximate=False, position_ids=None):
    """(sequence_output, pooled_output) of a BERT encoder with `weights` (`backbone_weights`),
    computed in `dtype`: a function of tensors alone, which `torch.compile` can take whole. Without a
    pooler, (sequence_output,). `position_offset` as `kbert.layers.PositionEmbedding`'s; `approximate`:
    GELU's tanh form; `position_ids` (batch, length), the rows of the position table (packed rows), or None
    for those of `position_offset`; `padding_mask` (batch, length), or (batch, length, length) as
    `_attention_bias` takes it."""
    length = token_ids.shape[1]
    x = F.embedding(token_ids, weights["token"]).to(dtype)
    if weights["segment"] is not None:
        x = x + F.embedding(segment_ids, weights["segment"]).to(dtype)
    if position_ids is not None:
        x = x + F.embedding(position_ids, weights["position"]).to(dtype)
    elif position_offset:
        real = padding_mask.to(torch.long)
        x = x + F.embedding(torch.cumsum(real, 1) * real + (position_offset - 1), weights["position"]).to(dtype)
    else:
        x = x + weights["position"][:length].to(dtype)
    x = _dropout(_layer_norm(weights["embeddings_norm"], x, epsilon), rate)
    if weights["projection"] is not None:
        x = _dense(weights["projection"], x)
    mask = _attention_bias(padding_mask, x.dtype)
    for block in weights["blocks"]:
        x = _block(block, x, mask, rate, num_heads, epsilon, approximate)
    if weights["pooler"] is None:
        return (x,)
    return x, torch.tanh(_dense(weights["pooler"], x[:, 0, :]))


def _attention_bias(padding_mask, dtype):
    """(batch, 1, 1, length): 0 on real keys, a large negative number on padding, as Keras's
    torch `dot_product_attention` adds it (a row with no real key attends to every key
    alike, as there, instead of the NaN or zeros of a boolean mask); from a (batch, length, length) mask,
    (batch, 1, length, length), 0 where a query may attend to a key."""
    real = padding_mask.to(torch.bool)
    real = real[:, None] if real.dim() == 3 else real[:, None, None, :]
    return torch.where(real, 0.0, -0.7 * 3.38953e38).to(dtype)


def _block(block, x, mask, rate, num_heads, epsilon, approximate):
    qkv, attention_output, attention_norm, intermediate, output, output_norm = block
    batch, length, width = x.shape
    fused = _dense(qkv, x).view(batch, length, 3, num_heads, width // num_heads)
    query, key, value = fused.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, head_dim)
    context = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=rate)
    context = context.transpose(1, 2).reshape(batch, length, width)
    x = _layer_norm(attention_norm, x + _dropout(_dense(attention_output, context), rate), epsilon)
    hidden = F.gelu(_dense(intermediate, x), approximate="tanh" if approximate else "none")
    return _layer_norm(output_norm, x + _dropout(_dense(output, hidden), rate), epsilon)


def _dropout(x, rate):
    return torch_dropout(x, rate) if rate else x


def _dense(dense, x):
    kernel, bias = dense
    return F.linear(x, _as(kernel, x.dtype).T, None if bias is None else _as(bias, x.dtype))


def _layer_norm(norm, x, epsilon):
    gamma, beta = norm
    return _as(F.layer_norm(_as(x, torch.float32), x.shape[-1:], _as(gamma, torch.float32), _as(beta, torch.float32),
                            epsilon), x.dtype)


def _as(tensor, dtype):
    """`tensor.to(dtype)` (itself when of that dtype), without the call where it is of that dtype already: a
    dispatched no-op (`aten::to`) each time, ~200 of them a forward pass of a 12-layer BERT."""
    return tensor if tensor.dtype == dtype else tensor.to(dtype)


def _weight(weight):
    """The torch tensor of a Keras variable, or `weight` itself (a LoRA-updated kernel)."""
    return getattr(weight, "value", weight)
