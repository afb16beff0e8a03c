"""kbert.recipes.qa: training, evaluation and prediction of a tiny SQuAD run, and apps/qa.py's command line."""

import json

import pytest

from kbert.data.readers.squad import read_squad
from kbert.recipes import qa as qa_recipe
from kbert.saving import load_run
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert_core import says_no_answer
from tests.conftest import app_module
from tests.recipes.conftest import (check_mixed_precision_run, check_run_metrics, default_flags,
                                    predictions_under_the_next_backend, record_models, train_flags, write_squad)
from tests.recipes.predict_ner_and_qa import QA_CONTEXT, QA_QUESTIONS

qa_app = app_module("qa")  # apps/qa.py


@pytest.fixture(scope="module")
def qa_run(tiny_init, tmp_path_factory):
    folder = tmp_path_factory.mktemp("qa")
    data = write_squad(folder / "squad.json")
    metrics = qa_recipe.train(data, tiny_init, folder / "run", epochs=1, batch_size=4, learning_rate=1e-3,
                              doc_stride=3, validation_articles=1, verbose=0)
    return folder / "run", data, metrics


def test_qa_mixed_precision(tiny_init, tmp_path, monkeypatch):
    built = record_models(monkeypatch, BertQuestionAnswerer)
    data = write_squad(tmp_path / "squad.json")
    metrics = qa_recipe.train(data, tiny_init, tmp_path / "run", epochs=1, batch_size=4, learning_rate=1e-3,
                            doc_stride=6, mixed_precision=True, validation_articles=1, limit=2,
                            validation_limit=1, verbose=0)
    assert built[0].get_layer("span_logits").compute_dtype == "float32"
    assert (metrics["train_questions"], metrics["validation_questions"]) == (2, 1)  # both limits hold
    check_mixed_precision_run(tmp_path / "run", metrics, built[0], QA_QUESTIONS, [QA_CONTEXT] * len(QA_QUESTIONS))


def test_qa_run_and_evaluate(qa_run):
    run, data, metrics = qa_run
    assert {"model.keras", "metrics.json", "validation_predictions.json", "curves.png"} <= {p.name for p in run.iterdir()}
    assert metrics["train_questions"] == 6 and metrics["validation_questions"] == 3
    assert metrics["max_length"] == 12 and metrics["doc_stride"] == 3
    check_run_metrics(metrics)  # no per-epoch validation: the last epoch's weights
    model = load_run(run)
    assert isinstance(model, BertQuestionAnswerer) and model.preprocessor.doc_stride == 3
    scores = qa_recipe.evaluate(run, data)
    predictions = json.loads((run / "predictions_eval_squad.json").read_text())
    assert len(predictions) == 9 and scores["questions"] == 9 and 0 <= scores["f1"] <= 100


def test_qa_skips_and_counts_answers_not_in_their_context(tiny_init, tmp_path):
    """As the reader leaves them: not found (no answer_start), or found on no token (a deleted
    character); training skips both and counts them, where BertQuestionAnswerer.fit would raise."""
    squad = json.loads(write_squad(tmp_path / "squad.json").read_text())
    for a, article in enumerate(squad["data"]):
        paragraph = article["paragraphs"][0]
        paragraph["context"] += " \u200b"
        paragraph["qas"] += [
            {"id": f"{a}-lost", "question": "who flies ?", "answers": [{"text": "a bird", "answer_start": 0}]},
            {"id": f"{a}-blank", "question": "what is blank ?",
             "answers": [{"text": "\u200b", "answer_start": len(paragraph["context"]) - 1}]}]
    (tmp_path / "squad.json").write_text(json.dumps(squad))
    metrics = qa_recipe.train(tmp_path / "squad.json", tiny_init, tmp_path / "run", epochs=1, batch_size=4,
                            doc_stride=6, validation_articles=1, verbose=0)
    assert metrics["reader"]["answers_not_found"] == 3
    assert metrics["train_questions"] == 10 and metrics["train_skipped"] == 4
    assert metrics["validation_questions"] == 5 and metrics["steps"] > 0


def test_qa_run_split_gives_back_the_held_out_questions(qa_run, tmp_path):
    run, data, _ = qa_run
    train, valid = qa_recipe.run_split(run)
    assert [e.id for e in valid] == list(json.loads((run / "validation_predictions.json").read_text()))
    assert len(train) == 6 and not {e.title for e in train} & {e.title for e in valid}
    squad = json.loads(data.read_text())
    for article in squad["data"]:
        article["title"] += " (edited)"
    (tmp_path / "other.json").write_text(json.dumps(squad))
    with pytest.raises(ValueError, match="does not give back the validation split"):
        qa_recipe.run_split(run, tmp_path / "other.json")


def test_qa_predict_slices_the_context(qa_run):
    run, _, _ = qa_run
    context = (QA_CONTEXT + " ") * 40  # many windows of 12 tokens
    for result in qa_recipe.predict(run, context, QA_QUESTIONS):
        assert context[result["start"] : result["end"]] == result["text"] and result["text"]
        assert 0 < result["probability"] <= 1
    with pytest.raises(ValueError, match=r"Question 2 is empty"):
        qa_recipe.predict(run, context, ["who ?", "  "])
    with pytest.raises(ValueError, match="context is empty"):
        qa_recipe.predict(run, "", ["who ?"])


def test_same_predictions_under_the_next_backend(qa_run, tmp_path):
    """A run trained here gives the same answers under the next backend."""
    theirs = predictions_under_the_next_backend("qa", qa_run[0], tmp_path / "out.json")
    ours = qa_recipe.predict(qa_run[0], QA_CONTEXT, QA_QUESTIONS)
    for a, b in zip(theirs, ours):
        assert (a["text"], a["start"], a["end"]) == (b["text"], b["start"], b["end"])
        assert a["score"] == pytest.approx(b["score"], abs=1e-3)


