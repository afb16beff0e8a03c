"""kbert.tasks.load_task: what `from_preset` loads (a preset's backbone with a new head, a run folder's task whole,
a Hugging Face checkpoint's head: tests/models/test_hf_heads.py)."""

import numpy as np
import pytest

from kbert.tasks import BertClassifier
from kbert.saving import model_source
from kbert.tasks.load_task import hf_head_arguments


def test_from_preset_with_an_unknown_name_lists_the_presets():
    with pytest.raises(FileNotFoundError, match="bert_tiny.*all_minilm_l6_v2"):
        BertClassifier.from_preset("bert_nano", num_classes=2)


def test_from_preset_of_a_run_folder_gives_the_task_back(tmp_path):
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, label_names=["neg", "pos"])
    model.save(tmp_path / "model.keras")
    model.preprocessor.tokenizer.save(tmp_path)
    again = BertClassifier.from_preset(tmp_path)
    assert again.label_names == ["neg", "pos"]
    np.testing.assert_allclose(again.predict(["fine"], verbose=0), model.predict(["fine"], verbose=0), atol=1e-6)
    assert BertClassifier.from_preset(tmp_path, sequence_length=16).preprocessor.sequence_length == 16
    other_head = BertClassifier.from_preset(tmp_path, num_classes=3)  # its backbone, a new head
    assert other_head.num_classes == 3


def test_a_preset_or_a_kbert_folder_has_no_hugging_face_head(tmp_path):
    assert hf_head_arguments(BertClassifier, model_source("bert_tiny"), {}) is None
    BertClassifier.from_preset("bert_tiny", num_classes=2).save(tmp_path / "model.keras")
    assert hf_head_arguments(BertClassifier, model_source(tmp_path), {}) is None  # a kbert model is there
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_clases' .*'num_classes'"):
        BertClassifier.from_preset("bert_tiny", num_clases=2)
