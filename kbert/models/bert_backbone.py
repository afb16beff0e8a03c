import keras
import numpy as np
from keras import ops

from kbert.config import BertConfig
from kbert.keywords import check_keywords
from kbert.layers.dropout import Dropout
from kbert.layers.initializers import clone_initializer
from kbert.layers.position_embedding import PositionEmbedding
from kbert.layers.transformer_encoder import TransformerEncoder
from kbert.saving import model_source

INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="kbert")
class BertBackbone(keras.Model):
    """BERT encoder as a Keras functional model: embeddings, post-LN blocks, tanh pooler; and RoBERTa's,
    ALBERT's, ELECTRA's and DistilBERT's from the same layers, by the settings of `kbert.BertConfig` (a
    projected embedding, blocks sharing weights, offset positions, no token types, no pooler).

    Inputs are a dict of int tensors of shape (batch, length): `token_ids`,
    `segment_ids` and `padding_mask` (1 for real tokens). Outputs are a dict:
    `sequence_output` (batch, length, hidden_dim) and, with `pooler=True` (not for
    DistilBERT or ELECTRA), `pooled_output` (batch, hidden_dim), the tanh-dense of the
    [CLS] vector (the layer `pooler`, None without one).

    Args: the fields of `kbert.BertConfig`, plus `dtype` (a Keras dtype policy
    such as "mixed_bfloat16"; None, the default, takes the global policy) and the usual
    `keras.Model` keyword arguments. The config keeps `dtype` as given: a backbone built
    under the global policy loads back under the global policy of the loading process.

    Example:
    >>> import numpy as np
    >>> backbone = BertBackbone.from_preset("bert_tiny")
    >>> batch = {k: np.ones((2, 8), "int32") for k in ("token_ids", "padding_mask")}
    >>> batch["segment_ids"] = np.zeros((2, 8), "int32")
    >>> tuple(backbone(batch)["sequence_output"].shape)
    (2, 8, 128)
    >>> albert = BertBackbone.from_preset("albert_base", num_layers=2, hidden_dim=64, num_heads=2)
    >>> sorted(albert(batch)), tuple(albert.get_layer("embeddings_projection").kernel.shape)
    (['pooled_output', 'sequence_output'], (128, 64))
    >>> sorted(BertBackbone.from_preset("distilbert_base", num_layers=1)(batch))
    ['sequence_output']
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        family="bert",
        embedding_dim=None,
        num_layer_groups=None,
        position_offset=0,
        pooler=True,
        activation="gelu",
        dtype=None,
        **kwargs,
    ):
        check_keywords(type(self), kwargs)  # Keras's own (name, trainable) pass; a misspelt argument does not
        config = BertConfig(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            family=family,
            embedding_dim=embedding_dim,
            num_layer_groups=num_layer_groups,
            position_offset=position_offset,
            pooler=pooler,
            activation=activation,
        )
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        width = embedding_dim or hidden_dim

        inputs = {key: keras.Input(shape=(None,), dtype="int32", name=key) for key in INPUT_KEYS}
        token_embedding = keras.layers.Embedding(
            vocabulary_size, width, embeddings_initializer=clone_initializer(initializer),
            dtype=dtype, name="token_embedding",
        )
        x = token_embedding(inputs["token_ids"])
        if num_segments:  # else the segment ids, all 0, add nothing (`check_inputs`)
            x = x + keras.layers.Embedding(
                num_segments, width, embeddings_initializer=clone_initializer(initializer),
                dtype=dtype, name="segment_embedding",
            )(inputs["segment_ids"])
        position_embedding = PositionEmbedding(
            max_sequence_length + position_offset, initializer=clone_initializer(initializer), offset=position_offset,
            dtype=dtype, name="position_embedding",
        )
        x = x + (position_embedding(x, padding_mask=inputs["padding_mask"]) if position_offset
                 else position_embedding(x))
        x = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )(x)
        x = Dropout(dropout, dtype=dtype, name="embeddings_dropout")(x)
        if embedding_dim is not None:
            x = keras.layers.Dense(
                hidden_dim, kernel_initializer=clone_initializer(initializer), dtype=dtype,
                name="embeddings_projection",
            )(x)
        blocks = [
            TransformerEncoder(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=clone_initializer(initializer),
                activation=activation,
                dtype=dtype,
                name=f"transformer_layer_{group}",
            )
            for group in range(num_layer_groups or num_layers)
        ]
        for group in config.layer_groups:  # one layer called again where blocks share its weights
            x = blocks[group](x, padding_mask=inputs["padding_mask"])
        outputs = {"sequence_output": x}
        pooler_layer = None
        if pooler:
            pooler_layer = keras.layers.Dense(
                hidden_dim, activation="tanh", kernel_initializer=clone_initializer(initializer),
                dtype=dtype, name="pooled_dense",
            )
            outputs["pooled_output"] = pooler_layer(x[:, 0, :])
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        self.config = config
        self._dtype_argument = None if dtype is None else keras.dtype_policies.get(dtype).name
        self.token_embedding = token_embedding
        self.torch_compiled = False  # kbert's compiled mode on torch: set by BertTask.compile(jit_compile=True)
        for name, value in config.to_dict().items():
            if name != "pooler":  # `pooler` is the layer (None without one); `config.pooler` says whether there is one
                setattr(self, name, value)
        self.pooler = pooler_layer

    @property
    def transformer_layers(self):
        """The blocks in the order the encoder calls them: `num_layers` of them, a block whose weights several
        share (`num_layer_groups`) as often as it is called."""
        return [self.get_layer(f"transformer_layer_{group}") for group in self.config.layer_groups]

    def call(self, inputs, training=None, mask=None):
        self.check_inputs(inputs)
        if self._runs_in_plain_torch(inputs, training):
            from kbert.backend_speedups.torch_backbone import backbone_forward

            return backbone_forward(self, inputs, training=bool(training), compiled=self.torch_compiled)
        if self.torch_compiled and not keras.backend.is_keras_tensor(inputs["token_ids"]):
            raise ValueError("jit_compile=True on torch compiles the backbone's plain-torch pass, which does not "
                             "run here (KBERT_SPEEDUPS without torch_backbone, a quantized layer, a "
                             "keras.distribution, or in training rematerialized blocks or seeded dropout): "
                             "compile with jit_compile=False.")
        return super().call(inputs, training=training, mask=mask)

    def packed_outputs(self, inputs):
        """`{"sequence_output"}` at inference on packed rows (`kbert_core.packed_rows`): several texts end to end
        in a row, each text's tokens attending only to its own, with positions restarting at each text (from
        `position_offset` for RoBERTa's, as its rows alone would), so that each text's vectors are those of its
        own row. A call beside the functional graph, on the same layers (or `backbone_forward` on torch).

        Args:
            inputs: dict of int (rows, length) arrays: `token_ids`, `segment_ids`, and `sequence_ids` (the same
                id > 0 on the tokens of one text, contiguous; 0 on padding).

        Example:
        >>> import numpy as np
        >>> backbone = BertBackbone.from_preset("bert_tiny", num_layers=1)
        >>> ids = np.array([[2, 5, 3, 2, 6, 7, 3, 0]])
        >>> packed = backbone.packed_outputs({"token_ids": ids, "segment_ids": 0 * ids,
        ...                                   "sequence_ids": np.array([[1, 1, 1, 2, 2, 2, 2, 0]])})
        >>> alone = backbone({"token_ids": ids[:, 3:7], "segment_ids": 0 * ids[:, 3:7],
        ...                   "padding_mask": np.ones((1, 4), "int32")})
        >>> bool(np.allclose(ops.convert_to_numpy(packed["sequence_output"])[0, 3:7],
        ...                  ops.convert_to_numpy(alone["sequence_output"])[0], atol=1e-5))
        True
        """
        sequence_ids = ops.convert_to_tensor(inputs["sequence_ids"], "int32")
        token_ids, segment_ids = (ops.convert_to_tensor(inputs[key], "int32") for key in ("token_ids", "segment_ids"))
        real = ops.cast(sequence_ids > 0, "int32")
        self.check_inputs({"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": real})
        # padding (id 0) attends to padding: finite values, never read; a real token never sees another text's
        attention = ops.equal(sequence_ids[:, :, None], sequence_ids[:, None, :])
        length = ops.shape(sequence_ids)[1]
        earlier = ops.tril(ops.ones((length, length), "int32"))[None]
        position = ops.sum(ops.cast(attention, "int32") * earlier, axis=-1) - 1  # tokens of its text before it
        offset = self.position_offset
        position_ids = ops.where(real > 0, position + offset, max(offset - 1, 0))
        if self._runs_in_plain_torch({"token_ids": token_ids}, False):
            import torch

            from kbert.backend_speedups.torch_backbone import backbone_forward

            with torch.no_grad():  # inference only
                outputs = backbone_forward(self, {"token_ids": token_ids, "segment_ids": segment_ids,
                                                  "padding_mask": attention, "position_ids": position_ids},
                                           compiled=self.torch_compiled)
            return {"sequence_output": outputs["sequence_output"]}
        x = self.token_embedding(token_ids)
        if self.num_segments:
            x = x + self.get_layer("segment_embedding")(segment_ids)
        table = ops.convert_to_tensor(self.get_layer("position_embedding").embeddings)
        x = x + ops.cast(ops.take(table, position_ids, axis=0), x.dtype)
        x = self.get_layer("embeddings_layer_norm")(x)
        if self.embedding_dim is not None:
            x = self.get_layer("embeddings_projection")(x)
        for block in self.transformer_layers:
            x = block(x, padding_mask=attention)
        return {"sequence_output": x}

    def _runs_in_plain_torch(self, inputs, training):
        """Whether this call can skip the functional graph for `backbone_forward`'s torch
        calls: under PyTorch, with the speed-up `torch_backbone` on (`kbert.backend_speedups.active`), on
        tensors (not while a model is being built), with no layer quantized and no `keras.distribution` laying out the
        outputs; in training also with no block rematerialized (`remat`: the graph's blocks
        are what is recomputed) and unseeded dropout (a seed is the graph's Dropout layers')."""
        from kbert.backend_speedups import active

        if (not active("torch_backbone") or keras.backend.is_keras_tensor(inputs["token_ids"])
                or keras.distribution.distribution() is not None):
            return False
        layers = self._layers_of_call()  # their settings read at every call: quantize() and a dropout's seed can change
        if not training:
            return not self._any_quantized(layers)
        return not any(layer.quantization_mode or layer._remat_mode is not None
                       or isinstance(layer, keras.layers.Dropout) and layer.seed is not None for layer in layers)

    def _layers_of_call(self):
        """The backbone and all its layers; with the speed-up `torch_train_step`, gathered once while the model does
        not change (`kbert.backend_speedups.torch_train_step.gathered`)."""
        from kbert.backend_speedups import active

        if not active("torch_train_step"):
            return list(self._flatten_layers())
        from kbert.backend_speedups.torch_train_step import gathered

        return gathered(self, "layers", lambda: list(self._flatten_layers()))

    def _any_quantized(self, layers):
        """Whether a layer of `layers` (`_layers_of_call`) is quantized; with the speed-up `torch_train_step`, read
        once while the model does not change (quantizing a layer replaces its weights, which `changes()` counts)."""
        from kbert.backend_speedups import active

        if not active("torch_train_step"):
            return any(layer.quantization_mode for layer in layers)
        from kbert.backend_speedups.torch_train_step import gathered

        return gathered(self, "any_quantized", lambda: any(layer.quantization_mode for layer in layers))

    def check_inputs(self, inputs):
        """Refuses inputs that would silently give garbage (JAX clamps bad ids in a gather).

        The sequence length is checked whenever it is known; the id ranges whenever the
        values are in host memory (eager calls, `predict` on numpy); inside a compiled graph
        they are not yet, and on a GPU reading them would stall each step: the tokenizer, and
        `BertTask.fit`'s check of arrays of ids, are what guarantee them there.
        """
        missing = [key for key in INPUT_KEYS if key not in inputs]
        if missing:
            raise ValueError(f"BertBackbone inputs lack {missing}; it takes a dict of {INPUT_KEYS}.")
        length = inputs["token_ids"].shape[-1]
        if length is not None and length > self.max_sequence_length:
            raise ValueError(
                f"Sequence length {length} exceeds max_sequence_length="
                f"{self.max_sequence_length} (the model's learned positions); "
                "truncate or split the text."
            )
        for key, limit in (("token_ids", self.vocabulary_size), ("segment_ids", max(self.num_segments, 1))):
            values = _concrete_values(inputs[key])
            if values is not None and values.size and (values.min() < 0 or values.max() >= limit):
                bad = values[(values < 0) | (values >= limit)]
                if key == "segment_ids" and self.num_segments <= 1:
                    raise ValueError(
                        f"segment_ids must all be 0: this {self.family} model has no token types (num_segments="
                        f"{self.num_segments}); got {bad.size} other id(s), e.g. {int(bad.flat[0])}. Encode text "
                        "pairs as its tokenizer does, every segment id 0.")
                raise ValueError(
                    f"{key} must lie in [0, {limit}); got {bad.size} id(s) outside it, "
                    f"e.g. {int(bad.flat[0])}. Was the text tokenized with this model's vocabulary?"
                )

    def predict(self, x, *args, **kwargs):
        if isinstance(x, dict):
            self.check_inputs(x)
        return super().predict(x, *args, **kwargs)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": self._dtype_argument,
                **self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, **overrides):
        """The backbone of any model source (`kbert.saving.model_source` tells them apart), computing under the
        global dtype policy (e.g. "mixed_bfloat16"), also a saved backbone whose file names another.

        Args:
            preset: str, path or `kbert.saving.ModelSource`, one of:
                - a preset name from `kbert.PRESETS` (random weights);
                - "all_minilm_l6_v2", the real pretrained checkpoint;
                - a Hugging Face folder (`config.json`, `model.safetensors`) of BERT, RoBERTa, ALBERT,
                  ELECTRA or DistilBERT;
                - a kbert backbone folder written by `kbert.save_backbone` (e.g. by apps/pretrain.py);
                - a task run folder (`model.keras`, e.g. from apps/qa.py): its fine-tuned backbone,
                  without the task's head, to fine-tune further;
                - a `.keras` file of a backbone or a task model.
            **overrides: constructor arguments that replace a preset's or a checkpoint's (e.g. `dropout=0.0`);
                a saved backbone is loaded as saved, and refuses them (a ValueError).

        `BertTokenizer.from_preset` reads the tokenizer of the same sources.

        Example:
        >>> BertBackbone.from_preset("bert_tiny", num_layers=1).num_layers
        1
        """
        return model_source(preset).load_backbone(cls, **overrides)

    @classmethod
    def from_hf(cls, path, **overrides):
        """Loads a Hugging Face folder of BERT or its family (`kbert.config.FAMILIES`): `config.json` +
        `model.safetensors`, no torch.

        Args:
            path: folder of the checkpoint, or a `kbert.convert.HFCheckpoint` of it.
            **overrides: constructor arguments that replace the checkpoint's (e.g. `dropout=0.0`).
        """
        from kbert.convert import load_hf_weights, read_hf_config

        backbone = cls(**{**read_hf_config(path).to_dict(), **overrides})
        load_hf_weights(backbone, path)
        return backbone

    def export_to_transformers(self, path, tokenizer=None):
        """Writes this backbone as a Hugging Face folder of its family's base model (`BertModel`, `RobertaModel`,
        `AlbertModel`, `ElectraModel`, `DistilBertModel`: config.json, model.safetensors, and the `tokenizer`'s
        files if given) that `from_hf` and `transformers.AutoModel.from_pretrained` read back.

        Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> BertBackbone.from_preset("bert_tiny").export_to_transformers(folder)
        >>> BertBackbone.from_hf(folder).num_layers
        2
        """
        from kbert.convert import save_hf

        save_hf(self, path, tokenizer)


def _concrete_values(tensor):
    """The numpy values of `tensor`, or None while it is symbolic (jit, tf.function) or lives on an
    accelerator: reading a torch GPU tensor back copies it to the host and waits for the GPU, in
    every eager training step (`BertTask.fit` checks arrays of ids once, on the host, instead)."""
    if isinstance(tensor, np.ndarray):
        return tensor
    if keras.backend.is_keras_tensor(tensor) or getattr(getattr(tensor, "device", None), "type", "cpu") != "cpu":
        return None
    try:
        return ops.convert_to_numpy(tensor)
    except Exception:  # a tracer or graph tensor: no values until the graph runs
        return None
