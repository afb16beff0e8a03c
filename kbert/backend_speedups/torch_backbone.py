"""A `BertBackbone`'s forward pass in plain torch calls, at inference and in training (imports torch: torch
backend only)."""

import torch
import torch.nn.functional as F
from keras import ops

from kbert.backend_speedups.torch_dropout import dropout as torch_dropout


def backbone_forward(backbone, inputs, training=False):
    """What `backbone(inputs, training=training)` computes, written as torch calls on its own
    weights: `{"sequence_output", "pooled_output"}`.

    Walking the functional graph and dispatching each `keras.ops` call costs Keras 10-30 us a
    call on torch; all-MiniLM-L6-v2 on a batch of 32 short sentences makes some 200 of them, a
    sixth of the pass. The same math from the same weights (read through the layers'
    `kernel` / `embeddings` properties, so LoRA's update is included), in the backbone's compute
    dtype with layer norms normalizing in float32, as Keras's do; sums may round differently
    (`tests/backend_speedups/test_torch_backbone.py` compares it with the Keras graph).

    In training, autograd runs through the same calls into the weights' own tensors, so Keras's
    torch trainer reads their gradients as from the graph; dropout (the backbone's rate) falls
    where the graph's Dropout layers are: after the embeddings' layer norm, on the attention
    probabilities (inside PyTorch's fused attention, `dropout_p`, where the graph computes the
    attention explicitly to drop), and on both residual branches of each block; masks from
    torch's global generator (`torch_dropout`), as `kbert.layers.Dropout` draws them on torch.
    Called by `BertBackbone.call` when `_runs_in_plain_torch` allows it.
    """
    token_ids, segment_ids, padding_mask = (ops.convert_to_tensor(inputs[key])
                                            for key in ("token_ids", "segment_ids", "padding_mask"))
    length = token_ids.shape[1]
    layer = backbone.get_layer
    x = F.embedding(token_ids, _weight(backbone.token_embedding.embeddings))
    x = x + F.embedding(segment_ids, _weight(layer("segment_embedding").embeddings))
    x = x + _weight(layer("position_embedding").embeddings)[:length]
    rate = backbone.dropout if training else 0.0
    x = _dropout(_layer_norm(layer("embeddings_layer_norm"), x), rate)
    mask = _attention_bias(padding_mask, x.dtype)
    for i in range(backbone.num_layers):
        x = _block(layer(f"transformer_layer_{i}"), x, mask, rate)
    pooled = torch.tanh(_dense(backbone.pooler, x[:, 0, :]))
    return {"sequence_output": x, "pooled_output": pooled}


def _attention_bias(padding_mask, dtype):
    """(batch, 1, 1, length): 0 on real keys, a large negative number on padding, as Keras's
    torch `dot_product_attention` adds it (a row with no real key attends to every key
    alike, as there, instead of the NaN or zeros of a boolean mask)."""
    real = padding_mask.to(torch.bool)[:, None, None, :]
    return torch.where(real, 0.0, -0.7 * 3.38953e38).to(dtype)


def _block(block, x, mask, rate=0.0):
    attention = block.self_attention
    batch, length, width = x.shape
    heads = attention.num_heads
    fused = _dense(attention.qkv_dense, x).view(batch, length, 3, heads, width // heads)
    query, key, value = fused.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, head_dim)
    context = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=rate)
    context = context.transpose(1, 2).reshape(batch, length, width)
    x = _layer_norm(block.attention_layer_norm, x + _dropout(_dense(attention.output_dense, context), rate))
    hidden = F.gelu(_dense(block.intermediate_dense, x))
    return _layer_norm(block.output_layer_norm, x + _dropout(_dense(block.output_dense, hidden), rate))


def _dropout(x, rate):
    return torch_dropout(x, rate) if rate else x


def _dense(dense, x):
    bias = None if dense.bias is None else _weight(dense.bias)
    return F.linear(x, _weight(dense.kernel).T, bias)


def _layer_norm(norm, x):
    normalized = F.layer_norm(x.float(), x.shape[-1:], _weight(norm.gamma).float(),
                              _weight(norm.beta).float(), norm.epsilon)
    return normalized.to(x.dtype)


def _weight(weight):
    """The torch tensor of a Keras variable, or `weight` itself (a LoRA-updated kernel)."""
    return getattr(weight, "value", weight)