def test_command_line_flags():
    common, expected = train_flags()
    qa = qa_app.parser().parse_args(["train", *common, "--doc-stride", "32", "--max-question-length", "16",
                                     "--validation-articles", "2", "--articles", "9", "--validation-limit", "7"])
    layout = {"format": None, "delimiter": None,
              **{f"{use}_column": None for use in ("id", "title", "context", "question", "answers")}}
    assert vars(qa) == {**expected, "doc_stride": 32, "max_question_length": 16, "validation_articles": 2,
                        "articles": 9, "validation_limit": 7, "allow_no_answer": False, "no_answer_threshold": 0.0,
                        **layout}
    assert default_flags(qa_app.parser()) == (2, 5e-5, 384, False, "auto")


def test_qa_command_line(qa_run, tmp_path, capsys):
    run, _, _ = qa_run
    (tmp_path / "context.txt").write_text(QA_CONTEXT)
    qa_app.main(["predict", "--model", str(run), "--context", str(tmp_path / "context.txt"), "--json",
                 *[arg for question in QA_QUESTIONS for arg in ("--question", question)]])
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [a["text"] for a in answers] == [a["text"] for a in qa_recipe.predict(run, QA_CONTEXT, QA_QUESTIONS)]
    qa_app.main(["predict", "--model", str(run), "--context", QA_CONTEXT, "--question", QA_QUESTIONS[0],
                 "--dtype", "bfloat16"])
    question, answer = capsys.readouterr().out.splitlines()
    assert question == QA_QUESTIONS[0] and " probability " in answer
    (tmp_path / "empty.txt").write_text(" \n")
    with pytest.raises(SystemExit, match="the context file is empty"):
        qa_app.main(["predict", "--model", str(run), "--context", str(tmp_path / "empty.txt"), "--question", "who ?"])


def test_squad_2_trains_on_unanswerable_questions_with_allow_no_answer(tiny_init, tmp_path, capsys):
    """SQuAD 2.0 JSON: without --allow-no-answer its unanswerable questions are skipped and counted; with it they
    train, the run's model may answer "", evaluation scores by the 2.0 rules, and predict's threshold decides."""
    squad = json.loads(write_squad(tmp_path / "squad.json").read_text())
    for a, article in enumerate(squad["data"]):
        article["paragraphs"][0]["qas"].append({"id": f"{a}-none", "question": "who flies ?", "answers": [],
                                                "is_impossible": True})
    data = tmp_path / "squad2.json"
    data.write_text(json.dumps({**squad, "version": "v2.0"}))
    metrics = qa_recipe.train(data, tiny_init, tmp_path / "v1", epochs=1, batch_size=4, doc_stride=6,
                              validation_articles=1, verbose=0)
    assert (metrics["train_questions"], metrics["train_unanswerable"], metrics["train_skipped"]) == (8, 2, 2)
    assert "2 have no answer: allow_no_answer trains on them" in capsys.readouterr().out

    qa_app.main(["train", "--data", str(data), "--init", str(tiny_init), "--out", str(tmp_path / "v2"), "--epochs", "1",
                 "--batch-size", "4", "--doc-stride", "6", "--validation-articles", "1", "--allow-no-answer",
                 "--no-answer-threshold", "-0.5", "--quiet"])
    metrics = json.loads((tmp_path / "v2" / "metrics.json").read_text())
    assert (metrics["train_unanswerable"], metrics["train_skipped"], metrics["allow_no_answer"]) == (2, 0, True)
    model = load_run(tmp_path / "v2")
    assert (model.allow_no_answer, model.no_answer_threshold) == (True, -0.5)
    scores = qa_recipe.evaluate(tmp_path / "v2", data)
    assert (scores["questions"], scores["HasAns_total"], scores["NoAns_total"]) == (12, 9, 3)
    assert scores["best_threshold_f1"] >= scores["f1"]
    model.set_decoding(no_answer_threshold=scores["best_threshold"])  # the threshold found scores what it said
    again, _ = qa_recipe.evaluate_examples(model, read_squad(data, verbose=False))
    assert (again["f1"], again["exact_match"]) == pytest.approx((scores["best_threshold_f1"],
                                                                 scores["best_threshold_exact_match"]))
    for threshold, empty in ((-1e6, True), (1e6, False)):
        capsys.readouterr()
        qa_app.main(["predict", "--model", str(tmp_path / "v2"), "--context", QA_CONTEXT, "--question",
                     QA_QUESTIONS[0], "--no-answer-threshold", str(threshold)])
        assert ("no answer: the context does not answer it" in capsys.readouterr().out) == empty
    # A model trained without allow_no_answer answers always, and "no answer" where a threshold is given it
    v1 = [qa_recipe.predict(tmp_path / "v1", QA_CONTEXT, QA_QUESTIONS[:1], no_answer_threshold=threshold)[0]
          for threshold in (None, -1e6, 1e6)]
    assert [says_no_answer(answer) for answer in v1] == [False, True, False]
    assert v1[0]["text"] == v1[2]["text"] and v1[1]["note"].startswith("no answer")
    assert "best_threshold" not in qa_recipe.evaluate(tmp_path / "v1", data)
    qa_app.main(["evaluate", "--model", str(tmp_path / "v1"), "--data", str(data), "--no-answer-threshold", "-1000000",
                 "--out", str(tmp_path / "v1.json"), "--quiet"])
    scores = json.loads((tmp_path / "v1.json").read_text())
    assert (scores["no_answer_threshold"], scores["NoAns_exact"], scores["HasAns_exact"]) == (-1e6, 100.0, 0.0)
    assert scores["best_threshold_f1"] >= scores["f1"]
