"""kbert.recipes.ner: training, evaluation and prediction of a tiny NER run, and apps/ner.py's command line."""

import json

import pytest

from kbert.data.readers.conll import ConllFormatError, read_conll
from kbert.metrics.entity_f1 import entity_scores
from kbert.recipes import ner as ner_recipe
from kbert.saving import load_run
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from tests.conftest import app_module
from tests.recipes.conftest import (check_mixed_precision_run, check_run_metrics, default_flags,
                                    predictions_under_the_next_backend, record_models, train_flags, write_conll)
from tests.recipes.predict_ner_and_qa import NER_TEXTS

ner_app = app_module("ner")  # apps/ner.py


@pytest.fixture(scope="module")
def ner_run(tiny_init, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner")
    data = write_conll(folder / "train.txt")
    metrics = ner_recipe.train(data, tiny_init, folder / "run", epochs=1, batch_size=8, learning_rate=1e-3, verbose=0)
    return folder / "run", data, metrics


def test_ner_mixed_precision(tiny_init, tmp_path, monkeypatch):
    built = record_models(monkeypatch, BertTokenClassifier)
    data = write_conll(tmp_path / "train.txt")
    metrics = ner_recipe.train(data, tiny_init, tmp_path / "run", epochs=1, batch_size=4, learning_rate=1e-3,
                             mixed_precision=True, limit=4, validation_limit=1, verbose=0)
    assert built[0].get_layer("logits").compute_dtype == "float32"
    assert (metrics["train_sentences"], metrics["validation_sentences"]) == (4, 1)  # both limits hold
    check_mixed_precision_run(tmp_path / "run", metrics, built[0], NER_TEXTS)


def test_ner_run_folder(ner_run):
    run, _, metrics = ner_run
    assert sorted(p.name for p in run.iterdir()) == [
        "README.md", "SHA256SUMS", "curves.png", "history.csv", "logs", "metrics.json", "model.keras",
        "tokenizer_config.json", "vocab.txt"]
    model = load_run(run)
    assert isinstance(model, BertTokenClassifier) and model.preprocessor.sequence_length == 12
    assert model.label_names == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"] == metrics["label_names"]
    assert len(metrics["history"]["val_entity_f1"]) == 1 and 0 <= metrics["validation"]["f1"] <= 1
    check_run_metrics(metrics, "val_entity_f1")


def test_ner_evaluate_agrees_with_word_predictions(ner_run, capsys):
    run, data, _ = ner_run
    metrics = ner_recipe.evaluate(run, data)
    assert json.loads((run / "eval_train.json").read_text()) == metrics
    model = load_run(run)
    sentences = read_conll(data)
    tags = [result["tags"] for result in model.predict(sentences.words, verbose=0)]
    assert [len(t) for t in tags] == [len(w) for w in sentences.words]  # the 30-word sentence too
    assert metrics["f1"] == pytest.approx(entity_scores(sentences.tags, tags)["f1"])
    assert "micro" in capsys.readouterr().out


def test_ner_predict_spans_index_the_original_text(ner_run):
    run, _, _ = ner_run
    for result in ner_recipe.predict(run, NER_TEXTS + ["  MAN, fun!  " * 5]):
        for entity in result["entities"]:
            assert result["text"][entity["start"] : entity["end"]] == entity["text"]
            assert entity["type"] in ("PER", "LOC") and 0 < entity["score"] <= 1


def test_ner_evaluate_rejects_unknown_tags(ner_run, tmp_path):
    run, _, _ = ner_run
    (tmp_path / "bad.txt").write_text("a O\nman B-ORG\n")
    with pytest.raises(ConllFormatError, match=r"bad.txt:2: tag 'B-ORG' is not among"):
        ner_recipe.evaluate(run, tmp_path / "bad.txt")


def test_same_predictions_under_the_next_backend(ner_run, tmp_path):
    """A run trained here predicts the same entities under the next backend."""
    theirs = predictions_under_the_next_backend("ner", ner_run[0], tmp_path / "out.json")
    ours = ner_recipe.predict(ner_run[0], NER_TEXTS)
    strip = lambda results: [[{k: v for k, v in e.items() if k != "score"} for e in r["entities"]] for r in results]  # noqa: E731
    assert strip(theirs) == strip(ours)


def test_command_line_flags():
    common, expected = train_flags()
    ner = ner_app.parser().parse_args(["train", *common, "--valid", "v", "--validation-fraction", "0.2",
                                       "--patience", "2"])
    layout = {"format": None, "delimiter": None, "tokens_column": None, "tags_column": None, "tag_names": None}
    assert vars(ner) == {**expected, "valid": "v", "validation_fraction": 0.2, "patience": 2, "class_weight": None,
                         **layout}
    assert default_flags(ner_app.parser()) == (3, 5e-5, 128, False, "auto")


def test_ner_command_line(ner_run, tmp_path, capsys):
    run, data, _ = ner_run
    ner_app.main(["predict", "--model", str(run), "--json", *NER_TEXTS])
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == ner_recipe.predict(run, NER_TEXTS)
    ner_app.main(["predict", "--model", str(run), "--json", "--dtype", "bfloat16", *NER_TEXTS])
    assert [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()] == NER_TEXTS
    ner_app.main(["predict", "--model", str(run), "--batch-size", "1", *NER_TEXTS])
    lines = capsys.readouterr().out.splitlines()  # each text, then its entities indented
    assert [line for line in lines if not line.startswith("  ")] == NER_TEXTS
    ner_app.main(["evaluate", "--model", str(run), "--data", str(data), "--out", str(tmp_path / "scores.json")])
    assert json.loads((tmp_path / "scores.json").read_text())["sentences"] == 16
