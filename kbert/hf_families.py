"""The Hugging Face names of BERT's family: for each `model_type` kbert reads (`kbert.config.FAMILIES`), the keys
of its config.json and the names of its encoder's weights, both ways. `kbert.convert` reads and writes
checkpoints with them; nothing else knows these names.
"""

import collections

from kbert.config import FAMILIES

# Hugging Face's `hidden_act` (DistilBERT's `activation`) -> `BertConfig.activation`; and the name written back.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate"}
_WRITTEN_ACTIVATIONS = {"gelu": "gelu", "gelu_approximate": "gelu_new"}
# config.json's entry for a kbert task's settings that Hugging Face has no key for (`kbert.convert._kbert_settings`).
KBERT_SETTINGS_KEY = "kbert"
# Keys of every family's config.json that do not change the encoder's function: bookkeeping, generation, heads.
_IGNORED_KEYS = {
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype",
    "gradient_checkpointing", "use_cache", "pad_token_id", "bos_token_id", "eos_token_id",
    "attention_probs_dropout_prob", "classifier_dropout", "id2label", "label2id",
    "output_attentions", "output_hidden_states", "return_dict", "is_decoder",
    "add_cross_attention", "chunk_size_feed_forward", "tie_word_embeddings",
    "problem_type", "finetuning_task", "tokenizer_class", "prefix", "task_specific_params", KBERT_SETTINGS_KEY,
}
_BERT_KEYS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
    "hidden_dropout_prob": "dropout",
    "layer_norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range",
    "hidden_act": "activation",
}
_DISTILBERT_KEYS = {
    "vocab_size": "vocabulary_size", "n_layers": "num_layers", "n_heads": "num_heads", "dim": "hidden_dim",
    "hidden_dim": "intermediate_dim", "max_position_embeddings": "max_sequence_length", "dropout": "dropout",
    "initializer_range": "initializer_range", "activation": "activation",
}
# Keys a config.json may leave out, each read as Hugging Face's config class defaults it.
_OPTIONAL_BERT_KEYS = {"hidden_dropout_prob": 0.1, "layer_norm_eps": 1e-12, "initializer_range": 0.02,
                       "hidden_act": "gelu"}
