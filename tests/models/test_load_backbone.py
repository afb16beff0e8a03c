"""load_backbone: a backbone and its tokenizer from a preset, a kbert folder or a task run, under the global policy."""

import numpy as np
import pytest

from kbert import BertBackbone, load_backbone
from kbert.optimizers import bfloat16_compute
from kbert.saving import BACKBONE_FILE
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from tests.conftest import TINY


def compute_dtype(backbone):
    return backbone.get_layer("transformer_layer_0").compute_dtype


def write_tiny_vocab(folder):
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]]))


def test_load_backbone_follows_the_global_policy(tmp_path):
    saved = BertBackbone(**TINY, dtype="float32")  # as kbert files named the policy before
    saved.save(tmp_path / BACKBONE_FILE)
    write_tiny_vocab(tmp_path)
    with bfloat16_compute():
        backbone, _ = load_backbone(tmp_path)
    assert compute_dtype(backbone) == "bfloat16"
    for ours, theirs in zip(backbone.get_weights(), saved.get_weights()):
        np.testing.assert_array_equal(ours, theirs)


def test_load_backbone_takes_the_backbone_of_a_fine_tuned_run(tmp_path):
    fine_tuned = BertQuestionAnswerer(BertBackbone(**TINY))
    fine_tuned.save(tmp_path / "model.keras")
    write_tiny_vocab(tmp_path)
    backbone, tokenizer = load_backbone(tmp_path)
    assert isinstance(backbone, BertBackbone) and tokenizer.vocabulary_size == TINY["vocabulary_size"]
    assert len(backbone.weights) == len(fine_tuned.backbone.weights) < len(fine_tuned.weights)
    for ours, theirs in zip(backbone.get_weights(), fine_tuned.backbone.get_weights()):
        np.testing.assert_array_equal(ours, theirs)
    pooler = {w.path for w in backbone.pooler.weights}
    assert not pooler & {w.path for w in fine_tuned.trainable_weights}  # QA never reads it
    assert pooler <= {w.path for w in backbone.trainable_weights}  # a classifier fine-tuned from it will


def test_a_preset_takes_overrides_and_minilms_vocabulary():
    backbone, tokenizer = load_backbone("bert_tiny", dropout=0.0, num_layers=1)
    assert (backbone.num_layers, backbone.dropout, backbone.hidden_dim) == (1, 0.0, 128)
    assert tokenizer.vocabulary_size == backbone.vocabulary_size == 30522
    assert tokenizer.token_to_id("[CLS]") == 101  # MiniLM's uncased vocabulary


def test_a_saved_backbone_is_loaded_as_saved(tmp_path):
    BertBackbone(**TINY).save(tmp_path / BACKBONE_FILE)
    write_tiny_vocab(tmp_path)
    with pytest.raises(ValueError, match="a saved backbone is loaded as saved; got overrides {'dropout': 0.0}"):
        load_backbone(tmp_path, dropout=0.0)


def test_a_folder_of_no_known_kind_names_the_kinds_and_presets(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    for init in (tmp_path, tmp_path / "missing", "bert_nano"):
        with pytest.raises(FileNotFoundError, match=r"is neither a preset \(.*bert_tiny.*all_minilm_l6_v2\), "
                                                    "a Hugging Face folder with config.json, a kbert folder "
                                                    "with backbone.keras or model.keras, nor a .keras file"):
            load_backbone(init)
