"""kbert.export.saved_model on a hidden-8 classifier: the folder it writes, whole or not at all.

What the exported graphs compute is in test_classifier_export.py and test_token_tasks_export.py.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from kbert.export import ExportSpec, export_saved_model
from tests.export.conftest import SMALL_LABELS, TENSORFLOW_ONLY

pytestmark = TENSORFLOW_ONLY
SPEC = ExportSpec("classifier", 8, label_names=SMALL_LABELS)


@pytest.fixture(scope="module")
def exported(small_classifier, tokenizer, tmp_path_factory):
    out = tmp_path_factory.mktemp("saved_model") / "saved"
    assert export_saved_model(small_classifier, tokenizer, SPEC, str(out)) == out
    return out


def test_the_folder_holds_the_model_its_tokenizer_and_export_json(exported, tokenizer):
    assert {"saved_model.pb", "variables", "vocab.txt", "tokenizer_config.json", "export.json"} <= {
        p.name for p in exported.iterdir()}
    assert (exported / "vocab.txt").read_text().splitlines() == tokenizer.vocabulary()
    export = json.loads((exported / "export.json").read_text())
    assert export["format"] == "saved_model" and export["label_names"] == list(SMALL_LABELS)
    assert {key: export[key] for key in ("model_kind", "max_length", "padding", "num_texts")} == {
        "model_kind": "classifier", "max_length": 8, "padding": "max_length", "num_texts": 1}
    ids = ["int32", [None, 8]]
    assert export["signatures"] == {
        "serving_default": {"inputs": {"texts": ["string", [None]]},
                            "outputs": {"label": ["string", [None]], "label_id": ["int32", [None]],
                                        "probability": ["float32", [None]], "probabilities": ["float32", [None, 2]],
                                        "truncated": ["bool", [None]], "empty": ["bool", [None]]}},
        "token_ids": {"inputs": {"token_ids": ids, "segment_ids": ids, "padding_mask": ids},
                      "outputs": {"logits": ["float32", [None, 2]], "probabilities": ["float32", [None, 2]]}}}
    assert sorted(tf.saved_model.load(str(exported)).signatures) == ["serving_default", "token_ids"]


def test_saved_model_stores_each_weight_once(exported, small_classifier):
    """`ExportArchive.track(model)` would store every weight a second time (keras-team/keras#23553)."""
    stored = tf.train.list_variables(str(exported / "variables" / "variables"))
    assert sum(int(np.prod(shape)) for name, shape in stored if name != "_CHECKPOINTABLE_OBJECT_GRAPH") \
        == small_classifier.count_params()


def test_interrupted_export_leaves_nothing(small_classifier, tokenizer, tmp_path, monkeypatch):
    def interrupt(folder):
        raise KeyboardInterrupt

    monkeypatch.setattr(tokenizer, "save", interrupt)
    with pytest.raises(KeyboardInterrupt):
        export_saved_model(small_classifier, tokenizer, SPEC, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_killed_exports_leftovers_are_cleaned_by_the_next(small_classifier, tokenizer, tmp_path):
    """Issue 43: a kill -9 (which no `except` sees) left a 25 MB .NAME.partial-* folder that the next export kept."""
    (tmp_path / ".out.partial-x1").mkdir()
    (tmp_path / ".out.partial-x1" / "variables.data").write_bytes(b"0" * 1000)
    export_saved_model(small_classifier, tokenizer, SPEC, tmp_path / "out")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]
