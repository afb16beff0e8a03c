import numpy as np
import pytest

from kbert import BertBackbone, BertClassifier
from kbert.models.compute_dtype import with_compute_dtype
from tests.conftest import TINY

TOKENS = {"token_ids": np.array([[2, 7, 9, 11, 3], [2, 8, 3, 0, 0]], "int32"),
          "segment_ids": np.zeros((2, 5), "int32"), "padding_mask": np.array([[1] * 5, [1, 1, 1, 0, 0]], "int32")}


def test_backbone_copy_computes_in_bfloat16_with_the_current_weights():
    backbone = BertBackbone(**TINY, dropout=0.0)
    copy = with_compute_dtype(backbone, "bfloat16")
    assert copy.get_layer("token_embedding").dtype_policy.name == "bfloat16"
    assert str(copy.get_layer("token_embedding").weights[0].dtype) == "bfloat16"  # stored, not cast per call
    assert backbone.get_layer("token_embedding").dtype_policy.name == "float32"
    assert str(copy.get_layer("token_embedding").compute_dtype) == "bfloat16"
    expected = np.asarray(backbone.predict_on_batch(TOKENS)["sequence_output"], "float32")
    got = np.asarray(copy.predict_on_batch(TOKENS)["sequence_output"], "float32")
    assert not np.array_equal(got, expected)
    np.testing.assert_allclose(got, expected, atol=0.05)  # bfloat16 keeps 8 bits of mantissa
    backbone.set_weights([w * 0 for w in backbone.get_weights()])
    assert with_compute_dtype(backbone, "bfloat16") is copy
    assert not np.asarray(copy.get_layer("token_embedding").weights[0]).any()  # refreshed
    assert with_compute_dtype(backbone, "float32") is backbone
    with pytest.raises(ValueError, match="dtype must be one of"):
        with_compute_dtype(backbone, "float16")


def test_task_predicts_in_bfloat16_with_a_float32_head():
    model = BertClassifier(BertBackbone(**TINY, dropout=0.0), num_classes=3, compile=False)
    copy = with_compute_dtype(model, "bfloat16")
    assert copy.backbone.get_layer("token_embedding").dtype_policy.name == "bfloat16"
    assert copy.get_layer("logits").compute_dtype == "float32"
    np.testing.assert_allclose(model.predict(TOKENS, verbose=0, dtype="bfloat16"),
                               model.predict(TOKENS, verbose=0), atol=0.05)
