"""kbert_core.zero_shot against the zero-shot-classification pipeline's scoring written out here in numpy (Hugging
Face's `ZeroShotClassificationPipeline.postprocess`): one softmax of the entailment logits over the labels, or per
label entailment against contradiction; the pairs it reads and the classes it finds by name."""

import numpy as np
import pytest

from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE, ZeroShotQuestion, nli_classes

NLI = ["entailment", "neutral", "contradiction"]
LABELS = ["sports", "politics", "cooking"]


def test_the_pairs_are_every_text_with_every_labels_hypothesis_text_by_text():
    question = ZeroShotQuestion.of(NLI, ["t1", "t2"], "sports, politics ,", "It is {}.")
    assert question.pairs == (["t1", "t1", "t2", "t2"], ["It is sports.", "It is politics."] * 2)
    assert ZeroShotQuestion.of(NLI, "alone", ["x"]).texts == ["alone"]
    assert HYPOTHESIS_TEMPLATE.format("x") == "This example is x."


@pytest.mark.parametrize("names, entailment", [(NLI, 0), (["contradiction", "neutral", "entailment"], 2)])
def test_one_distribution_is_the_softmax_of_the_entailment_logits_over_the_labels(names, entailment):
    logits = np.random.default_rng(entailment).normal(size=(2 * len(LABELS), 3))  # 2 texts x 3 labels, 3 classes
    answers = ZeroShotQuestion.of(names, ["t1", "t2"], LABELS).answers(logits)
    for text, answer, rows in zip(["t1", "t2"], answers, logits.reshape(2, len(LABELS), 3)):
        scores = np.exp(rows[:, entailment]) / np.exp(rows[:, entailment]).sum()
        order = np.argsort(-scores)
        assert (answer["sequence"], answer["labels"]) == (text, [LABELS[i] for i in order])
        np.testing.assert_allclose(answer["scores"], scores[order], rtol=1e-12)


@pytest.mark.parametrize("names, entailment, contradiction", [
    (NLI, 0, 2), (["contradiction", "neutral", "entailment"], 2, 0), (["not_entailment", "entailment"], 1, 0)])
def test_multi_label_and_a_lone_label_weigh_entailment_against_contradiction(names, entailment, contradiction):
    logits = np.random.default_rng(len(names)).normal(size=(len(LABELS), len(names)))
    answer = ZeroShotQuestion.of(names, ["t"], LABELS, multi_label=True).answers(logits)[0]
    scores = 1 / (1 + np.exp(logits[:, contradiction] - logits[:, entailment]))
    order = np.argsort(-scores)
    assert answer["labels"] == [LABELS[i] for i in order]
    np.testing.assert_allclose(answer["scores"], scores[order], rtol=1e-12)
    [alone] = ZeroShotQuestion.of(names, ["t"], LABELS[:1]).answers(logits[:1])
    np.testing.assert_allclose(alone["scores"], scores[:1], rtol=1e-12)


def test_the_nli_classes_by_name_and_the_other_of_two():
    assert nli_classes(NLI) == (0, 2)
    assert nli_classes(["Contradiction", "Neutral", "Entailment"]) == (2, 0)
    assert nli_classes(["entailment", "not_entailment"]) == (0, 1)
    assert nli_classes(["entailment", "neutral", "other"]) == (0, None)
    with pytest.raises(ValueError, match=r"this is a classifier of \['negative', 'positive'\]"):
        nli_classes(["negative", "positive"])


@pytest.mark.parametrize("texts, labels, template, multi_label, error, words", [
    ([], LABELS, HYPOTHESIS_TEMPLATE, False, ValueError, "at least one text"),
    (["t"], " , ", HYPOTHESIS_TEMPLATE, False, ValueError, "at least one candidate label"),
    (["t"], ["a", " "], HYPOTHESIS_TEMPLATE, False, ValueError, r"candidate_labels\[1\] is blank"),
    (["t"], ["a", 3], HYPOTHESIS_TEMPLATE, False, TypeError, r"candidate_labels\[1\] is int"),
    (["t"], LABELS, "It is sports.", False, ValueError, "has no {} where the label goes"),
])
def test_what_cannot_be_asked_is_refused_by_name(texts, labels, template, multi_label, error, words):
    with pytest.raises(error, match=words):
        ZeroShotQuestion.of(NLI, texts, labels, template, multi_label)


def test_multi_label_needs_a_contradiction_class_one_distribution_does_not():
    names = ["entailment", "neutral", "other"]
    assert ZeroShotQuestion.of(names, ["t"], LABELS).contradiction is None
    for labels, multi_label in ((LABELS, True), (LABELS[:1], False)):
        with pytest.raises(ValueError, match="names no class \"contradiction\""):
            ZeroShotQuestion.of(names, ["t"], labels, multi_label=multi_label)
