"""kbert.tasks.load_task: what `from_preset` loads (a preset's backbone with a new head, a run folder's task whole,
a Hugging Face checkpoint's head: tests/models/test_hf_heads.py)."""

import numpy as np
import pytest

from kbert.tasks import BertClassifier
from kbert.saving import model_source
from kbert.tasks.load_task import hf_head_arguments, preprocessor_settings


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


def test_from_preset_takes_every_setting_of_the_tasks_preprocessor(tmp_path):
    """Issue 55: doc_stride and train_windows were refused, and the README built a second preprocessor by hand."""
    from kbert.tasks import BertPretrainer, BertQuestionAnswerer

    model = BertClassifier.from_preset("bert_tiny", num_classes=2, doc_stride=64, train_windows="all")
    assert (model.preprocessor.doc_stride, model.preprocessor.train_windows) == (64, "all")
    qa = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=64, doc_stride=16, max_question_length=8)
    assert (qa.preprocessor.doc_stride, qa.preprocessor.max_question_length) == (16, 8)
    assert BertPretrainer.from_preset("bert_tiny", next_sentence=False, mask_rate=0.2).preprocessor.mask_rate == 0.2
    model.save(tmp_path / "model.keras")
    model.preprocessor.tokenizer.save(tmp_path)
    again = BertClassifier.from_preset(tmp_path, doc_stride=32, sequence_length=64)  # a saved model's, changed
    assert (again.preprocessor.doc_stride, again.preprocessor.train_windows, again.preprocessor.sequence_length) == (
        32, "all", 64)
    with pytest.raises(ValueError, match=r"got a preprocessor and preprocessor settings \['doc_stride'\]: give the "
                                         "settings to the preprocessor, or give no preprocessor"):
        BertClassifier.from_preset("bert_tiny", num_classes=2, preprocessor=model.preprocessor, doc_stride=8)
    with pytest.raises(TypeError, match="unexpected keyword argument 'doc_strid' .*'doc_stride'"):
        BertClassifier.from_preset("bert_tiny", num_classes=2, doc_strid=8)
    with pytest.raises(ValueError, match="train_windows must be one of"):
        BertClassifier.from_preset("bert_tiny", num_classes=2, train_windows="every")


def test_no_preprocessor_setting_shares_a_name_with_its_tasks_arguments():
    """A name both took would go to the preprocessor alone."""
    import inspect

    from kbert.tasks import BertPretrainer, BertQuestionAnswerer, BertSentenceEncoder, BertTokenClassifier

    for task in (BertClassifier, BertTokenClassifier, BertQuestionAnswerer, BertSentenceEncoder, BertPretrainer):
        task_arguments = set(inspect.signature(task.__init__).parameters)
        assert not task_arguments & set(preprocessor_settings(task)), task.__name__
