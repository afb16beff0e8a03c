"""BERT's family (RoBERTa, ALBERT, ELECTRA, DistilBERT) from Hugging Face folders and back, against `transformers`.

`transformers` makes a tiny random base model of each family in a process of its own (`hf_families_reference.py`);
kbert's `BertBackbone.from_preset(folder)` must give its outputs within 1e-5 (float32) at every real position of
padded singles and pairs; kbert's backbones exported with `export_to_transformers` must load in
`AutoModel.from_pretrained` (no weight missing or unused) with kbert's outputs, and read back weight for weight.
`python -m tests.models.test_hf_families` prints the largest differences (for the parity report).
"""

import importlib.util
import json
import re

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from kbert import BertBackbone
from tests.conftest import run_python
from tests.models import hf_families_reference as reference

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is a test-only dependency")

FAMILIES = reference.FAMILIES
BASE_CLASSES = {"bert": "BertModel", "roberta": "RobertaModel", "albert": "AlbertModel", "electra": "ElectraModel",
                "distilbert": "DistilBertModel"}
TOLERANCE = 1e-5  # float32


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf_families")
    run_python(reference.__file__, "make", folder)
    return folder


def kbert_inputs(family):
    ids, types, mask = reference.inputs(family)
    return {"token_ids": ids, "segment_ids": types, "padding_mask": mask}


def kbert_outputs(backbone, family):
    """`backbone`'s outputs on the reference inputs, by Hugging Face's names."""
    encoded = backbone(kbert_inputs(family))
    names = {"sequence_output": "last_hidden_state", "pooled_output": "pooler_output"}
    return {names[key]: keras.ops.convert_to_numpy(value) for key, value in encoded.items()}


def differences(kbert_arrays, hf_arrays, family):
    """{output: largest absolute difference}, the sequence at real positions only; both sides must have the
    same outputs."""
    assert set(kbert_arrays) == {key for key in ("last_hidden_state", "pooler_output") if key in hf_arrays}
    real = reference.inputs(family)[2].astype(bool)
    found = {"last_hidden_state": float(np.abs(kbert_arrays["last_hidden_state"][real]
                                               - hf_arrays["last_hidden_state"][real]).max())}
    if "pooler_output" in kbert_arrays:
        found["pooler_output"] = float(np.abs(kbert_arrays["pooler_output"] - hf_arrays["pooler_output"]).max())
    return found


@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_checkpoint_gives_transformers_outputs(checkpoints, family):
    backbone = BertBackbone.from_preset(checkpoints / family)
    assert backbone.family == family
    hf = np.load(checkpoints / f"{family}.npz")
    assert ("pooler_output" in hf) == (family in ("bert", "roberta", "albert"))
    found = differences(kbert_outputs(backbone, family), hf, family)
    assert max(found.values()) <= TOLERANCE, found
    assert np.abs(hf["last_hidden_state"]).mean() > 0.1  # not trivially close


def test_each_family_is_read_with_its_settings(checkpoints):
    settings = {family: {key: value for key, value in BertBackbone.from_preset(checkpoints / family).get_config()
                         .items() if key in ("embedding_dim", "num_layer_groups", "position_offset", "num_segments",
                                             "pooler", "activation", "max_sequence_length", "layer_norm_epsilon")}
                for family in FAMILIES}
    bert = {"embedding_dim": None, "num_layer_groups": None, "position_offset": 0, "num_segments": 2,
            "pooler": True, "activation": "gelu", "max_sequence_length": 16, "layer_norm_epsilon": 1e-12}
    assert settings == {
        "bert": bert,
        "roberta": {**bert, "position_offset": 2, "num_segments": 1, "layer_norm_epsilon": 1e-5},
        "albert": {**bert, "embedding_dim": 16, "num_layer_groups": 2, "activation": "gelu_approximate"},
        "electra": {**bert, "embedding_dim": 16, "pooler": False},
        "distilbert": {**bert, "num_segments": 0, "pooler": False},
    }


