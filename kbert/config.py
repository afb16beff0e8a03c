"""`BertConfig`: the hyperparameters of a BERT encoder, the named presets, and kbert's defaults where nothing
else says: `DEFAULT_SEQUENCE_LENGTH` tokens per input (tokenizer, preprocessors, recipes, exports, a run that
recorded none) and `DEFAULT_BATCH_SIZE` examples per batch (a task's `fit`, `evaluate` and `predict`)."""

import dataclasses

DEFAULT_SEQUENCE_LENGTH = 128
DEFAULT_BATCH_SIZE = 32


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyperparameters of a BERT encoder, in Keras's words.

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        num_layers: int. Transformer blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Width of the residual stream.
        intermediate_dim: int. Width of the feed-forward layer (4 x hidden in BERT).
        max_sequence_length: int. Learned positions (`max_position_embeddings`).
        num_segments: int. Segment (token type) ids (`type_vocab_size`).
        dropout: float. Dropout on embeddings, attention probabilities and residuals.
        layer_norm_epsilon: float.
        initializer_range: float. Stddev of the truncated-normal initializer.

    BERT's GELU is the exact erf form; it is not a setting.

    Example:
    >>> BertConfig.from_dict({"num_layers": 2}).num_layers
    2
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

    def __post_init__(self):
        """Refuses a value no BERT can have, naming the field: a string or 0 where a count belongs
        (it failed later with a TypeError or a ZeroDivisionError), heads that do not divide the width."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type in (int, "int") and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"BertConfig.{field.name} must be a positive integer, not {value!r}.")
            if field.type in (float, "float") and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"BertConfig.{field.name} must be a number, not {value!r}.")
        if not 0 <= self.dropout < 1 or self.layer_norm_epsilon <= 0 or self.initializer_range < 0:
            raise ValueError(f"BertConfig: dropout must be in [0, 1), layer_norm_epsilon above 0 and initializer_range "
                             f"0 or more; got {self.dropout}, {self.layer_norm_epsilon}, {self.initializer_range}.")
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"BertConfig: hidden_dim {self.hidden_dim} does not divide into num_heads "
                             f"{self.num_heads} heads.")

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


def _preset(num_layers, hidden_dim, num_heads):
    return BertConfig(
        num_layers=num_layers,
        hidden_dim=hidden_dim,
        num_heads=num_heads,
        intermediate_dim=4 * hidden_dim,
    )


# The BERT family of Turc et al. (2019) and Devlin et al. (2019): random weights.
PRESETS = {
    "bert_tiny": _preset(2, 128, 2),
    "bert_mini": _preset(4, 256, 4),
    "bert_small": _preset(4, 512, 8),
    "bert_medium": _preset(8, 512, 8),
    "bert_base": _preset(12, 768, 12),
    "bert_large": _preset(24, 1024, 16),
}
