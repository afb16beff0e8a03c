"""Packed rows (`kbert.tasks.packed_calls`, `BertBackbone.packed_outputs`): a classifier's answers and a sentence
encoder's embeddings computed on packed rows equal those of padded batches, for texts of very different lengths,
one text, and texts filling a row exactly; no attention crosses from one text to another; on torch both the
plain-torch pass and Keras's graph."""

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertClassifier, BertSentenceEncoder
from kbert.tasks.packed_calls import packed_sequences
from kbert_core.packed_rows import packed_inputs

TEXTS = ["a", "an utterly gripping film , long and never dull for a single minute of it", "dull", "not bad at all",
         "the the the the the the the the the the the the the the the the the the the the the the"]
SPEEDUPS = ["all", "0"] if keras.config.backend() == "torch" else ["all"]


@pytest.fixture(params=SPEEDUPS)
def speedups(request, monkeypatch):
    monkeypatch.setenv("KBERT_SPEEDUPS", request.param)  # on torch: the plain-torch pass, then Keras's graph
    return request.param


def classifier(family="bert_tiny", **overrides):
    """A tiny classifier of `family`'s settings (ALBERT's shared blocks and projected embedding, DistilBERT's
    missing token types and pooler; RoBERTa's offset positions as `position_offset=2`, on a BERT, since RoBERTa's
    family takes its own tokenizer), on bert_tiny's tokenizer."""
    keras.utils.set_random_seed(0)
    preprocessor = BertClassifier.from_preset("bert_tiny", num_classes=3, sequence_length=32).preprocessor
    backbone = BertBackbone.from_preset(family, num_layers=2, hidden_dim=32, num_heads=2, intermediate_dim=64,
                                        vocabulary_size=30522, dropout=0.0, **overrides)
    return BertClassifier(backbone, 3, preprocessor=preprocessor)


@pytest.mark.parametrize("family, overrides", [("bert_tiny", {}), ("bert_tiny", {"position_offset": 2}),
                                               ("albert_base", {}), ("distilbert_base", {})])
def test_packed_answers_equal_padded(family, overrides, speedups):
    model = classifier(family, **overrides)
    for texts in (TEXTS, TEXTS[:1]):
        padded = model.answers(texts)
        packed = model.answers(texts, pack=True, batch_size=2)
        for a, b in zip(padded, packed, strict=True):
            assert a["label"] == b["label"]
            np.testing.assert_allclose(list(a["probabilities"].values()), list(b["probabilities"].values()),
                                       atol=1e-5)
        prepared = model.preprocessor.prepare(texts)
        np.testing.assert_allclose(model.packed_logits(prepared.inputs),
                                   model.predict_on_batch(prepared.inputs), atol=1e-5)


def test_a_lone_text_is_computed_padded(monkeypatch):
    model = classifier()
    encoder = BertSentenceEncoder(model.backbone, BertSentenceEncoder.from_preset("bert_tiny").preprocessor)
    calls = []
    original = BertBackbone.packed_outputs
    monkeypatch.setattr(BertBackbone, "packed_outputs", lambda self, inputs: calls.append(1) or original(self, inputs))
    model.answers(TEXTS[:1], pack=True), encoder.encode(TEXTS[:1], pack=True)
    assert calls == []  # its packed row would be its padded one
    model.answers(TEXTS[:2], pack=True), encoder.encode(TEXTS[:2], pack=True)
    assert calls == [1, 1]


def test_texts_filling_a_row_exactly(speedups):
    model = classifier()
    inputs = model.preprocessor.prepare(TEXTS).inputs
    lengths = inputs["padding_mask"].sum(-1)
    row_length = int(lengths[1] + lengths[3] + lengths[0])  # texts 1, 3 and 0 (or 2) fill a row to its last token
    assert (packed_inputs(inputs, row_length)[0]["sequence_ids"] > 0).all(axis=1).any()
    for row in (row_length, int(lengths.sum())):  # and all five in one row
        np.testing.assert_allclose(model.packed_logits(inputs, row_length=row),
                                   model.predict_on_batch(inputs), atol=1e-5)


def test_no_attention_across_texts(speedups):
    backbone = classifier().backbone
    inputs = classifier().preprocessor.prepare(TEXTS).inputs
    before = packed_sequences(backbone, inputs, row_length=int(inputs["padding_mask"].sum()))
    changed = {key: value.copy() for key, value in inputs.items()}
    changed["token_ids"][1, 1:5] = changed["token_ids"][1, 1:5] + 7  # another text in the same row
    after = packed_sequences(backbone, changed, row_length=int(inputs["padding_mask"].sum()))
    assert not np.allclose(before[1], after[1], atol=1e-3)
    for i in (0, 2, 3, 4):
        np.testing.assert_allclose(before[i], after[i], atol=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_packed_embeddings_equal_padded(pooling, speedups):
    model = classifier()
    encoder = BertSentenceEncoder(model.backbone, BertSentenceEncoder.from_preset("bert_tiny").preprocessor,
                                  pooling=pooling)
    np.testing.assert_allclose(encoder.encode(TEXTS, pack=True, batch_size=2), encoder.encode(TEXTS), atol=1e-5)


def test_packed_outputs_refuse_too_long_rows():
    backbone = BertBackbone.from_preset("bert_tiny", num_layers=1, max_sequence_length=8)
    ids = np.ones((1, 9), "int32")
    with pytest.raises(ValueError, match="exceeds max_sequence_length=8"):
        backbone.packed_outputs({"token_ids": ids, "segment_ids": 0 * ids, "sequence_ids": ids})


def test_packed_pairs_keep_their_segments(speedups):
    model = classifier()
    pairs = (TEXTS[:3], TEXTS[2:])
    for a, b in zip(model.answers(pairs), model.answers(pairs, pack=True), strict=True):
        np.testing.assert_allclose(list(a["probabilities"].values()), list(b["probabilities"].values()), atol=1e-5)
