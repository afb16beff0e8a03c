"""`BertConfig`: the hyperparameters of a BERT encoder (or RoBERTa's, ALBERT's, ELECTRA's, DistilBERT's), the
named presets, and kbert's defaults where nothing else says: `DEFAULT_SEQUENCE_LENGTH` tokens per input (tokenizer,
preprocessors, recipes, exports, a run that recorded none) and `DEFAULT_BATCH_SIZE` examples per batch (a task's
`fit`, `evaluate` and `predict`)."""

import dataclasses

DEFAULT_SEQUENCE_LENGTH = 128
DEFAULT_BATCH_SIZE = 32


# The families of BERT's encoder kbert builds, by Hugging Face's `model_type`.
FAMILIES = ("bert", "roberta", "albert", "electra", "distilbert")
# GELU's exact erf form, and its tanh approximation (Hugging Face's gelu_new, gelu_pytorch_tanh: ALBERT's).
ACTIVATIONS = ("gelu", "gelu_approximate")
_COUNTS_FROM_ZERO = ("num_segments", "position_offset")


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyperparameters of a BERT encoder or one of its family, in Keras's words.

    Args:
        vocabulary_size: int. Number of token ids.
        num_layers: int. Transformer blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Width of the residual stream.
        intermediate_dim: int. Width of the feed-forward layer (4 x hidden in BERT).
        max_sequence_length: int. Learned positions (`max_position_embeddings`).
        num_segments: int. Segment (token type) ids (`type_vocab_size`); 0 for none (DistilBERT: the
            `segment_ids` input is still taken, and must be 0).
        dropout: float. Dropout on embeddings, attention probabilities and residuals.
        layer_norm_epsilon: float.
        initializer_range: float. Stddev of the truncated-normal initializer.
        family: str. One of `FAMILIES`: the Hugging Face `model_type` whose config and weight names
            the model is read from and written to; it changes no computation by itself.
        embedding_dim: int or None. Width of the token, segment and position embeddings and their
            layer norm, projected to `hidden_dim` by a Dense layer (`embeddings_projection`: ALBERT's
            `embedding_hidden_mapping_in`, ELECTRA's `embeddings_project`); None: `hidden_dim`, no projection.
        num_layer_groups: int or None. None: each block has its own weights; k: the `num_layers` blocks share
            k blocks of weights, block i those of group `i * k // num_layers` (ALBERT's `num_hidden_groups`).
        position_offset: int. 0: position i is row i of the table. k > 0 (RoBERTa: 2): real tokens count
            positions from k, padding takes row k - 1, and the table has `max_sequence_length + k` rows.
        pooler: bool. Whether the backbone has BERT's tanh pooler and a `pooled_output` (DistilBERT and
            ELECTRA have none).
        activation: str. One of `ACTIVATIONS`: the feed-forward's GELU, exact ("gelu") or its tanh
            approximation ("gelu_approximate").

    Example:
    >>> BertConfig.from_dict({"num_layers": 2}).num_layers
    2
    >>> PRESETS["albert_base"].embedding_dim, PRESETS["albert_base"].num_layer_groups
    (128, 1)
    """

    vocabulary_size: int = 30522
    num_layers: int = 12
    num_heads: int = 12
    hidden_dim: int = 768
    intermediate_dim: int = 3072
    max_sequence_length: int = 512
    num_segments: int = 2
    dropout: float = 0.1
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02
    family: str = "bert"
    embedding_dim: int | None = None
    num_layer_groups: int | None = None
    position_offset: int = 0
    pooler: bool = True
    activation: str = "gelu"

    def __post_init__(self):
        """Refuses a value no BERT can have, naming the field: a string or 0 where a count belongs
        (it failed later with a TypeError or a ZeroDivisionError), heads that do not divide the width,
        a family or activation kbert does not know, more layer groups than layers."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type == int | None and value is None:
                continue
            if field.type in (int, int | None):
                least = 0 if field.name in _COUNTS_FROM_ZERO else 1
                if isinstance(value, bool) or not isinstance(value, int) or value < least:
                    kind = "a non-negative integer" if least == 0 else "a positive integer"
                    raise ValueError(f"BertConfig.{field.name} must be {kind}"
                                     f"{' or None' if field.type != int else ''}, not {value!r}.")
            if field.type is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"BertConfig.{field.name} must be a number, not {value!r}.")
            if field.type is bool and not isinstance(value, bool):
                raise ValueError(f"BertConfig.{field.name} must be True or False, not {value!r}.")
        for name, choices in (("family", FAMILIES), ("activation", ACTIVATIONS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"BertConfig.{name} must be one of {', '.join(choices)}, not "
                                 f"{getattr(self, name)!r}.")
        if not 0 <= self.dropout < 1 or self.layer_norm_epsilon <= 0 or self.initializer_range < 0:
            raise ValueError(f"BertConfig: dropout must be in [0, 1), layer_norm_epsilon above 0 and initializer_range "
                             f"0 or more; got {self.dropout}, {self.layer_norm_epsilon}, {self.initializer_range}.")
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"BertConfig: hidden_dim {self.hidden_dim} does not divide into num_heads "
                             f"{self.num_heads} heads.")
        if (self.num_layer_groups or 0) > self.num_layers:
            raise ValueError(f"BertConfig: num_layer_groups {self.num_layer_groups} exceeds num_layers "
                             f"{self.num_layers}; each group is at least one block.")

    @property
    def layer_groups(self):
        """The group of weights each of the `num_layers` blocks uses, in order (`num_layer_groups`).

        Example:
        >>> BertConfig(num_layers=5, num_layer_groups=2).layer_groups
        [0, 0, 0, 1, 1]
        """
        groups = self.num_layer_groups or self.num_layers
        return [i * groups // self.num_layers for i in range(self.num_layers)]

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """Builds a config; refuses keys it does not know (a typo must not pass silently)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(
                f"Unknown BertConfig field(s) {unknown}; expected some of {sorted(names)}."
            )
        return cls(**values)


def _preset(num_layers, hidden_dim, num_heads, **settings):
    return BertConfig(
        num_layers=num_layers,
        hidden_dim=hidden_dim,
        num_heads=num_heads,
        intermediate_dim=4 * hidden_dim,
        **settings,
    )


# Random weights: the BERT sizes of Turc et al. (2019) and Devlin et al. (2019), and one of each family's, shaped
# as its Hugging Face checkpoint (roberta-base, albert-base-v2, google/electra-small-discriminator,
# distilbert-base-uncased).
PRESETS = {
    "bert_tiny": _preset(2, 128, 2),
    "bert_mini": _preset(4, 256, 4),
    "bert_small": _preset(4, 512, 8),
    "bert_medium": _preset(8, 512, 8),
    "bert_base": _preset(12, 768, 12),
    "bert_large": _preset(24, 1024, 16),
    "roberta_base": _preset(12, 768, 12, family="roberta", vocabulary_size=50265, num_segments=1,
                            position_offset=2, layer_norm_epsilon=1e-5),
    "albert_base": _preset(12, 768, 12, family="albert", vocabulary_size=30000, embedding_dim=128,
                           num_layer_groups=1, activation="gelu_approximate", dropout=0.0),
    "electra_small": _preset(12, 256, 4, family="electra", embedding_dim=128, pooler=False),
    "distilbert_base": _preset(6, 768, 12, family="distilbert", num_segments=0, pooler=False),
}
