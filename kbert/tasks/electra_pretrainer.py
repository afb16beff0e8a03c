"""`ElectraPretrainer`: ELECTRA's replaced-token detection (Clark et al. 2020), a generator and a discriminator
trained together with `model.fit` on any backend."""

import keras
from keras import ops

from kbert.distribution.torch_data_parallel import global_share
from kbert.layers.initializers import clone_initializer
from kbert.layers.masked_lm_head import MaskedLMHead
from kbert.layers.transformer_encoder import ACTIVATION_FUNCTIONS, TransformerEncoder
from kbert.models.bert_backbone import INPUT_KEYS
from kbert.tasks.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kbert.tasks.bert_pretrainer import MaskedTokensLoss
from kbert.tasks.bert_task import BertTask

GENERATOR_FRACTION = 0.25  # ELECTRA-Small's generator: a quarter of the discriminator's width (google-research/electra)
DISCRIMINATOR_WEIGHT = 50.0  # the paper's lambda: loss = MLM loss + 50 * RTD loss
RTD_AUC_BINS = 1000  # `rtd_auc` counts the probabilities of one bin as tied: 0.004 to 0.01 of a logit wide within +-2.5


def generator_dimensions(hidden_dim, fraction=GENERATOR_FRACTION):
    """`(hidden_dim, num_heads, intermediate_dim)` of the generator of a discriminator `hidden_dim` wide, as
    google-research/electra sizes it: `round(fraction * hidden_dim)` wide, a head per 64 dimensions (at least one,
    fewer where 64 does not divide), a feed-forward 4 times as wide. A ValueError for a fraction outside (0, 1]: a
    generator wider than the discriminator (or of no width).

    Example:
    >>> generator_dimensions(256), generator_dimensions(768, 1 / 3)
    ((64, 1, 256), (256, 4, 1024))
    >>> generator_dimensions(256, 2.0)
    Traceback (most recent call last):
    ValueError: ElectraPretrainer: generator_fraction 2.0 makes a generator 512 wide, wider than the discriminator's \
hidden_dim 256: give a fraction in (0, 1] (ELECTRA uses 1/4 to 1/2).
    """
    width = round(fraction * hidden_dim)
    if not 0 < fraction <= 1 or width < 1:
        problem = "wider than" if fraction > 1 else "for"
        raise ValueError(f"ElectraPretrainer: generator_fraction {fraction} makes a generator {width} wide, {problem} "
                         f"the discriminator's hidden_dim {hidden_dim}: give a fraction in (0, 1] (ELECTRA uses 1/4 "
                         "to 1/2).")
    heads = next(count for count in range(max(1, width // 64), 0, -1) if width % count == 0)
    return width, heads, 4 * width


def replace_at(token_ids, mask_positions, values):
    """`token_ids` (batch, length) with `values` (batch, predictions) at `mask_positions`; position 0 (the [CLS]
    token, never masked) marks an empty prediction slot and replaces nothing, as in ELECTRA's `scatter_update`.
    Where a position repeats, its first slot's value is taken.

    Example:
    >>> import numpy as np
    >>> replaced = replace_at(np.array([[2, 7, 8, 9]]), np.array([[1, 3, 0]]), np.array([[5, 6, 4]]))
    >>> ops.convert_to_numpy(replaced).tolist()
    [[2, 5, 8, 6]]
    """
    positions = ops.expand_dims(ops.cast(mask_positions, "int32"), -1)  # (batch, predictions, 1)
    hits = ops.logical_and(positions == ops.arange(ops.shape(token_ids)[1], dtype="int32"), positions > 0)
    slot = ops.argmax(ops.cast(hits, "int32"), axis=1)  # (batch, length): the first slot naming each position
    placed = ops.take_along_axis(ops.cast(values, "int32"), slot, axis=1)
    return ops.where(ops.any(hits, axis=1), placed, ops.cast(token_ids, "int32"))


def replaced_token_labels(token_ids, mask_positions, mask_ids, corrupted_ids):
    """The discriminator's targets, (batch, length) float32: 1 where `corrupted_ids` differs from the original text,
    which is `token_ids` with the originals `mask_ids` put back at `mask_positions`; a sample equal to the original
    is original (0).

    Example:
    >>> import numpy as np
    >>> labels = replaced_token_labels(np.array([[2, 4, 4, 3]]), np.array([[1, 2]]), np.array([[7, 8]]),
    ...                                np.array([[2, 7, 9, 3]]))
    >>> ops.convert_to_numpy(labels).tolist()
    [[0.0, 0.0, 1.0, 0.0]]
    """
    original = replace_at(token_ids, mask_positions, mask_ids)
    return ops.cast(ops.not_equal(ops.cast(corrupted_ids, "int32"), original), "float32")


@keras.saving.register_keras_serializable(package="kbert")
class GeneratorSamples(keras.layers.Layer):
    """Replaces the tokens at `mask_positions` with samples from the generator's logits there (Gumbel-max, as
    ELECTRA's `sample_from_softmax`; no gradient flows through the sampling). The noise comes from a
    `keras.random.SeedGenerator`, whose state is a variable of the layer: it advances in every backend's compiled
    train step and is saved with the weights.

    Args:
        seed: int or None. Seeds the sampling.

    Example:
    >>> import numpy as np
    >>> logits = np.full((1, 2, 10), -1e9, "float32")
    >>> logits[0, 0, 7] = logits[0, 1, 8] = 0.0  # certain samples: 7 and 8
    >>> ops.convert_to_numpy(GeneratorSamples(seed=0)(np.array([[2, 4, 4, 3]]), np.array([[1, 2]]), logits)).tolist()
    [[2, 7, 8, 3]]
    """

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, token_ids, mask_positions, logits):
        logits = ops.stop_gradient(ops.cast(logits, "float32"))
        noise = keras.random.uniform(ops.shape(logits), seed=self.seed_generator)
        samples = ops.argmax(logits - ops.log(-ops.log(noise + 1e-9) + 1e-9), axis=-1)
        return replace_at(token_ids, mask_positions, samples)

    def compute_output_spec(self, token_ids, mask_positions, logits):
        return keras.KerasTensor(token_ids.shape, dtype="int32")

    def get_config(self):
        return {**super().get_config(), "seed": self.seed}


@keras.saving.register_keras_serializable(package="kbert")
class DiscriminatorHead(keras.layers.Layer):
    """ELECTRA's discriminator head on every token (Hugging Face's `ElectraDiscriminatorPredictions`): `dense`
    (hidden -> hidden, the encoder's activation), then `dense_prediction` (hidden -> 1). Logits (batch, length) in
    float32: positive for "replaced".

    Args:
        hidden_dim: int.
        activation: str. One of `kbert.config.ACTIVATIONS`.
        kernel_initializer: initializer of both dense layers.

    Example:
    >>> import numpy as np
    >>> tuple(DiscriminatorHead(8)(np.zeros((2, 5, 8))).shape)
    (2, 5)
    """

    def __init__(self, hidden_dim, activation="gelu", kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.activation = activation
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.dense = keras.layers.Dense(hidden_dim, kernel_initializer=clone_initializer(self.kernel_initializer),
                                        dtype=self.dtype_policy, name="dense")
        self.dense_prediction = keras.layers.Dense(1, kernel_initializer=clone_initializer(self.kernel_initializer),
                                                   dtype=self.dtype_policy, name="dense_prediction")

    def build(self, sequence_output_shape):
        self.dense.build(sequence_output_shape)
        self.dense_prediction.build((*sequence_output_shape[:-1], self.hidden_dim))

    def call(self, sequence_output):
        hidden = ACTIVATION_FUNCTIONS[self.activation](self.dense(sequence_output))
        return ops.cast(ops.squeeze(self.dense_prediction(hidden), -1), "float32")

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])

    def get_config(self):
        return {**super().get_config(), "hidden_dim": self.hidden_dim, "activation": self.activation,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer)}


