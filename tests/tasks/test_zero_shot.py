"""`BertClassifier.zero_shot` against transformers' zero-shot-classification pipeline on the same NLI heads."""

import json

import numpy as np
import pytest

from kbert.tasks.bert_classifier import BertClassifier
from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE
from tests.conftest import ONCE_ON_TORCH, TESTS, app_module, run_python

TEXTS = ["The striker scored twice in the final minutes.", "Parliament passed the budget after a long debate.",
         "Whisk the eggs, then fold in the flour."]
TOPICS = ["sports", "politics", "cooking"]
CASES = {
    # MNLI's order as most checkpoints name it, and a two-class model (RTE, QNLI) whose entailment is not class 0
    "label_orders": [["entailment", "neutral", "contradiction"], ["not_entailment", "entailment"]],
    "calls": [
        {"texts": TEXTS, "candidate_labels": TOPICS, "hypothesis_template": HYPOTHESIS_TEMPLATE, "multi_label": False},
        {"texts": TEXTS, "candidate_labels": TOPICS, "hypothesis_template": "The topic of this text is {}.",
         "multi_label": True},
        {"texts": TEXTS[:1], "candidate_labels": ["urgent"], "hypothesis_template": HYPOTHESIS_TEMPLATE,
         "multi_label": False},  # one label: entailment against contradiction, as multi_label
    ],
}


@pytest.fixture(scope="module")
def zero_shot_reference(minilm_dir, tmp_path_factory):
    """Random NLI heads on all-MiniLM-L6-v2 as `transformers` draws them, and its pipeline's answers to each call
    (`zero_shot_reference.py`)."""
    pytest.importorskip("transformers", reason="transformers is a test-only dependency")
    folder = tmp_path_factory.mktemp("zero_shot")
    (folder / "cases.json").write_text(json.dumps(CASES))
    run_python(TESTS / "tasks" / "zero_shot_reference.py", minilm_dir, folder, folder / "cases.json",
               folder / "out.json")
    return folder, json.loads((folder / "out.json").read_text())


@ONCE_ON_TORCH  # the logits' parity is tested on every backend; this is numpy on top of them
def test_zero_shot_answers_as_hugging_faces_pipeline(zero_shot_reference):
    """The same labels in the same order with the same scores: a softmax of the entailment logits over the labels, or
    each label's entailment against contradiction (multi_label, or one label), for either label order."""
    folder, expected = zero_shot_reference
    for i, (names, answers) in enumerate(zip(CASES["label_orders"], expected)):
        model = BertClassifier.from_preset(folder / str(i))
        assert model.label_names == names
        for call, want in zip(CASES["calls"], answers):
            labels = call["candidate_labels"]
            got = model.zero_shot(call["texts"], ", ".join(labels), call["hypothesis_template"], call["multi_label"])
            for answer, reference in zip(got, want, strict=True):
                gaps = np.abs(np.diff(reference["scores"]))
                assert gaps.size == 0 or gaps.min() > 1e-4  # no order that float noise could decide
                assert (answer["sequence"], answer["labels"]) == (reference["sequence"], reference["labels"])
                np.testing.assert_allclose(answer["scores"], reference["scores"], atol=2e-5)
            if not call["multi_label"] and len(labels) > 1:
                assert [sum(answer["scores"]) for answer in got] == pytest.approx([1.0] * len(got))
    assert model.zero_shot(TEXTS[0], TOPICS)["sequence"] == TEXTS[0]  # a text alone: its answer alone


@ONCE_ON_TORCH
def test_zero_shot_refuses_what_it_cannot_read():
    nli = ["entailment", "neutral", "contradiction"]

    def classifier(**arguments):
        return BertClassifier.from_preset("bert_tiny", sequence_length=32, **arguments)

    with pytest.raises(ValueError, match="with a class named \"entailment\": this is a classifier of"):
        classifier(num_classes=2, label_names=["negative", "positive"]).zero_shot(TEXTS, TOPICS)
    with pytest.raises(ValueError, match="this is a regressor"):
        classifier(num_classes=1).zero_shot(TEXTS, TOPICS)
    with pytest.raises(ValueError, match="has no {} where the label goes"):
        classifier(num_classes=3, label_names=nli).zero_shot(TEXTS, TOPICS, hypothesis_template="It is sports.")
    with pytest.raises(ValueError, match="at least one text"):
        classifier(num_classes=3, label_names=nli).zero_shot([], TOPICS)
    with pytest.raises(ValueError, match="at least one candidate label"):
        classifier(num_classes=3, label_names=nli).zero_shot(TEXTS, " , ")
    with pytest.raises(ValueError, match=r"candidate_labels\[1\] is blank"):
        classifier(num_classes=3, label_names=nli).zero_shot(TEXTS, ["sports", " "])
    no_contradiction = classifier(num_classes=3, label_names=["entailment", "neutral", "other"])
    assert len(no_contradiction.zero_shot(TEXTS, TOPICS)) == 3  # a distribution over the labels needs entailment only
    with pytest.raises(ValueError, match="names no class \"contradiction\""):
        no_contradiction.zero_shot(TEXTS, TOPICS, multi_label=True)


@ONCE_ON_TORCH
def test_the_app_prints_the_pipelines_answers(zero_shot_reference, capsys):
    folder, expected = zero_shot_reference
    call = CASES["calls"][1]
    app_module("zero_shot").main(["--model", str(folder / "0"), "--labels", ",".join(call["candidate_labels"]),
                                  "--template", call["hypothesis_template"], "--multi-label", "--json",
                                  *call["texts"]])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    want = expected[0][1]  # the first model's answers to the call
    assert [(line["sequence"], line["labels"]) for line in lines] == [(a["sequence"], a["labels"]) for a in want]
    np.testing.assert_allclose([line["scores"] for line in lines], [a["scores"] for a in want], atol=2e-5)
    app_module("zero_shot").main(["--model", str(folder / "1"), "--labels", "sports,politics", TEXTS[0]])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == TEXTS[0] and sorted(line.split()[1] for line in printed[1:]) == ["politics", "sports"]


@ONCE_ON_TORCH
def test_the_app_refuses_a_model_without_a_classifier():
    with pytest.raises(ValueError, match="holds no trained classifier"):
        app_module("zero_shot").main(["--model", "bert_tiny", "--labels", "a,b", "a text"])
