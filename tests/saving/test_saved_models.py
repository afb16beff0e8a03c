"""The Keras files kbert folders hold: a saved backbone read back, a vocabulary that belongs to its model, the
global dtype policy, and a file naming a class kbert does not define."""

import json
import re
import zipfile

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.optimizers import mixed_compute
from kbert.saving import BACKBONE_FILE
from kbert.saving.saved_models import check_vocabulary, load_keras_file, save_backbone, under_global_policy
from kbert.text import BertTokenizer
from tests.conftest import TINY

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]]


def test_a_saved_backbone_loads_back_with_its_tokenizer(tmp_path):
    backbone = BertBackbone(**TINY)
    save_backbone(tmp_path, backbone, BertTokenizer(VOCABULARY))
    assert (tmp_path / BACKBONE_FILE).is_file() and (tmp_path / "vocab.txt").is_file()
    loaded = load_keras_file(tmp_path / BACKBONE_FILE)
    assert isinstance(loaded, BertBackbone)
    for ours, theirs in zip(loaded.get_weights(), backbone.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert BertTokenizer.from_hf(tmp_path).vocabulary() == VOCABULARY


def test_a_vocabulary_of_another_size_than_the_model_is_refused():
    with pytest.raises(ValueError, match="src has 50 tokens but the model's vocabulary_size is 60"):
        check_vocabulary(BertBackbone(**{**TINY, "vocabulary_size": 60}), BertTokenizer(VOCABULARY), "src")
    check_vocabulary(BertBackbone(**TINY), BertTokenizer(VOCABULARY), "src")  # the same size: no error


def test_under_global_policy_rebuilds_a_backbone_that_fixed_another_policy():
    fixed = BertBackbone(**TINY, dtype="float32")
    assert under_global_policy(fixed) is fixed  # float32 is the global policy
    with mixed_compute():
        rebuilt = under_global_policy(fixed)
        follows = BertBackbone(**TINY)
        assert under_global_policy(follows) is follows
    assert rebuilt.get_layer("transformer_layer_0").compute_dtype == "bfloat16"
    for ours, theirs in zip(rebuilt.get_weights(), fixed.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)


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
        load_keras_file(tmp_path / "model.keras")
