import pytest

from kbert import PRESETS, BertBackbone, BertConfig


def bert_parameter_count(c):
    """Devlin et al.'s architecture counted by hand, with the family's settings: embeddings (`embedding_dim`
    wide, RoBERTa's offset rows, no segment table for DistilBERT), their projection, the blocks with weights of
    their own (ALBERT's groups), the pooler (none in ELECTRA and DistilBERT)."""
    h, i, e = c.hidden_dim, c.intermediate_dim, c.embedding_dim or c.hidden_dim
    embeddings = (c.vocabulary_size + c.max_sequence_length + c.position_offset + c.num_segments) * e + 2 * e
    projection = e * h + h if c.embedding_dim else 0
    attention = 4 * (h * h + h) + 2 * h
    feed_forward = (h * i + i) + (i * h + h) + 2 * h
    pooler = h * h + h if c.pooler else 0
    return embeddings + projection + (c.num_layer_groups or c.num_layers) * (attention + feed_forward) + pooler


@pytest.mark.parametrize("name, overrides", [(name, {}) for name in ["bert_tiny", "bert_mini", "bert_small",
                                                                      "bert_medium", "bert_base", "albert_base",
                                                                      "electra_small", "distilbert_base"]]
                         + [("roberta_base", {"num_layers": 2}), ("albert_base", {"num_layer_groups": 2})])
def test_preset_parameter_count_matches_formula(name, overrides):
    config = BertConfig(**{**PRESETS[name].to_dict(), **overrides})
    assert BertBackbone.from_preset(name, **overrides).count_params() == bert_parameter_count(config)


def test_paper_sizes():
    # BERT-base 110M and BERT-large 340M (Devlin et al., 2019, section 3).
    assert round(bert_parameter_count(PRESETS["bert_base"]) / 1e6) == 109
    assert round(bert_parameter_count(PRESETS["bert_large"]) / 1e6) == 335
    # RoBERTa-base 125M (Liu et al., 2019), ALBERT-base 12M against BERT-base's 108M (Lan et al., 2020, table 1),
    # ELECTRA-Small 14M (Clark et al., 2020; its discriminator 13.5M), DistilBERT 66M (Sanh et al., 2019).
    sizes = {name: round(bert_parameter_count(PRESETS[name]) / 1e6, 1)
             for name in ("roberta_base", "albert_base", "electra_small", "distilbert_base")}
    assert sizes == {"roberta_base": 124.6, "albert_base": 11.7, "electra_small": 13.5, "distilbert_base": 66.4}
    assert bert_parameter_count(PRESETS["bert_base"]) > 9 * bert_parameter_count(PRESETS["albert_base"])


BERT_PRESETS = [name for name in PRESETS if name.startswith("bert_")]


def test_presets_follow_the_family_shape():
    shapes = {name: (c.num_layers, c.hidden_dim, c.num_heads) for name, c in PRESETS.items()}
    assert shapes == {
        "bert_tiny": (2, 128, 2), "bert_mini": (4, 256, 4), "bert_small": (4, 512, 8),
        "bert_medium": (8, 512, 8), "bert_base": (12, 768, 12), "bert_large": (24, 1024, 16),
        "roberta_base": (12, 768, 12), "albert_base": (12, 768, 12), "electra_small": (12, 256, 4),
        "distilbert_base": (6, 768, 12),
    }
    for c in map(PRESETS.get, BERT_PRESETS):
        assert (c.intermediate_dim, c.vocabulary_size, c.max_sequence_length) == (4 * c.hidden_dim, 30522, 512)
        assert (c.layer_norm_epsilon, c.initializer_range, c.num_segments) == (1e-12, 0.02, 2)
        assert (c.family, c.embedding_dim, c.num_layer_groups, c.position_offset, c.pooler, c.activation) == (
            "bert", None, None, 0, True, "gelu")


def test_each_familys_preset_has_its_settings():
    """As each family's Hugging Face checkpoint (roberta-base, albert-base-v2, electra-small-discriminator,
    distilbert-base-uncased): what differs from BERT's, and only that."""
    bert = BertConfig().to_dict()
    differences = {name: {key: value for key, value in PRESETS[name].to_dict().items() if bert[key] != value}
                   for name in PRESETS if name not in BERT_PRESETS}
    assert differences == {
        "roberta_base": {"family": "roberta", "vocabulary_size": 50265, "num_segments": 1, "position_offset": 2,
                         "layer_norm_epsilon": 1e-5},
        "albert_base": {"family": "albert", "vocabulary_size": 30000, "embedding_dim": 128, "num_layer_groups": 1,
                        "activation": "gelu_approximate", "dropout": 0.0},
        "electra_small": {"family": "electra", "hidden_dim": 256, "num_heads": 4,
                          "intermediate_dim": 1024, "embedding_dim": 128, "pooler": False},
        "distilbert_base": {"family": "distilbert", "num_layers": 6, "num_segments": 0, "pooler": False},
    }


def test_config_refuses_unknown_fields():
    with pytest.raises(ValueError, match="hidden_size"):
        BertConfig.from_dict({"hidden_size": 10})


def test_unknown_preset_lists_the_choices():
    with pytest.raises(FileNotFoundError, match=r"'bert_huge' is neither a preset \(.*bert_tiny.*all_minilm_l6_v2\)"):
        BertBackbone.from_preset("bert_huge")  # as every source: one loader, one message


@pytest.mark.parametrize("changes, message", [
    ({"num_layers": "2"}, "BertConfig.num_layers must be a positive integer, not '2'"),
    ({"hidden_dim": 0}, "BertConfig.hidden_dim must be a positive integer, not 0"),
    ({"num_heads": True}, "BertConfig.num_heads must be a positive integer, not True"),
    ({"dropout": "0.1"}, "BertConfig.dropout must be a number, not '0.1'"),
    ({"dropout": 1.0}, "dropout must be in [0, 1)"),
    ({"num_heads": 3}, "hidden_dim 128 does not divide into num_heads 3 heads"),
    ({"family": "deberta"}, "BertConfig.family must be one of bert, roberta, albert, electra, distilbert, not "
                            "'deberta'"),
    ({"activation": "relu"}, "BertConfig.activation must be one of gelu, gelu_approximate, not 'relu'"),
    ({"embedding_dim": 0}, "BertConfig.embedding_dim must be a positive integer or None, not 0"),
    ({"num_layer_groups": 3}, "BertConfig: num_layer_groups 3 exceeds num_layers 2"),
    ({"num_segments": -1}, "BertConfig.num_segments must be a non-negative integer, not -1"),
    ({"position_offset": "2"}, "BertConfig.position_offset must be a non-negative integer, not '2'"),
    ({"pooler": "no"}, "BertConfig.pooler must be True or False, not 'no'"),
])
def test_values_no_bert_can_have_are_refused_naming_the_field(changes, message):
    import re

    with pytest.raises(ValueError, match=re.escape(message)):
        BertConfig(**{**PRESETS["bert_tiny"].to_dict(), **changes})