# A BERT block's weights, by its Hugging Face names: (query, key, value), attention output, its layer norm,
# intermediate, output, its layer norm (kbert: `_BLOCK_PATHS`).
_BERT_BLOCK = (("attention.self.query", "attention.self.key", "attention.self.value"), "attention.output.dense",
               "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
_BLOCK_PATHS = ("self_attention/qkv_dense", "self_attention/output_dense", "attention_layer_norm",
                "intermediate_dense", "output_dense", "output_layer_norm")


class Family(collections.namedtuple("Family", [
        "model_type", "class_prefix", "keys", "optional", "ignored", "fixed", "blocks", "block_names", "projection",
        "pooler", "classifier_dropout"])):
    """One family's Hugging Face names.

    Attributes:
        model_type: str. config.json's `model_type`, and `BertConfig.family`.
        class_prefix: str. Of its classes' names: `{class_prefix}Model`, `{class_prefix}ForMaskedLM`, ...
        keys: {config.json key: BertConfig field}, the values copied (the activation through `HF_ACTIVATIONS`).
        optional: {config.json key: the value Hugging Face's config class takes when config.json has none}.
        ignored: more config.json keys of this family that do not change the encoder.
        fixed: {BertConfig field: value} this family always has.
        blocks: str. Prefix of block (or group) i's weights, with `{}` for i.
        block_names: the names of a block's weights after that prefix, in `_BERT_BLOCK`'s order.
        projection: str or None. Name of the embeddings' projection to the hidden width.
        pooler: str or None. Name of the pooler's dense layer.
        classifier_dropout: str. The config.json key of its classification heads' dropout.
    """

    @property
    def base_class(self):
        """The Hugging Face class of the encoder alone, e.g. "RobertaModel"."""
        return f"{self.class_prefix}Model"

    @property
    def weight_prefix(self):
        """What its task classes put before the encoder's weight names, e.g. "roberta."."""
        return f"{self.model_type}."


_FAMILIES = {
    "bert": Family("bert", "Bert", _BERT_KEYS, _OPTIONAL_BERT_KEYS, set(), {}, "encoder.layer.{}", _BERT_BLOCK,
                   None, "pooler.dense", "classifier_dropout"),
    "roberta": Family("roberta", "Roberta", _BERT_KEYS, {**_OPTIONAL_BERT_KEYS, "pad_token_id": 1}, set(), {},
                      "encoder.layer.{}", _BERT_BLOCK, None, "pooler.dense", "classifier_dropout"),
    "albert": Family(
        "albert", "Albert", {**_BERT_KEYS, "embedding_size": "embedding_dim", "num_hidden_groups": "num_layer_groups"},
        {**_OPTIONAL_BERT_KEYS, "hidden_act": "gelu_new", "num_hidden_groups": 1, "inner_group_num": 1},
        {"classifier_dropout_prob", "down_scale_factor", "gap_size", "net_structure_type", "num_memory_blocks"}, {},
        "encoder.albert_layer_groups.{}.albert_layers.0",
        (("attention.query", "attention.key", "attention.value"), "attention.dense", "attention.LayerNorm", "ffn",
         "ffn_output", "full_layer_layer_norm"), "encoder.embedding_hidden_mapping_in", "pooler",
        "classifier_dropout_prob"),
    "electra": Family("electra", "Electra", {**_BERT_KEYS, "embedding_size": "embedding_dim"}, _OPTIONAL_BERT_KEYS,
                      {"summary_type", "summary_use_proj", "summary_activation", "summary_last_dropout"},
                      {"pooler": False}, "encoder.layer.{}", _BERT_BLOCK, "embeddings_project", None,
                      "classifier_dropout"),
    "distilbert": Family(
        "distilbert", "DistilBert", _DISTILBERT_KEYS,
        {"dropout": 0.1, "initializer_range": 0.02, "activation": "gelu", "sinusoidal_pos_embds": False},
        {"attention_dropout", "qa_dropout", "seq_classif_dropout", "tie_weights_"},
        {"num_segments": 0, "layer_norm_epsilon": 1e-12, "pooler": False}, "transformer.layer.{}",
        (("attention.q_lin", "attention.k_lin", "attention.v_lin"), "attention.out_lin", "sa_layer_norm",
         "ffn.lin1", "ffn.lin2", "output_layer_norm"), None, None, "seq_classif_dropout"),
}


def family_of(values, file):
    """The `Family` of a config.json's `values` (BERT's when it names no `model_type`); another model_type
    is refused in one line naming it and the families kbert reads.

    Example:
    >>> family_of({"model_type": "albert"}, "config.json").base_class
    'AlbertModel'
    >>> family_of({"model_type": "deberta-v2"}, "config.json")
    Traceback (most recent call last):
    ValueError: config.json: model_type='deberta-v2' is not supported; kbert reads bert, roberta, albert, electra,
    distilbert.
    """
    model_type = values.get("model_type", "bert")
    if model_type not in _FAMILIES:
        raise ValueError(f"{file}: model_type={model_type!r} is not supported; kbert reads {', '.join(FAMILIES)}.")
    return _FAMILIES[model_type]


def config_fields(values, file):
    """The `kbert.BertConfig` fields of a config.json's `values`, in any family's keys.

    Unknown keys and values kbert does not compute (another activation or position type, ALBERT's
    `inner_group_num` above 1) raise, naming the file, rather than building a model that computes something else.

    Example:
    >>> values = {"model_type": "roberta", "vocab_size": 100, "num_hidden_layers": 2, "num_attention_heads": 2,
    ...           "hidden_size": 8, "intermediate_size": 16, "max_position_embeddings": 66, "type_vocab_size": 1}
    >>> fields = config_fields(values, "config.json")
    >>> fields["max_sequence_length"], fields["position_offset"]
    (64, 2)
    """
    family = family_of(values, file)
    known = set(family.keys) | set(family.optional) | family.ignored | _IGNORED_KEYS | {"model_type"}
    if family.model_type != "distilbert":
        known.add("position_embedding_type")
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{file}: unknown config field(s) {unknown}; kbert does not know what they change.")
    missing = sorted(set(family.keys) - set(values) - set(family.optional))
    if missing:
        raise ValueError(f"{file}: missing config field(s) {missing}.")
    values = {**family.optional, **values}
    for key, expected in (("position_embedding_type", "absolute"), ("inner_group_num", 1)):
        if key in values and values[key] != expected:
            raise ValueError(f"{file}: {key}={values[key]!r} is not supported; kbert needs {expected!r}.")
    fields = {field: values[key] for key, field in family.keys.items()}
    activation_key = next(key for key, field in family.keys.items() if field == "activation")
    if fields["activation"] not in HF_ACTIVATIONS:
        raise ValueError(f"{file}: {activation_key}={fields['activation']!r} is not supported; kbert computes "
                         f"{', '.join(HF_ACTIVATIONS)}.")
    fields.update(family=family.model_type, activation=HF_ACTIVATIONS[fields["activation"]], **family.fixed)
    if family.model_type == "roberta":  # positions from the padding id + 1, padding at the padding id
        if isinstance(values["pad_token_id"], bool) or not isinstance(values["pad_token_id"], int) \
                or values["pad_token_id"] < 0:
            raise ValueError(f"{file}: pad_token_id={values['pad_token_id']!r}: RoBERTa's positions count from it; "
                             "kbert needs an integer 0 or more.")
        fields["position_offset"] = values["pad_token_id"] + 1
        fields["max_sequence_length"] -= fields["position_offset"]
    if family.model_type == "electra" and fields["embedding_dim"] == fields["hidden_dim"]:
        fields["embedding_dim"] = None  # ELECTRA projects only a narrower embedding
    return fields


def hf_config_values(config):
    """The config.json keys (`model_type` among them) of a `kbert.BertConfig` in its family's names:
    `config_fields` backwards. A setting the family's Hugging Face classes cannot hold (`check_writable`)
    raises a ValueError.

    Example:
    >>> from kbert.config import PRESETS
    >>> values = hf_config_values(PRESETS["albert_base"])
    >>> values["embedding_size"], values["num_hidden_groups"], values["hidden_act"]
    (128, 1, 'gelu_new')
    """
    check_writable(config)
    family = _FAMILIES[config.family]
    fields = config.to_dict()
    fields["activation"] = _WRITTEN_ACTIVATIONS[fields["activation"]]
    if family.model_type == "electra":
        fields["embedding_dim"] = config.embedding_dim or config.hidden_dim
    values = {"model_type": family.model_type, **{key: fields[field] for key, field in family.keys.items()}}
    if family.model_type == "distilbert":
        return {**values, "attention_dropout": config.dropout, "sinusoidal_pos_embds": False, "pad_token_id": 0}
    values.update(attention_probs_dropout_prob=config.dropout, pad_token_id=max(config.position_offset - 1, 0))
    if family.model_type == "roberta":
        values["max_position_embeddings"] += config.position_offset
    if family.model_type == "albert":
        values["inner_group_num"] = 1
    else:
        values["position_embedding_type"] = "absolute"
    return values


def check_writable(config):
    """Raises a ValueError, naming the settings, unless the Hugging Face classes of `config.family` can hold
    `config` (e.g. a DistilBERT has no token types; ALBERT always projects its embedding and shares blocks).

    Example:
    >>> from kbert.config import BertConfig
    >>> check_writable(BertConfig(family="distilbert", num_segments=0, pooler=False))
    >>> check_writable(BertConfig(family="distilbert"))
    Traceback (most recent call last):
    ValueError: Hugging Face's DistilBertModel cannot hold this backbone: it needs pooler False (not True),
    num_segments 0 (not 2).
    """
    c = config
    rules = {"embedding_dim": ("None", c.embedding_dim is None),
             "num_layer_groups": ("None", c.num_layer_groups is None),
             "position_offset": ("0", c.position_offset == 0), "pooler": ("True", c.pooler),
             "num_segments": ("1 or more", c.num_segments >= 1)}  # BERT's, and the others' but where they differ
    rules.update({
        "bert": {},
        "roberta": {"position_offset": ("1 or more", c.position_offset >= 1)},
        "albert": {"embedding_dim": ("set", c.embedding_dim is not None),
                   "num_layer_groups": ("set", c.num_layer_groups is not None)},
        "electra": {"embedding_dim": ("None or unlike hidden_dim", c.embedding_dim != c.hidden_dim),
                    "pooler": ("False", not c.pooler)},
        "distilbert": {"num_segments": ("0", c.num_segments == 0), "pooler": ("False", not c.pooler),
                       "layer_norm_epsilon": ("1e-12", c.layer_norm_epsilon == 1e-12)},
    }[c.family])
    wrong = [f"{field} {wanted} (not {getattr(c, field)!r})" for field, (wanted, held) in rules.items() if not held]
    if wrong:
        raise ValueError(f"Hugging Face's {_FAMILIES[c.family].base_class} cannot hold this backbone: it needs "
                         f"{', '.join(wrong)}.")


def encoder_weights(config, pooler=True):
    """`(Hugging Face name, kbert path, kind)` of each part of `config`'s encoder in its family's names, for
    both directions; `pooler=False` leaves out the pooler (a token or masked-LM checkpoint has none).

    Kinds: "table" (an embedding), "norm" (LayerNorm: weight, bias <-> gamma, beta), "dense"
    (weight, transposed as torch stores (out, in), and bias) and "qkv" (the query, key and value
    denses, a tuple of three names <-> one fused `qkv_dense`). Blocks that share weights (ALBERT's groups) come
    once, as kbert's `transformer_layer_{group}`.

    Example:
    >>> from kbert.config import PRESETS
    >>> [name for name, _, _ in encoder_weights(PRESETS["distilbert_base"])][2:4]
    ['embeddings.LayerNorm', ('transformer.layer.0.attention.q_lin', 'transformer.layer.0.attention.k_lin',
    'transformer.layer.0.attention.v_lin')]
    """
    family = _FAMILIES[config.family]
    parts = [("embeddings.word_embeddings", "token_embedding", "table")]
    if config.num_segments:
        parts.append(("embeddings.token_type_embeddings", "segment_embedding", "table"))
    parts += [("embeddings.position_embeddings", "position_embedding", "table"),
              ("embeddings.LayerNorm", "embeddings_layer_norm", "norm")]
    if config.embedding_dim is not None:
        parts.append((family.projection, "embeddings_projection", "dense"))
    if pooler and config.pooler:
        parts.append((family.pooler, "pooled_dense", "dense"))
    for i in range(config.num_layer_groups or config.num_layers):
        hf, kb = family.blocks.format(i), f"transformer_layer_{i}"
        for names, path in zip(family.block_names, _BLOCK_PATHS):
            kind = "qkv" if isinstance(names, tuple) else "norm" if path.endswith("layer_norm") else "dense"
            parts.append((tuple(f"{hf}.{name}" for name in names) if kind == "qkv" else f"{hf}.{names}",
                          f"{kb}/{path}", kind))
    return parts
