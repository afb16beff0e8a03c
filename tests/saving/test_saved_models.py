"""What a run starts from and what kbert folders hold: presets, saved models, tokenizers, old run folders."""

import json
import re
import zipfile

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.optimizers import bfloat16_compute
from kbert.saving import BACKBONE_FILE, MODEL_FILE
from kbert.saving.saved_models import (check_vocabulary, load_run, load_saved_model, load_tokenizer, save_backbone,
                                       under_global_policy, with_preprocessor)
from kbert.tasks import BertQuestionAnswerer, BertQuestionAnswererPreprocessor
from kbert.text import BertTokenizer
from tests.conftest import TINY

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]]


def test_presets_and_hugging_face_folders_hold_no_saved_model(tmp_path):
    assert load_saved_model("bert_tiny") is None
    (tmp_path / "config.json").write_text("{}")  # a Hugging Face folder: not a kbert model
    assert load_saved_model(tmp_path) is None
    with pytest.raises(FileNotFoundError, match="is neither a preset"):
        load_saved_model(tmp_path / "missing")


def test_a_saved_backbone_loads_back_with_its_tokenizer(tmp_path):
    backbone = BertBackbone(**TINY)
    save_backbone(tmp_path, backbone, BertTokenizer(VOCABULARY))
    assert (tmp_path / BACKBONE_FILE).is_file() and (tmp_path / "vocab.txt").is_file()
    loaded = load_saved_model(tmp_path)
    assert isinstance(loaded, BertBackbone)
    for ours, theirs in zip(loaded.get_weights(), backbone.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert load_tokenizer(tmp_path, loaded).vocabulary() == VOCABULARY


def test_a_vocabulary_of_another_size_than_the_model_is_refused(tmp_path):
    (tmp_path / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY[:-1]))
    with pytest.raises(ValueError, match=r"vocab.txt has 49 tokens but the model's vocabulary_size is 50"):
        load_tokenizer(tmp_path, BertBackbone(**TINY))
    with pytest.raises(ValueError, match="src has 50 tokens but the model's vocabulary_size is 60"):
        check_vocabulary(BertBackbone(**{**TINY, "vocabulary_size": 60}), BertTokenizer(VOCABULARY), "src")


def test_under_global_policy_rebuilds_a_backbone_that_fixed_another_policy():
    fixed = BertBackbone(**TINY, dtype="float32")
    assert under_global_policy(fixed) is fixed  # float32 is the global policy
    with bfloat16_compute():
        rebuilt = under_global_policy(fixed)
        follows = BertBackbone(**TINY)
        assert under_global_policy(follows) is follows
    assert rebuilt.get_layer("transformer_layer_0").compute_dtype == "bfloat16"
    for ours, theirs in zip(rebuilt.get_weights(), fixed.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_an_old_task_run_gets_its_preprocessor_from_the_folder(tmp_path):
    """A task saved without preprocessor: vocab.txt, max_length and doc_stride from metrics.json."""
    BertQuestionAnswerer(BertBackbone(**TINY)).save(tmp_path / MODEL_FILE)
    BertTokenizer(VOCABULARY).save(tmp_path)
    (tmp_path / "metrics.json").write_text(json.dumps({"max_length": 32, "doc_stride": 7, "f1": 0.5}))
    model, tokenizer, max_length = load_run(tmp_path)
    assert isinstance(model.preprocessor, BertQuestionAnswererPreprocessor)
    assert (max_length, model.preprocessor.doc_stride, model.preprocessor.max_question_length) == (32, 7, 64)
    assert tokenizer.vocabulary() == VOCABULARY
    (tmp_path / "metrics.json").unlink()
    again = load_saved_model(tmp_path)
    assert again.preprocessor.sequence_length == BertQuestionAnswerer.default_sequence_length == 384
    backbone = BertBackbone(**TINY)
    assert with_preprocessor(backbone, tmp_path) is backbone


def test_load_run_of_a_keras_file_and_of_nothing(tmp_path):
    BertBackbone(**TINY).save(tmp_path / "b.keras")
    BertTokenizer(VOCABULARY).save(tmp_path)
    model, tokenizer, max_length = load_run(tmp_path / "b.keras")
    assert isinstance(model, BertBackbone) and max_length == 128 and tokenizer.vocabulary_size == 50
    with pytest.raises(FileNotFoundError, match="model.keras does not exist: give a run folder written by training"):
        load_run(tmp_path / "empty")


def with_config(source, out, edit):
    """Copies the `.keras` file `source` to `out`, its config.json changed by `edit(config)`."""
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(out, "w") as copy:
        for item in archive.infolist():
            data = archive.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                edit(config)
                data = json.dumps(config)
            copy.writestr(item, data)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="configs only: runs once")
@pytest.mark.parametrize("edit, name, field", [
    (lambda c: c.update(class_name="BertClassifer", registered_name="kbert>BertClassifer"), "BertClassifer",
     "class_name"),
    (lambda c: c["config"]["backbone"].update(class_name="RobertaBackbone", registered_name="kbert>RobertaBackbone"),
     "RobertaBackbone", "config.backbone.class_name"),
])
def test_a_keras_file_naming_an_unknown_class_is_refused_naming_it(tmp_path, edit, name, field):
    """Issue 55: a .keras file whose config names a class kbert does not define (another program's, a newer kbert's,
    an edit) ended in Keras's internal TypeError; one line names the file, the class and where the config has it."""
    from kbert.tasks import BertClassifier

    BertClassifier(BertBackbone(**TINY), 2).save(tmp_path / "saved.keras")
    with_config(tmp_path / "saved.keras", tmp_path / "model.keras", edit)
    with pytest.raises(ValueError, match="^" + re.escape(
            f"{tmp_path / 'model.keras'}: its config.json names the class {name!r} (field {field}), which neither "
            f"kbert nor Keras defines")):
        load_run(tmp_path / "model.keras")