@keras.saving.register_keras_serializable(package="kbert")
class ElectraPretrainer(BertTask):
    """ELECTRA pretraining: a small generator fills the masked positions, the discriminator (`backbone`, the encoder
    every task then starts from) learns from every token whether it was replaced.

    The generator is an encoder `generator_fraction` of the backbone's width (`generator_dimensions`), as deep,
    on the backbone's own token, segment and position embeddings (one set of variables; each encoder projects
    them up to its width where widths differ); it is trained with masked LM at `mask_positions` (a `MaskedLMHead`,
    `generator_predictions`, tied to the token embedding). Its samples (`GeneratorSamples`) replace the tokens at
    the masked positions; the discriminator reads the result and its `discriminator_predictions` head
    (`DiscriminatorHead`) gives a logit per token. The loss is the generator's masked-LM cross-entropy
    (`MaskedTokensLoss`, the compiled `loss`) plus `discriminator_weight` times the sigmoid cross-entropy averaged over
    every non-padding token, its target 1 where the discriminator's input differs from the original text
    (`replaced_token_labels`: a sample equal to the original counts as original).

    Inputs and targets are `BertPretrainer`'s without next-sentence prediction (`kbert.data.pretraining.dataset` with
    objective "mlm", or texts through `BertMaskedLMPreprocessor`): x the backbone's dict plus `mask_positions`, y
    `{"mlm": originals at the masked positions}`, their sample weight `mask_weights`. Outputs: `mlm` (generator
    logits, batch x predictions x vocabulary), `rtd` (discriminator logits, batch x length) and `corrupted_ids` (the
    discriminator's input). Reported: `loss`, `mlm_loss`, `mlm_accuracy`, `rtd_loss`, `rtd_accuracy` and `rtd_auc`
    (the ROC AUC of its logits over the non-padding tokens: 0.5 where it tells replaced from original no better than
    chance, whatever its accuracy, which the constant answer "original" puts near 1 - the replaced share).

    Args:
        backbone: `kbert.BertBackbone`: the discriminator.
        preprocessor: `BertMaskedLMPreprocessor` or None (token ids only).
        generator_fraction: float in (0, 1]. The generator's width over the discriminator's (ELECTRA-Small: 1/4).
        discriminator_weight: float. Weight of the replaced-token loss (the paper's lambda, 50).
        seed: int or None. Seeds the generator's sampling.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("electra_small", num_layers=1, hidden_dim=64, num_heads=1)
    >>> model = ElectraPretrainer(backbone)
    >>> model.get_layer("generator").get_layer("generator_layer_0").num_heads, sorted(model.output)
    (1, ['corrupted_ids', 'mlm', 'rtd'])
    """

    preprocessor_class = BertMaskedLMPreprocessor
    needs_labels = False  # masked LM: the text is its own target
    default_learning_rate = 5e-4  # ELECTRA-Small's

    def __init__(self, backbone, preprocessor=None, generator_fraction=GENERATOR_FRACTION,
                 discriminator_weight=DISCRIMINATOR_WEIGHT, seed=None, **kwargs):
        width, heads, intermediate = generator_dimensions(backbone.hidden_dim, generator_fraction)
        inputs = {key: keras.Input(shape=(None,), dtype="int32", name=key)
                  for key in (*INPUT_KEYS, "mask_positions")}
        features = {key: inputs[key] for key in INPUT_KEYS}
        generator = _generator(backbone, width, heads, intermediate)
        initializer = keras.initializers.TruncatedNormal(stddev=backbone.initializer_range)
        mlm = MaskedLMHead(
            backbone.token_embedding, layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=clone_initializer(initializer),
            dtype=backbone.dtype_policy, name="generator_predictions",
        )(generator(features), inputs["mask_positions"])
        corrupted = GeneratorSamples(seed, name="generator_samples")(
            inputs["token_ids"], inputs["mask_positions"], mlm)
        encoded = backbone({**features, "token_ids": corrupted})
        rtd = DiscriminatorHead(backbone.hidden_dim, backbone.activation, initializer, dtype=backbone.dtype_policy,
                                name="discriminator_predictions")(encoded["sequence_output"])
        super().__init__(inputs, {"mlm": mlm, "rtd": rtd, "corrupted_ids": corrupted}, backbone, preprocessor,
                         config={"generator_fraction": generator_fraction,
                                 "discriminator_weight": discriminator_weight, "seed": seed}, **kwargs)
        self.rtd_loss_tracker = keras.metrics.Mean(name="rtd_loss")
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.rtd_accuracy = keras.metrics.BinaryAccuracy(name="rtd_accuracy", threshold=0.0)  # on logits
        self.rtd_auc = keras.metrics.AUC(num_thresholds=RTD_AUC_BINS, from_logits=True, name="rtd_auc")

    def default_compile_arguments(self):
        return {"loss": MaskedTokensLoss(from_logits=True, reduction="mean_with_sample_weight"),
                "weighted_metrics": [keras.metrics.SparseCategoricalAccuracy("mlm_accuracy")]}

    def check_labels(self, y):
        if y is not None:
            raise ValueError("ElectraPretrainer takes texts alone, no y: the text is its own target.")
        return None

    def _discriminator_targets(self, x, y, y_pred):
        """(labels, weights), each (batch, length): replaced or not, and the padding mask."""
        labels = replaced_token_labels(x["token_ids"], x["mask_positions"], y["mlm"], y_pred["corrupted_ids"])
        return labels, ops.cast(x["padding_mask"], "float32")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled masked-LM loss of the generator plus `discriminator_weight` times the replaced-token loss."""
        mlm_weight = None if sample_weight is None else sample_weight["mlm"]
        mlm_loss = super().compute_loss(x, y["mlm"], y_pred["mlm"], mlm_weight, training)
        labels, weights = self._discriminator_targets(x, y, y_pred)
        token_losses = keras.losses.binary_crossentropy(
            ops.expand_dims(labels, -1), ops.expand_dims(y_pred["rtd"], -1), from_logits=True)
        total = ops.sum(weights)
        rtd_loss = ops.sum(token_losses * weights) / ops.maximum(total, 1.0)
        share = global_share(total)  # a torch job's process: its part of the global batch's tokens
        rtd_loss = rtd_loss if share is None else rtd_loss * share
        self.mlm_loss_tracker.update_state(mlm_loss)
        self.rtd_loss_tracker.update_state(rtd_loss)
        return mlm_loss + self.discriminator_weight * rtd_loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        labels, weights = self._discriminator_targets(x, y, y_pred)
        self.rtd_accuracy.update_state(ops.expand_dims(labels, -1), ops.expand_dims(y_pred["rtd"], -1), weights)
        self.rtd_auc.update_state(labels, y_pred["rtd"], weights)
        return super().compute_metrics(x, y["mlm"], y_pred["mlm"], None if sample_weight is None
                                       else sample_weight["mlm"])


def _generator(backbone, width, heads, intermediate):
    """The generator's encoder, a functional model on the backbone's inputs: the backbone's embedding layers (the
    same variables), a projection to `width` where the embeddings are not that wide, and `backbone.num_layers`
    blocks of its own, their names prefixed `generator_` (Keras names a variable by its layer alone)."""
    x = backbone.get_layer("embeddings_dropout").output  # the backbone's graph up to its projection: its layers
    initializer = keras.initializers.TruncatedNormal(stddev=backbone.initializer_range)
    dtype = backbone.dtype_policy
    if x.shape[-1] != width:
        x = keras.layers.Dense(width, kernel_initializer=clone_initializer(initializer), dtype=dtype,
                               name="generator_embeddings_projection")(x)
    for index in range(backbone.num_layers):
        x = TransformerEncoder(num_heads=heads, intermediate_dim=intermediate, dropout=backbone.dropout,
                               layer_norm_epsilon=backbone.layer_norm_epsilon,
                               kernel_initializer=clone_initializer(initializer),
                               activation=backbone.activation, dtype=dtype, name=f"generator_layer_{index}",
                               )(x, padding_mask=backbone.input["padding_mask"])
    return keras.Model(backbone.input, x, name="generator")