def test_albert_shares_its_groups_among_the_blocks(checkpoints):
    """3 blocks on 2 groups, as Hugging Face's `int(i / (num_hidden_layers / num_hidden_groups))`: 0, 0, 1; one
    block's weights in the model once, called twice."""
    backbone = BertBackbone.from_preset(checkpoints / "albert")
    assert [layer.name for layer in backbone.transformer_layers] == ["transformer_layer_0"] * 2 + [
        "transformer_layer_1"]
    assert len({id(v) for v in backbone.weights}) == len(backbone.weights)
    assert backbone.count_params() == sum(int(np.prod(v.shape)) for v in load_file(
        str(checkpoints / "albert" / "model.safetensors")).values())


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="weights only: runs once")
def test_distilberts_sinusoidal_positions_load_as_its_table(checkpoints):
    table = keras.ops.convert_to_numpy(BertBackbone.from_preset(checkpoints / "distilbert")
                                       .get_layer("position_embedding").embeddings)
    angles = np.arange(16)[:, None] / np.power(10000, 2 * (np.arange(32) // 2) / 32)[None, :]
    np.testing.assert_allclose(table[:, 0::2], np.sin(angles[:, 0::2]), atol=1e-6)
    np.testing.assert_allclose(table[:, 1::2], np.cos(angles[:, 1::2]), atol=1e-6)


def randomized(backbone, seed=0):
    rng = np.random.default_rng(seed)
    for variable in backbone.weights:  # non-zero biases and LayerNorms, so that a dropped one shows
        noise = 0.2 * rng.normal(size=variable.shape)
        variable.assign((keras.ops.convert_to_numpy(variable) + noise).astype("float32"))
    return backbone


def test_kbert_backbones_load_in_transformers_with_the_same_outputs_and_come_back_exactly(checkpoints, tmp_path):
    backbones = {family: randomized(BertBackbone.from_preset(checkpoints / family), seed)
                 for seed, family in enumerate(FAMILIES)}
    for family, backbone in backbones.items():
        backbone.export_to_transformers(tmp_path / family)
    run_python(reference.__file__, "run", *[tmp_path / family for family in FAMILIES])
    for family, backbone in backbones.items():
        hf = np.load(tmp_path / family / "hf_outputs.npz")
        assert (str(hf["model_class"]), list(hf["missing"]), list(hf["unexpected"])) == (
            BASE_CLASSES[family], [], []), family
        found = differences(kbert_outputs(backbone, family), hf, family)
        assert max(found.values()) <= TOLERANCE, (family, found)
        exported, original = (load_file(str(folder / family / "model.safetensors")) for folder in (tmp_path,
                                                                                                    checkpoints))
        assert set(exported) == set(original), family  # Hugging Face's own names, all of them
        config = json.loads((tmp_path / family / "config.json").read_text())
        assert (config["model_type"], config["architectures"]) == (family, [BASE_CLASSES[family]])
        back = BertBackbone.from_preset(tmp_path / family)
        assert back.get_config() == {**backbone.get_config(), "name": back.name}
        for mine, theirs in zip(backbone.weights, back.weights, strict=True):
            assert mine.path.split("/", 1)[1] == theirs.path.split("/", 1)[1]
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(mine), keras.ops.convert_to_numpy(theirs))


# --- bad input: one clear line each ----------------------------------------------------------------------------

def copy_of(checkpoints, family, tmp_path, **config_changes):
    folder = tmp_path / family
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        (folder / name).write_bytes((checkpoints / family / name).read_bytes())
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **config_changes}))
    return folder


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="files only: runs once")
@pytest.mark.parametrize("family, changes, message", [
    ("roberta", {"model_type": "xlm-roberta"}, "model_type='xlm-roberta' is not supported; kbert reads bert, "
                                               "roberta, albert, electra, distilbert."),
    ("bert", {"model_type": "deberta-v2"}, "model_type='deberta-v2' is not supported; kbert reads bert, "),
    ("bert", {"model_type": "modernbert"}, "model_type='modernbert' is not supported; kbert reads bert, "),
    ("albert", {"inner_group_num": 2}, "inner_group_num=2 is not supported; kbert needs 1."),
    ("distilbert", {"activation": "relu"}, "activation='relu' is not supported; kbert computes gelu, gelu_new"),
    ("electra", {"summary_typo": "first"}, "unknown config field(s) ['summary_typo']"),
    ("roberta", {"pad_token_id": None}, "pad_token_id=None: RoBERTa's positions count from it"),
    ("albert", {"architectures": ["BertModel"]}, "architectures=['BertModel'] is not supported for model_type "
                                                 "'albert'; kbert reads one of ['AlbertModel', "
                                                 "'AlbertForSequenceClassification', 'AlbertForTokenClassification', "
                                                 "'AlbertForQuestionAnswering', 'AlbertForMaskedLM']."),
])
def test_a_folder_kbert_does_not_read_is_named_in_one_line(checkpoints, tmp_path, family, changes, message):
    folder = copy_of(checkpoints, family, tmp_path, **changes)
    with pytest.raises(ValueError, match="^" + re.escape(f"{folder / 'config.json'}: {message}")):
        BertBackbone.from_preset(folder)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="files only: runs once")
