import json

import numpy as np
import pytest

from kbert.data.conll import ConllFormatError, read_conll
from kbert.metrics.entity_f1 import entity_scores
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert.tasks.bert_token_classifier import BertTokenClassifier
from kbert.saving import load_run
from kbert.recipes import ner as ner_recipe, qa as qa_recipe
from tests.conftest import BACKENDS, TESTS, app_module, run_python
from tests.recipes.predict_ner_and_qa import NER_TEXTS, QA_CONTEXT, QA_QUESTIONS

ner_app, qa_app = app_module("ner"), app_module("qa")  # apps/ner.py, apps/qa.py
PEOPLE, PLACES = ["man", "someone", "nobody"], ["film", "fun"]


def write_conll(path, sentences=16, seed=0):
    """Toy NER: people words are B-PER, place words B-LOC, the rest O; one 30-word sentence."""
    rng = np.random.default_rng(seed)
    blocks = []
    for i in range(sentences):
        words = rng.choice(["a", "the", "plays", "is", *PEOPLE, *PLACES], size=30 if i == 0 else rng.integers(2, 8))
        tags = ["B-PER" if w in PEOPLE else "B-LOC" if w in PLACES else "O" for w in words]
        blocks.append("\n".join(f"{w} {t}" for w, t in zip(words, tags)))
    path.write_text("\n\n".join(blocks) + "\n")
    return path


def write_squad(path):
    sentences = ["the man plays a film .", "someone sleeps .", "nobody is fine .", "the film is good ."]
    data = []
    for a in range(3):
        context = " ".join(sentences[a:] + sentences[:a])
        qas = [{"id": f"{a}-{q}", "question": question, "answers": [{"text": answer, "answer_start": context.index(answer)}]}
               for q, (question, answer) in enumerate([("who plays ?", "the man"), ("who sleeps ?", "someone"),
                                                        ("what is good ?", "the film")])]
        data.append({"title": f"article {a}", "paragraphs": [{"context": context, "qas": qas}]})
    path.write_text(json.dumps({"version": "1.1", "data": data}))
    return path


