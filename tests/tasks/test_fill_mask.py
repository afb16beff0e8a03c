"""`BertPretrainer.fill_mask` against Hugging Face's fill-mask pipeline: a random masked LM of BERT and of each of its
family, with a tokenizer trained on IMDB reviews, made and run by `transformers` in a process of its own
(`fill_mask_reference.py`), read back by `BertPretrainer.from_preset`; on the same masked reviews (one mask, two, the
first word, the last, a lone mask) the same five tokens in the same order, their probabilities within 1e-5 and the same
`token_str` and `sequence`, and the same with `targets`; apps/fill_mask.py prints them."""

import importlib.util
import json

import pytest

import kbert
from tests.conftest import TESTS, app_module, run_python

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is a test-only dependency")

FAMILIES = ("bert", "roberta", "albert", "electra", "distilbert")
TOLERANCE = 1e-5  # float32 probabilities


@pytest.fixture(scope="module")
def reference(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fill_mask")
    run_python(TESTS / "tasks" / "fill_mask_reference.py", data_dir / "imdb" / "unsup.txt", folder / "models",
               folder / "out.json")
    return folder / "models", json.loads((folder / "out.json").read_text("utf-8"))


def assert_same_answers(got, expected, where):
    """One text's answers, as Hugging Face's: a list of candidates, or a list of them per mask."""
    if expected and isinstance(expected[0], list):
        assert len(got) == len(expected), where
        for mask, (got_mask, expected_mask) in enumerate(zip(got, expected)):
            assert_same_answers(got_mask, expected_mask, f"{where}, mask {mask}")
        return
    assert [c["token"] for c in got] == [c["token"] for c in expected], where
    assert [c["token_str"] for c in got] == [c["token_str"] for c in expected], where
    assert [c["sequence"] for c in got] == [c["sequence"] for c in expected], where
    assert max(abs(a["score"] - b["score"]) for a, b in zip(got, expected)) < TOLERANCE, where


@pytest.mark.parametrize("family", FAMILIES)
def test_the_pipelines_answers(reference, family):
    folder, outputs = reference
    expected = outputs[family]
    model = kbert.BertPretrainer.from_preset(folder / family, compile=False)
    assert model.backbone.family == family
    got = model.fill_mask(expected["texts"], top_k=5, batch_size=4)  # batches of rows padded to different lengths
    for text, answers, hf_answers in zip(expected["texts"], got, expected["top_k"]):
        assert_same_answers(answers, hf_answers, text)
    assert_same_answers(model.fill_mask(expected["texts"][0]), expected["top_k"][0], "one text alone")
    with pytest.warns(UserWarning, match="'zzqx' is not in the vocabulary"):
        targeted = model.fill_mask(expected["texts"][:3], targets=expected["targets"])
    for text, answers, hf_answers in zip(expected["texts"], targeted, expected["targeted"]):
        assert_same_answers(answers, hf_answers, f"{text} (targets)")


def test_bad_texts_are_named(reference):
    model = kbert.BertPretrainer.from_preset(reference[0] / "bert", compile=False)
    with pytest.raises(ValueError, match=r"texts\[1\] \('no mask here'\) has no mask token: write \[MASK\]"):
        model.fill_mask(["a [MASK]", "no mask here"])
    with pytest.raises(ValueError, match=r"texts\[0\] .* tokens long; the model reads 64 at most"):
        model.fill_mask(["word " * 80 + "[MASK]"])
    with pytest.raises(ValueError, match="None of the targets"), pytest.warns(UserWarning, match="has no token"):
        model.fill_mask(["a [MASK]"], targets=[" "])


def test_the_app_prints_the_pipelines_answers(reference, capsys):
    folder, outputs = reference
    expected = outputs["roberta"]
    app_module("fill_mask").main(["--model", str(folder / "roberta"), "--json", *expected["texts"][:4]])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["text"] for line in lines] == expected["texts"][:4]
    for line, hf_answers in zip(lines, expected["top_k"]):
        assert_same_answers(line["masks"] if len(line["masks"]) > 1 else line["masks"][0], hf_answers, line["text"])


def test_the_app_refuses_a_model_without_a_masked_lm_head():
    app = app_module("fill_mask")
    with pytest.raises(ValueError, match="holds no masked-LM head"):
        app.main(["--model", "bert_tiny", "a [MASK]"])
