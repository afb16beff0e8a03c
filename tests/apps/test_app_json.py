"""`--json` of the commands test_app_cli.py only checks for a key (issue 22): `evaluate --json` of
apps/nli.py and apps/similarity.py, `train --json` of apps/ner.py and apps/qa.py. Each prints exactly
one JSON object, alone on stdout; it is the file the run wrote, and its scores are recomputed here by
their published definitions from what other commands answer (predict's labels and scores, the run's
validation answers), not by kbert.metrics. Backend-independent: once, under torch.
"""

import csv
import json
import re
import string
from collections import Counter

import numpy as np
import pytest
from scipy.stats import rankdata

from kbert.recipes import NLI
from kbert.tasks import BertClassifier
from tests.apps.test_app_errors import call, save_run, workspace  # noqa: F401 (a fixture)
from tests.conftest import ONCE_ON_TORCH
from tests.recipes.conftest import write_conll, write_squad
from tests.tasks.conftest import tiny_init, write_nli_tsv  # noqa: F401 (a fixture)

pytestmark = ONCE_ON_TORCH


def one_json_object(out):
    """The one JSON object that `out` (stdout) holds, alone on one line."""
    assert out.endswith("\n") and out.count("\n") == 1, out
    result = json.loads(out)
    assert isinstance(result, dict)
    return result


def read_pairs(path):
    """(premises, hypotheses, labels) of a sentence1<TAB>sentence2<TAB>label file with a header."""
    with open(path, newline="") as file:
        rows = list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def evaluate_and_predict(app, run, data, tmp_path, monkeypatch, capsys):
    """(the metrics `evaluate --json` printed, the answers `predict --json` gives for `data`'s pairs, labels)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = call(app, ["evaluate", "--model", str(run), "--data", str(data), "--json", "--out", "e.json"],
                          monkeypatch, capsys)
    assert code == 0, err
    metrics = one_json_object(out)
    assert metrics == json.loads((tmp_path / "e.json").read_text())  # what the run wrote
    assert "Wrote e.json" in err  # the messages for people, on stderr
    premises, hypotheses, labels = read_pairs(data)
    stdin = "".join(f"{p}\t{h}\n" for p, h in zip(premises, hypotheses)).encode()
    code, out, err = call(app, ["predict", "--model", str(run), "--json"], monkeypatch, capsys, stdin)
    assert code == 0, err
    answers = [json.loads(line) for line in out.splitlines()]
    assert [(a["text"], a["pair"]) for a in answers] == list(zip(premises, hypotheses))
    assert {"model", "data", "backend", "loss", "examples"} <= set(metrics)
    assert metrics["model"] == str(run) and metrics["data"] == str(data) and metrics["backend"] == "torch"
    assert metrics["examples"] == len(labels)
    return metrics, answers, labels


def test_nli_evaluate_json(tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811 (the fixture)
    # An untrained head says "neutral" to everything; a head with large random weights answers each pair its own way.
    model = BertClassifier.from_preset(tiny_init, num_classes=3, label_names=NLI.label_names, sequence_length=12,
                                       compile=False)
    data = write_nli_tsv(tmp_path / "nli.tsv", rows=30)
    premises, hypotheses, gold_labels = read_pairs(data)
    gold_ids = [NLI.label_names.index(label) for label in gold_labels]
    logits = model.get_layer("logits")
    for seed in range(50):  # tiny_init's weights are random too: draw until the head answers all three labels,
        logits.kernel.assign(np.random.default_rng(seed).normal(size=logits.kernel.shape) * 100)  # some right
        logits.bias.assign(np.zeros(3))
        logits.bias.assign(-np.log(model.predict((premises, hypotheses), verbose=0)).mean(axis=0))  # centred
        predicted_ids = model.predict((premises, hypotheses), verbose=0).argmax(-1)
        if len(set(predicted_ids)) == 3 and 0 < np.mean(predicted_ids == gold_ids) < 1:
            break
    save_run(tmp_path / "nli_run", "nli", model)
    metrics, answers, labels = evaluate_and_predict("nli", tmp_path / "nli_run", data, tmp_path, monkeypatch, capsys)
    names = metrics["label_names"]
    assert names == ["entailment", "neutral", "contradiction"]
    gold = np.array([names.index(label) for label in labels])
    predicted = np.array([names.index(a["label"]) for a in answers])
    matrix = np.zeros((3, 3), int)
    np.add.at(matrix, (gold, predicted), 1)
    f1s = [2 * matrix[c, c] / max(matrix[c].sum() + matrix[:, c].sum(), 1) for c in range(3)]  # 2TP/(2TP+FP+FN)
    true_probabilities = [a["probabilities"][label] for a, label in zip(answers, labels)]
    assert metrics["confusion_matrix"] == matrix.tolist()
    assert metrics["accuracy"] == pytest.approx(np.mean(gold == predicted))
    assert metrics["macro_f1"] == pytest.approx(np.mean(f1s))
    assert metrics["loss"] == pytest.approx(-np.mean(np.log(true_probabilities)), abs=1e-4)  # rounded probabilities
    assert len(set(predicted)) == 3 and 0 < metrics["accuracy"] < 1  # not a trivial recomputation


def test_similarity_evaluate_json(workspace, tmp_path, monkeypatch, capsys):  # noqa: F811 (the fixture)
    metrics, answers, labels = evaluate_and_predict("similarity", workspace / "sts_run", workspace / "sts.tsv",
                                                    tmp_path, monkeypatch, capsys)
    scores, gold = np.array([a["score"] for a in answers]), np.array(labels, float)
    assert np.ptp(scores) > 0 and np.ptp(gold) > 0  # correlations defined
    assert metrics["pearson"] == pytest.approx(np.corrcoef(scores, gold)[0, 1], abs=1e-5)
    assert metrics["spearman"] == pytest.approx(np.corrcoef(rankdata(scores), rankdata(gold))[0, 1], abs=1e-5)
    assert metrics["mse"] == pytest.approx(np.mean((scores - gold) ** 2), rel=1e-5)
    assert metrics["mae"] == pytest.approx(np.mean(np.abs(scores - gold)), rel=1e-5)
    assert metrics["loss"] == metrics["mse"]


def train(app, argv, tmp_path, monkeypatch, capsys):
    """The metrics `APP train --json` printed, checked against the run folder's metrics.json."""
    monkeypatch.chdir(tmp_path)
    code, out, err = call(app, ["train", *argv, "--out", "run", "--epochs", "1", "--lr", "1e-3", "--progress", "0",
                                "--json"], monkeypatch, capsys)
    assert code == 0, err
    metrics = one_json_object(out)
    assert metrics == json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert f"{app}: " in err  # the recipe's report, for people
    assert metrics["task"] == app and metrics["init"] == argv[argv.index("--init") + 1]
    assert isinstance(metrics["hyperparameters"], dict) and len(metrics["history"]["loss"]) == 1
    return metrics


