import functools

import keras
from keras import ops

from kbert.backend_speedups import active
from kbert.layers.dropout import Dropout
from kbert.layers.initializers import clone_initializer
from kbert.layers.multi_head_self_attention import MultiHeadSelfAttention
from kbert.backend_speedups.sublayer_calls import sublayer_call


def exact_gelu(x):
    """GELU in its exact erf form, `x * Phi(x)`, as BERT computes it.

    On JAX it is written out as `0.5 x (1 + erf(x / sqrt 2))`: `ops.gelu(approximate=False)`
    lowers to `erfc` there, which XLA fuses into more memory passes (4% of a bert_mini
    pretraining step). Elsewhere the backend's own exact GELU (torch's fused kernel).

    Example:
    >>> [round(float(v), 4) for v in exact_gelu(ops.convert_to_tensor([-1.0, 0.0, 2.0]))]
    [-0.1587, 0.0, 1.9545]
    """
    if active("jax_gelu"):
        return 0.5 * x * (1.0 + ops.erf(x * 0.7071067811865476))
    return ops.gelu(x, approximate=False)


# `TransformerEncoder`'s activations, by `kbert.config.ACTIVATIONS`' names: GELU's exact erf form (BERT's), its
# tanh approximation (ALBERT's).
ACTIVATION_FUNCTIONS = {"gelu": exact_gelu, "gelu_approximate": functools.partial(ops.gelu, approximate=True)}


@keras.saving.register_keras_serializable(package="kbert")
class TransformerEncoder(keras.layers.Layer):
    """One post-LayerNorm BERT block: self-attention and a GELU feed-forward, each residual.

    `x = LN(x + Dropout(Attention(x)))`, then `x = LN(x + Dropout(W2 GELU(W1 x)))`, with
    GELU in its exact erf form, as in BERT, or its tanh approximation. `padding_mask` (batch, length), or
    (batch, length, length) for which keys each query attends to (`MultiHeadSelfAttention`'s).

    Args:
        num_heads: int. Attention heads.
        intermediate_dim: int. Width of the feed-forward layer.
        dropout: float. Dropout on attention probabilities and both residual branches.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of every dense kernel.
        activation: str. "gelu" (exact) or "gelu_approximate" (tanh).

    Example:
    >>> import numpy as np
    >>> block = TransformerEncoder(num_heads=2, intermediate_dim=16)
    >>> tuple(block(np.ones((2, 5, 8)), padding_mask=np.ones((2, 5))).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        kernel_initializer="glorot_uniform",
        activation="gelu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if activation not in ACTIVATION_FUNCTIONS:
            raise ValueError(f"TransformerEncoder: activation must be one of {sorted(ACTIVATION_FUNCTIONS)}, "
                             f"not {activation!r}.")
        self.activation = activation
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        common = dict(kernel_initializer=self.kernel_initializer, dtype=self.dtype_policy)  # cloned by each layer
        self.self_attention = MultiHeadSelfAttention(
            self.num_heads, dropout=self.dropout, name="self_attention", **common
        )
        self.self_attention.build(input_shape)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="attention_layer_norm"
        )
        self.attention_layer_norm.build(input_shape)
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim, name="intermediate_dense",
            **{**common, "kernel_initializer": clone_initializer(self.kernel_initializer)}
        )
        self.intermediate_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(
            hidden_dim, name="output_dense",
            **{**common, "kernel_initializer": clone_initializer(self.kernel_initializer)}
        )
        self.output_dense.build(input_shape[:-1] + (self.intermediate_dim,))
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="output_layer_norm"
        )
        self.output_layer_norm.build(input_shape)
        self.residual_dropout = Dropout(self.dropout, dtype=self.dtype_policy)

    def call(self, inputs, padding_mask, training=None):
        # At inference: the sublayers' own calls where that changes nothing (`sublayer_call`),
        # and no dropout layer called at all.
        attended = sublayer_call(self.self_attention, training)(inputs, padding_mask, training=training)
        x = sublayer_call(self.attention_layer_norm, training)(inputs + self._dropout(attended, training))
        hidden = ACTIVATION_FUNCTIONS[self.activation](sublayer_call(self.intermediate_dense, training)(x))
        hidden = sublayer_call(self.output_dense, training)(hidden)
        return sublayer_call(self.output_layer_norm, training)(x + self._dropout(hidden, training))

    def _dropout(self, x, training):
        return self.residual_dropout(x, training=training) if training else x

    def rematerialized_call(self, layer_call, *args, **kwargs):
        """The block under a `keras.RematScope` that selects it: recomputed in the backward
        pass (`keras.remat`: `jax.checkpoint`, `tf.recompute_grad`,
        `torch.utils.checkpoint`), with `training` held static and the block's state passed
        explicitly.

        Keras's own `keras.remat(call)` fails here on JAX and TensorFlow. JAX traces every
        argument: the Python bool `training` becomes a traced value and `if training`
        (dropout) fails ("Unable to automatically build the model", a
        TracerBoolConversionError below it), and dropout's seed, a variable the call assigns,
        would leak the checkpoint's tracer. TensorFlow's `tf.custom_gradient` refuses keyword
        arguments in a `tf.function` ("supports keywords arguments only when eager execution
        is enabled": `padding_mask`, `training`), and eagerly its recomputation reads the seed
        the forward pass has already moved on: other dropout masks, wrong gradients. (On
        torch it works: Keras's dropout draws from torch's generator, whose state
        `torch.utils.checkpoint` restores.) So the block is checkpointed as a pure function
        of its weights and input tensors, with the seeds' values taken before the call (the
        recomputation draws the forward pass's masks); it returns the new seeds, assigned
        once, outside.
        """
        call = super().rematerialized_call(layer_call, *args, **kwargs)
        if call is layer_call:
            return call
        weights = self.trainable_variables
        states = self.non_trainable_variables  # the dropout seeds

        def pure_call(values, args, kwargs, state_values, training):
            mapping = [*zip(weights, values), *zip(states, state_values)]
            with keras.StatelessScope(state_mapping=mapping) as scope:
                outputs = layer_call(*args, training=training, **kwargs)
                return outputs, [scope.get_current_value(v) for v in states]

        def call_with_static_training(*args, training=None, **kwargs):
            state_values = [ops.copy(v.value) for v in states]  # not read again in the backward pass
            checkpointed = keras.remat(functools.partial(pure_call, kwargs=kwargs, state_values=state_values,
                                                         training=training))  # what needs no gradient
            outputs, new_states = checkpointed([v.value for v in weights], args)
            for variable, value in zip(states, new_states):
                if value is not None:
                    variable.assign(value)
            return outputs

        return call_with_static_training

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "activation": self.activation,
        }
