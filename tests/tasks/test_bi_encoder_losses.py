"""The bi-encoder losses against sentence-transformers' own `compute_loss_from_embeddings` on the same embeddings
(computed in a torch process: tests/tasks/bi_encoder_reference.py; once, on TensorFlow: on every backend the losses
equal their definitions in numpy, tests/tasks/test_bert_sentence_encoder.py), and their configs."""

import importlib.util

import keras
import numpy as np
import pytest

from kbert.tasks.bi_encoder_losses import CosineSimilarityLoss, MultipleNegativesRankingLoss
from tests.conftest import TESTS, run_python


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                    reason="sentence-transformers (the reference) is not installed: pip install -e .[test]")
@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="the reference once; definitions on every backend")
def test_losses_match_sentence_transformers(tmp_path):
    rng = np.random.default_rng(0)
    pairs, triplets = rng.normal(size=(2, 5, 8)).astype("float32"), rng.normal(size=(3, 4, 8)).astype("float32")
    scores = rng.uniform(size=5).astype("float32")
    np.savez(tmp_path / "in.npz", pairs=pairs, triplets=triplets, scores=scores)
    run_python(TESTS / "tasks" / "bi_encoder_reference.py", tmp_path / "in.npz", tmp_path / "out.npz")
    expected = np.load(tmp_path / "out.npz")

    def rows(embeddings):  # (texts, examples, dim) -> each example's texts in consecutive rows, as the model gives
        return embeddings.transpose(1, 0, 2).reshape(-1, embeddings.shape[-1])

    loss = lambda function, y, embeddings: float(function(y, rows(embeddings)))  # noqa: E731
    np.testing.assert_allclose(loss(CosineSimilarityLoss(), scores, pairs), expected["cosine"], rtol=1e-5)
    ranking = MultipleNegativesRankingLoss()
    np.testing.assert_allclose(loss(ranking, np.zeros(5), pairs), expected["ranking_pairs"], rtol=1e-5)
    np.testing.assert_allclose(loss(ranking, np.zeros(4), triplets), expected["ranking_triplets"], rtol=1e-5)


def test_the_ranking_loss_keeps_its_scale():
    embeddings = np.array([[1.0, 0.0], [1.0, 0.2], [0.0, 1.0], [0.3, 1.0]])  # 2 (anchor, positive) pairs
    value = lambda loss: float(loss(np.zeros(2), embeddings))  # noqa: E731
    again = MultipleNegativesRankingLoss.from_config(MultipleNegativesRankingLoss(scale=5.0).get_config())
    assert again.scale == 5.0 and value(again) == pytest.approx(value(MultipleNegativesRankingLoss(scale=5.0)))
    assert abs(value(again) - value(MultipleNegativesRankingLoss())) > 1e-3  # the scale is used