def test_ner_train_json(tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811 (the fixture)
    write_conll(tmp_path / "train.txt")
    valid = write_conll(tmp_path / "valid.txt", sentences=6, seed=1)
    metrics = train("ner", ["--data", "train.txt", "--valid", "valid.txt", "--init", str(tiny_init),
                            "--batch-size", "8"], tmp_path, monkeypatch, capsys)
    assert (metrics["train_sentences"], metrics["validation_sentences"]) == (16, 6)
    # The validation scores, recomputed from the saved model's entities on the validation texts:
    # conlleval's micro precision / recall / F1 over exact (type, start, end) spans. The toy tags
    # are all B-: every entity is one word.
    sentences = [[line.split() for line in block.splitlines()] for block in valid.read_text().strip().split("\n\n")]
    texts, gold = [], set()
    for i, sentence in enumerate(sentences):
        texts.append(" ".join(word for word, _ in sentence))
        start = 0
        for word, tag in sentence:
            if tag != "O":
                gold.add((i, tag[2:], start, start + len(word)))
            start += len(word) + 1
    code, out, err = call("ner", ["predict", "--model", "run", "--json", *texts], monkeypatch, capsys)
    assert code == 0, err
    predicted = {(i, e["type"], e["start"], e["end"])
                 for i, line in enumerate(out.splitlines()) for e in json.loads(line)["entities"]}
    correct = len(gold & predicted)
    validation = metrics["validation"]
    assert (validation["gold_entities"], validation["predicted_entities"], validation["correct_entities"]) == (
        len(gold), len(predicted), correct)
    precision, recall = correct / max(len(predicted), 1), correct / len(gold)
    assert validation["precision"] == pytest.approx(precision)
    assert validation["recall"] == pytest.approx(recall)
    assert validation["f1"] == pytest.approx(2 * precision * recall / (precision + recall) if correct else 0)


def normalize_answer(text):
    """SQuAD v1.1's evaluation script: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def squad_f1(prediction, answer):
    prediction, answer = normalize_answer(prediction).split(), normalize_answer(answer).split()
    common = sum((Counter(prediction) & Counter(answer)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(answer)
    return 2 * precision * recall / (precision + recall)


def test_qa_train_json(tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811 (the fixture)
    squad = json.loads(write_squad(tmp_path / "squad.json").read_text())
    metrics = train("qa", ["--data", "squad.json", "--init", str(tiny_init), "--batch-size", "4", "--doc-stride", "3",
                           "--validation-articles", "1"], tmp_path, monkeypatch, capsys)
    assert (metrics["train_questions"], metrics["validation_questions"]) == (6, 3)
    # The validation scores, recomputed by SQuAD v1.1's definition from the run's validation answers.
    predictions = json.loads((tmp_path / "run" / "validation_predictions.json").read_text())
    answers = {qa["id"]: [a["text"] for a in qa["answers"]]
               for article in squad["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
    assert len(predictions) == 3 and set(predictions) <= set(answers)
    exact = [max(normalize_answer(predictions[i]) == normalize_answer(a) for a in answers[i]) for i in predictions]
    f1 = [max(squad_f1(predictions[i], a) for a in answers[i]) for i in predictions]
    validation = metrics["validation"]
    assert validation["questions"] == 3 and validation["missing"] == 0
    assert validation["exact_match"] == pytest.approx(100 * np.mean(exact))
    assert validation["f1"] == pytest.approx(100 * np.mean(f1))