def test_a_weight_of_another_family_is_named(checkpoints, tmp_path):
    folder = copy_of(checkpoints, "electra", tmp_path)
    weights = load_file(str(folder / "model.safetensors"))
    weights["pooler.dense.weight"] = np.zeros((32, 32), "float32")
    save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises(ValueError, match=re.escape("weights ['pooler.dense.weight'] are not part of a electra "
                                                   "encoder")):
        BertBackbone.from_preset(folder)


def test_a_roberta_pair_given_token_types_is_refused_in_one_line(checkpoints):
    backbone = BertBackbone.from_preset(checkpoints / "roberta")
    inputs = kbert_inputs("roberta")
    inputs["segment_ids"] = kbert_inputs("bert")["segment_ids"]  # BERT's pairs: the second text's are 1
    with pytest.raises(ValueError, match=re.escape(
            "segment_ids must all be 0: this roberta model has no token types (num_segments=1); got 10 other id(s), "
            "e.g. 1. Encode text pairs as its tokenizer does, every segment id 0.")):
        backbone(inputs)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="settings only: runs once")
@pytest.mark.parametrize("preset, overrides, message", [
    ("distilbert_base", {"num_segments": 2}, "DistilBertModel cannot hold this backbone: it needs num_segments 0 "
                                             "(not 2)."),
    ("albert_base", {"embedding_dim": None}, "AlbertModel cannot hold this backbone: it needs embedding_dim set "
                                             "(not None)."),
    ("electra_small", {"embedding_dim": 256}, "ElectraModel cannot hold this backbone: it needs embedding_dim None or "
                                              "unlike hidden_dim (not 256)."),
    ("roberta_base", {"position_offset": 0}, "RobertaModel cannot hold this backbone: it needs position_offset 1 or "
                                             "more (not 0)."),
    ("bert_tiny", {"pooler": False}, "BertModel cannot hold this backbone: it needs pooler True (not False)."),
])
def test_a_backbone_its_familys_class_cannot_hold_is_not_written(tmp_path, preset, overrides, message):
    backbone = BertBackbone.from_preset(preset, num_layers=1, **overrides)
    with pytest.raises(ValueError, match=re.escape(f"Hugging Face's {message}")):
        backbone.export_to_transformers(tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


if __name__ == "__main__":  # the parity report: python -m tests.models.test_hf_families (each KERAS_BACKEND)
    import pathlib
    import tempfile

    folder = pathlib.Path(tempfile.mkdtemp())
    run_python(reference.__file__, "make", folder)
    for family in FAMILIES:
        found = differences(kbert_outputs(BertBackbone.from_preset(folder / family), family),
                            np.load(folder / f"{family}.npz"), family)
        print(keras.config.backend(), family, " ".join(f"{key} {value:.2e}" for key, value in found.items()))
