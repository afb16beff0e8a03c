"""`BertClassifier.rank` against Sentence Transformers' `CrossEncoder.rank` on the same one-label head."""

import json

import numpy as np
import pytest

from kbert.tasks.bert_classifier import BertClassifier
from tests.conftest import ONCE_ON_TORCH, TESTS, run_python

DOCUMENTS = ["A man is playing a guitar on stage.", "The stock market fell sharply today.",
             "Someone performs music for a crowd.", "A cat sleeps on the sofa.", "The band played until midnight."]
CASES = [{"query": "Who is making music?", "documents": DOCUMENTS, "top_k": None},
         {"query": "What happened to shares?", "documents": DOCUMENTS, "top_k": 2}]


@pytest.fixture(scope="module")
def cross_encoder_reference(minilm_dir, tmp_path_factory):
    """A random one-label head on all-MiniLM-L6-v2 and `CrossEncoder.rank`'s answers (`cross_encoder_reference.py`)."""
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is a test-only dependency")
    folder = tmp_path_factory.mktemp("cross_encoder")
    (folder / "cases.json").write_text(json.dumps(CASES))
    run_python(TESTS / "tasks" / "cross_encoder_reference.py", minilm_dir, folder / "model", folder / "cases.json",
               folder / "out.json")
    return folder / "model", json.loads((folder / "out.json").read_text())


@ONCE_ON_TORCH  # the pair logits' parity is tested on every backend; this is their order
def test_rank_orders_as_sentence_transformers_cross_encoder(cross_encoder_reference):
    """The same documents in the same order, cut at top_k, with their texts; Sentence Transformers' score is the
    sigmoid of kbert's (the model's own output)."""
    folder, expected = cross_encoder_reference
    model = BertClassifier.from_preset(folder)
    assert model.regression
    for case, want in zip(CASES, expected, strict=True):
        got = model.rank(case["query"], case["documents"], top_k=case["top_k"], return_documents=True)
        assert [(hit["corpus_id"], hit["text"]) for hit in got] == [(hit["corpus_id"], hit["text"]) for hit in want]
        np.testing.assert_allclose(1 / (1 + np.exp(-np.array([hit["score"] for hit in got]))),
                                   [hit["score"] for hit in want], atol=1e-5)
        assert np.diff([hit["score"] for hit in want]).max() < -1e-4  # no order that float noise could decide
    assert [sorted(hit) for hit in model.rank("music", DOCUMENTS[:2])] == [["corpus_id", "score"]] * 2


@ONCE_ON_TORCH
def test_rank_refuses_what_it_cannot_order():
    with pytest.raises(ValueError, match="this classifier gives 2 classes; use predict"):
        BertClassifier.from_preset("bert_tiny", num_classes=2).rank("a film", ["a good film"])
    regressor = BertClassifier.from_preset("bert_tiny", num_classes=1)
    with pytest.raises(TypeError, match="one query, a string; got list"):
        regressor.rank(["a film"], ["a good film"])
    with pytest.raises(TypeError, match=r"documents\[1\] is None"):
        regressor.rank("a film", ["a good film", None])
    assert regressor.rank("a film", []) == []