@pytest.fixture(scope="module")
def ner_run(tiny_init, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner")
    data = write_conll(folder / "train.txt")
    metrics = ner_recipe.train(data, tiny_init, folder / "run", epochs=1, batch_size=8, learning_rate=1e-3, verbose=0)
    return folder / "run", data, metrics


@pytest.fixture(scope="module")
def qa_run(tiny_init, tmp_path_factory):
    folder = tmp_path_factory.mktemp("qa")
    data = write_squad(folder / "squad.json")
    metrics = qa_recipe.train(data, tiny_init, folder / "run", epochs=1, batch_size=4, learning_rate=1e-3,
                       doc_stride=3, validation_articles=1, verbose=0)
    return folder / "run", data, metrics


def record_models(monkeypatch, cls):
    """The models that `cls.from_preset` builds, appended as it builds them."""
    built, from_preset = [], cls.from_preset
    monkeypatch.setattr(cls, "from_preset", lambda *args, **kwargs: built.append(from_preset(*args, **kwargs))
                        or built[-1])
    return built


def check_mixed_precision_run(run, metrics, trained, texts, pairs=None):
    """bfloat16 compute and float32 weights in training; a float32 model with finite outputs in the run folder."""
    import keras

    assert metrics["hyperparameters"]["mixed_precision"] is True
    assert json.loads((run / "metrics.json").read_text())["hyperparameters"]["mixed_precision"] is True
    assert trained.backbone.get_layer("transformer_layer_0").compute_dtype == "bfloat16"
    assert {v.dtype for v in trained.weights} == {"float32"} and np.isfinite(metrics["history"]["loss"]).all()
    assert keras.config.dtype_policy().name == "float32"  # restored after building
    model, tokenizer, max_length = load_run(run)
    assert model.backbone.get_layer("transformer_layer_0").compute_dtype == "float32"
    outputs = model.predict_on_batch(tokenizer(texts, pairs, max_length=max_length, padding="longest"))
    for output in outputs.values() if isinstance(outputs, dict) else [outputs]:
        output = keras.ops.convert_to_numpy(output)
        assert output.dtype == np.float32 and np.isfinite(output).all()


def test_ner_mixed_precision(tiny_init, tmp_path, monkeypatch):
    built = record_models(monkeypatch, BertTokenClassifier)
    data = write_conll(tmp_path / "train.txt")
    metrics = ner_recipe.train(data, tiny_init, tmp_path / "run", epochs=1, batch_size=4, learning_rate=1e-3,
                             mixed_precision=True, limit=4, validation_limit=1, verbose=0)
    assert built[0].get_layer("logits").compute_dtype == "float32"
    assert (metrics["train_sentences"], metrics["validation_sentences"]) == (4, 1)  # both limits hold
    check_mixed_precision_run(tmp_path / "run", metrics, built[0], NER_TEXTS)


def test_qa_mixed_precision(tiny_init, tmp_path, monkeypatch):
    built = record_models(monkeypatch, BertQuestionAnswerer)
    data = write_squad(tmp_path / "squad.json")
    metrics = qa_recipe.train(data, tiny_init, tmp_path / "run", epochs=1, batch_size=4, learning_rate=1e-3,
                            doc_stride=6, mixed_precision=True, validation_articles=1, limit=2,
                            validation_limit=1, verbose=0)
    assert built[0].get_layer("span_logits").compute_dtype == "float32"
    assert (metrics["train_questions"], metrics["validation_questions"]) == (2, 1)  # both limits hold
    check_mixed_precision_run(tmp_path / "run", metrics, built[0], QA_QUESTIONS, [QA_CONTEXT] * len(QA_QUESTIONS))


def test_ner_run_folder(ner_run):
    run, _, metrics = ner_run
    assert sorted(p.name for p in run.iterdir()) == [
        "README.md", "curves.png", "history.csv", "logs", "metrics.json", "model.keras", "tokenizer_config.json",
        "vocab.txt"]
    model, _, max_length = load_run(run)
    assert isinstance(model, BertTokenClassifier) and max_length == 12
    assert model.label_names == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"] == metrics["label_names"]
    assert len(metrics["history"]["val_entity_f1"]) == 1 and 0 <= metrics["validation"]["f1"] <= 1


def test_ner_evaluate_agrees_with_word_predictions(ner_run, capsys):
    run, data, _ = ner_run
    metrics = ner_recipe.evaluate(run, data)
    assert json.loads((run / "eval_train.json").read_text()) == metrics
    model, tokenizer, max_length = load_run(run)
    sentences = read_conll(data)
    tags, _ = ner_recipe.predict_tags(model, tokenizer, sentences.texts(), sentences.word_spans(), max_length)
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


def test_qa_run_and_evaluate(qa_run):
    run, data, metrics = qa_run
    assert {"model.keras", "metrics.json", "validation_predictions.json", "curves.png"} <= {p.name for p in run.iterdir()}
    assert metrics["train_questions"] == 6 and metrics["validation_questions"] == 3
    assert metrics["max_length"] == 12 and metrics["doc_stride"] == 3
    model, _, windowing = qa_recipe.load_qa_run(run)
    assert isinstance(model, BertQuestionAnswerer) and windowing["doc_stride"] == 3
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
    with pytest.raises(ValueError, match=r"Question 2 \(--question\) is empty"):
        qa_recipe.predict(run, context, ["who ?", "  "])
    with pytest.raises(ValueError, match="context is empty"):
        qa_recipe.predict(run, "", ["who ?"])


def test_same_predictions_under_the_next_backend(ner_run, qa_run, tmp_path):
    """Runs trained here predict the same under the next backend (tensorflow -> jax -> torch
    -> tensorflow), so the three CI runs cover a cycle of backend pairs with one subprocess each."""
    import keras

    other = BACKENDS[(BACKENDS.index(keras.config.backend()) + 1) % len(BACKENDS)]
    pytest.importorskip(other)
    run_python(TESTS / "recipes" / "predict_ner_and_qa.py", ner_run[0], qa_run[0], tmp_path / "out.json", backend=other)
    theirs = json.loads((tmp_path / "out.json").read_text())
    ours = {"ner": ner_recipe.predict(ner_run[0], NER_TEXTS),
            "qa": qa_recipe.predict(qa_run[0], QA_CONTEXT, QA_QUESTIONS)}
    assert theirs["backend"] == other
    strip = lambda results: [[{k: v for k, v in e.items() if k != "score"} for e in r["entities"]] for r in results]  # noqa: E731
    assert strip(theirs["ner"]) == strip(ours["ner"])
    for a, b in zip(theirs["qa"], ours["qa"]):
        assert (a["text"], a["start"], a["end"]) == (b["text"], b["start"], b["end"])
        assert a["score"] == pytest.approx(b["score"], abs=1e-3)


def test_command_line_flags():
    common = ["--data", "d", "--init", "i", "--out", "o", "--epochs", "1", "--batch-size", "2", "--lr", "0.001",
              "--max-length", "64", "--mixed-precision", "--limit", "5", "--seed", "3", "--progress", "0",
              "--distribution", "model", "--mesh", "2x4", "--gradient-accumulation", "2", "--remat"]
    expected = dict(command="train", data="d", init="i", out="o", epochs=1, batch_size=2, lr=0.001, max_length=64,
                    mixed_precision=True, distribution="model", mesh=(2, 4), gradient_accumulation=2, remat=True,
                    limit=5, validation_limit=None, seed=3, progress=0, json=False,
                    verbose=False)
    ner = ner_app.parser().parse_args(["train", *common, "--valid", "v", "--validation-fraction", "0.2",
                                       "--patience", "2"])
    assert vars(ner) == {**expected, "valid": "v", "validation_fraction": 0.2, "patience": 2}
    qa = qa_app.parser().parse_args(["train", *common, "--doc-stride", "32", "--max-question-length", "16",
                                     "--validation-articles", "2", "--articles", "9", "--validation-limit", "7"])
    assert vars(qa) == {**expected, "doc_stride": 32, "max_question_length": 16, "validation_articles": 2,
                        "articles": 9, "validation_limit": 7}
    defaults = [vars(parser.parse_args(["train", "--data", "d", "--out", "o"]))
                for parser in (ner_app.parser(), qa_app.parser())]
    assert [(d["epochs"], d["lr"], d["max_length"], d["mixed_precision"], d["progress"]) for d in defaults] == [
        (3, 5e-5, 128, False, "auto"), (2, 5e-5, 384, False, "auto")]


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
