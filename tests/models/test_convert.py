"""Loading Hugging Face folders: every way a checkpoint can be wrong gets a clear error."""

import json
import re
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from kbert import BertBackbone
from kbert.convert import read_hf_config


@pytest.fixture
def checkpoint(tmp_path, minilm_dir):
    """A writable copy of the real checkpoint's config and weights."""
    for name in ("config.json", "model.safetensors"):
        shutil.copy(minilm_dir / name, tmp_path / name)
    return tmp_path


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def edit_weights(folder, edit):
    weights = load_file(str(folder / "model.safetensors"))
    edit(weights)
    save_file(weights, str(folder / "model.safetensors"))


def test_reads_the_real_config(minilm_dir):
    config = read_hf_config(minilm_dir)
    assert (config.num_layers, config.hidden_dim, config.num_heads, config.vocabulary_size) == (6, 384, 12, 30522)


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        BertBackbone.from_hf(tmp_path / "nowhere")


def test_unknown_config_field_names_file_and_field(checkpoint):
    edit_config(checkpoint, rotary_dim=64)
    with pytest.raises(ValueError, match=r"config\.json.*rotary_dim"):
        BertBackbone.from_hf(checkpoint)


def test_other_activation_is_refused(checkpoint):
    edit_config(checkpoint, hidden_act="relu")
    with pytest.raises(ValueError, match=r"config\.json: hidden_act='relu' is not supported; kbert computes gelu, "
                                         "gelu_new, gelu_pytorch_tanh"):
        BertBackbone.from_hf(checkpoint)


def test_the_tanh_gelu_is_read_as_the_approximate_activation(checkpoint):
    edit_config(checkpoint, hidden_act="gelu_pytorch_tanh")
    assert BertBackbone.from_hf(checkpoint).activation == "gelu_approximate"


def test_wrong_shape_names_the_weight(checkpoint):
    def shrink(weights):
        weights["pooler.dense.bias"] = weights["pooler.dense.bias"][:10]
    edit_weights(checkpoint, shrink)
    with pytest.raises(ValueError, match="pooled_dense/bias has shape"):
        BertBackbone.from_hf(checkpoint)


def test_missing_weight_names_file_and_weight(checkpoint):
    edit_weights(checkpoint, lambda weights: weights.pop("encoder.layer.3.output.dense.weight"))
    with pytest.raises(ValueError, match=r"model\.safetensors.*encoder\.layer\.3\.output\.dense\.weight"):
        BertBackbone.from_hf(checkpoint)


def test_extra_layer_is_not_dropped_silently(checkpoint):
    def add_layer(weights):
        weights["encoder.layer.6.output.dense.bias"] = np.zeros(384, "float32")
    edit_weights(checkpoint, add_layer)
    with pytest.raises(ValueError, match=r"encoder\.layer\.6"):
        BertBackbone.from_hf(checkpoint)


def test_pickled_checkpoint_is_refused(checkpoint):
    (checkpoint / "model.safetensors").rename(checkpoint / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError, match="pytorch_model.bin.*run code"):
        BertBackbone.from_hf(checkpoint)


def test_bert_prefixed_checkpoints_load(checkpoint, minilm_dir):
    edit_weights(checkpoint, lambda w: w.update({f"bert.{k}": w.pop(k) for k in list(w)}))
    loaded = BertBackbone.from_hf(checkpoint)
    reference = BertBackbone.from_hf(minilm_dir)
    np.testing.assert_array_equal(loaded.get_weights()[-1], reference.get_weights()[-1])


@pytest.mark.parametrize("changes, message", [
    ({"num_attention_heads": "12"}, "BertConfig.num_heads must be a positive integer, not '12'"),
    ({"num_attention_heads": 0}, "BertConfig.num_heads must be a positive integer, not 0"),
    ({"num_attention_heads": 5}, "BertConfig: hidden_dim 384 does not divide into num_heads 5 heads"),
])
def test_a_config_no_bert_can_have_names_file_and_field(checkpoint, changes, message):
    """Issue 43: a string count or 0 heads ended in a TypeError or a ZeroDivisionError."""
    edit_config(checkpoint, **changes)
    with pytest.raises(ValueError, match=re.escape(f"config.json: {message}")):
        BertBackbone.from_hf(checkpoint)


def test_non_finite_or_truncated_weights_are_refused_naming_the_file(checkpoint):
    def poison(weights):
        weights["encoder.layer.1.attention.self.query.weight"][0, 0] = np.nan
    edit_weights(checkpoint, poison)
    with pytest.raises(ValueError, match=r"model\.safetensors: 1 weight\(s\) hold NaN or infinite values, e\.g\. "
                                         r"\['encoder\.layer\.1\.attention\.self\.query\.weight'\]"):
        BertBackbone.from_hf(checkpoint)
    data = (checkpoint / "model.safetensors").read_bytes()
    (checkpoint / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"model\.safetensors: not a readable safetensors file"):
        BertBackbone.from_hf(checkpoint)
