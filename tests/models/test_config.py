import pytest

from kbert import PRESETS, BertBackbone, BertConfig


def bert_parameter_count(c):
    """Devlin et al.'s architecture counted by hand: embeddings, blocks, pooler."""
    h, i = c.hidden_dim, c.intermediate_dim
    embeddings = (c.vocabulary_size + c.max_sequence_length + c.num_segments) * h + 2 * h
    attention = 4 * (h * h + h) + 2 * h
    feed_forward = (h * i + i) + (i * h + h) + 2 * h
    pooler = h * h + h
    return embeddings + c.num_layers * (attention + feed_forward) + pooler


@pytest.mark.parametrize("name", ["bert_tiny", "bert_mini", "bert_small", "bert_medium", "bert_base"])
def test_preset_parameter_count_matches_formula(name):
    assert BertBackbone.from_preset(name).count_params() == bert_parameter_count(PRESETS[name])


def test_paper_sizes():
    # BERT-base 110M and BERT-large 340M (Devlin et al., 2019, section 3).
    assert round(bert_parameter_count(PRESETS["bert_base"]) / 1e6) == 109
    assert round(bert_parameter_count(PRESETS["bert_large"]) / 1e6) == 335


def test_presets_follow_the_family_shape():
    shapes = {name: (c.num_layers, c.hidden_dim, c.num_heads) for name, c in PRESETS.items()}
    assert shapes == {
        "bert_tiny": (2, 128, 2), "bert_mini": (4, 256, 4), "bert_small": (4, 512, 8),
        "bert_medium": (8, 512, 8), "bert_base": (12, 768, 12), "bert_large": (24, 1024, 16),
    }
    for c in PRESETS.values():
        assert (c.intermediate_dim, c.vocabulary_size, c.max_sequence_length) == (4 * c.hidden_dim, 30522, 512)
        assert (c.layer_norm_epsilon, c.initializer_range, c.num_segments) == (1e-12, 0.02, 2)


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
])
def test_values_no_bert_can_have_are_refused_naming_the_field(changes, message):
    import re

    with pytest.raises(ValueError, match=re.escape(message)):
        BertConfig(**{**PRESETS["bert_tiny"].to_dict(), **changes})
