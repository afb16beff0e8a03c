"""apps/embed.py train and evaluate (kbert.recipes.embedding): a bi-encoder run folder on scored pairs (cosine) and
on labelled pairs (ranking), its Spearman against scipy's on the saved model, and bad input refused before training.
Backend-independent (the model is tested on every backend in tests/tasks/test_bert_sentence_encoder.py): runs once."""

import json

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from kbert.data import TsvFormatError
from kbert.data.readers.sentence_tsv import read_sentence_tsv
from kbert.saving import load_run
from tests.conftest import ONCE_ON_TORCH, app_module
from tests.tasks.conftest import WORDS, write_nli_tsv

pytestmark = ONCE_ON_TORCH
main = app_module("embed").main


def write_scored_pairs(path, rows=40, seed=0):
    """Scored pairs (0 to 5) of distinct random texts: no two pairs alike, so no tied similarities whose order
    rounding could decide."""
    rng = np.random.default_rng(seed)
    text = lambda: " ".join(rng.choice(WORDS, size=rng.integers(2, 7)))  # noqa: E731
    path.write_text("sentence1\tsentence2\tscore\n" + "".join(
        f"{text()}\t{text()}\t{rng.uniform(0, 5):.3f}\n" for _ in range(rows)))
    return path


def test_cosine_run_trains_evaluates_and_embeds(tiny_init, tmp_path, capsys):
    data = write_scored_pairs(tmp_path / "sts.tsv")
    run = tmp_path / "run"
    main(["train", "--data", str(data), "--init", str(tiny_init), "--out", str(run), "--epochs", "2",
          "--batch-size", "4", "--lr", "1e-3", "--max-length", "8", "--progress", "0"])
    printed = capsys.readouterr().out
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["task"] == "embedding" and metrics["objective"] == "cosine"
    assert f"validation Spearman before training {metrics['zero_shot']['spearman']:.4f}" in printed
    assert metrics["train_pairs"] == 36 and metrics["validation"]["pairs"] == 4

    main(["evaluate", "--model", str(run), "--data", str(data), "--quiet"])
    scores = json.loads((run / "eval_sts.json").read_text())
    model = load_run(run)
    pairs = read_sentence_tsv(data, 2, regression=True)
    embeddings = [model.predict(column, verbose=0) for column in (pairs.texts, pairs.pairs)]
    unit = [e / np.linalg.norm(e, axis=-1, keepdims=True) for e in embeddings]
    cosine = np.sum(unit[0] * unit[1], axis=-1)
    assert scores["spearman"] == pytest.approx(spearmanr(cosine, pairs.labels).statistic, abs=1e-4)
    assert scores["pearson"] == pytest.approx(pearsonr(cosine, pairs.labels).statistic, abs=1e-4)

    capsys.readouterr()
    main(["--model", str(run), "--json", pairs.texts[0], pairs.pairs[0]])
    first, second = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert first["nearest"] == 1 and len(first["embedding"]) == 8
    assert first["similarity"] == pytest.approx(float(unit[0][0] @ unit[1][0]), abs=1e-5)  # the first pair's

    long_texts = [" ".join(WORDS), " ".join(WORDS[::-1])]  # cut at the 8 tokens the run trained with
    main(["--model", str(run), "--json", *long_texts])
    embedded = [json.loads(line)["embedding"] for line in capsys.readouterr().out.splitlines()]
    expected = model.predict(long_texts, verbose=0)
    np.testing.assert_allclose(embedded, expected / np.linalg.norm(expected, axis=-1, keepdims=True), atol=1e-6)


def test_ranking_run_trains_on_the_positive_pairs(tiny_init, tmp_path):
    data = write_nli_tsv(tmp_path / "nli.tsv", rows=30)  # a third of the rows are entailment pairs
    valid = write_nli_tsv(tmp_path / "sts.tsv", rows=12, regression=True)
    run = tmp_path / "run"
    main(["train", "--objective", "ranking", "--data", str(data), "--valid", str(valid), "--init", str(tiny_init),
          "--out", str(run), "--batch-size", "4", "--progress", "0"])
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["train_pairs"] == 10 and metrics["positive_label"] == "entailment"
    assert metrics["validation"]["pairs"] == 12 and metrics["steps"] == 3


def test_bad_input_is_refused_before_training(tiny_init, tmp_path):
    data = write_nli_tsv(tmp_path / "nli.tsv", rows=12)
    common = ["--init", str(tiny_init), "--out", str(tmp_path / "run"), "--progress", "0"]
    with pytest.raises(ValueError, match="ranking objective validates on scored pairs: give valid"):
        main(["train", "--objective", "ranking", "--data", str(data), *common])
    with pytest.raises(TsvFormatError, match=r"nli.tsv: no pair is labelled 'paraphrase'"):
        main(["train", "--objective", "ranking", "--data", str(data), "--valid", str(data), "--positive-label",
              "paraphrase", *common])
    scored = write_nli_tsv(tmp_path / "sts.tsv", rows=12, regression=True)  # scores up to 5
    with pytest.raises(TsvFormatError, match=r"sts.tsv:4: the score '2.000' is outside the score range \(0, 1\)"):
        main(["train", "--data", str(scored), "--score-range", "0,1", "--validation-fraction", "0.25", *common])
    with pytest.raises(SystemExit):
        main(["train", "--data", str(scored), "--score-range", "5,0", *common])
    assert not (tmp_path / "run").exists()


def test_a_sentence_transformers_init_keeps_its_pooling_unless_asked(tiny_init, tmp_path):
    from kbert import BertBackbone, BertSentenceEncoder, BertTokenizer
    from kbert.tasks import BertSentenceEncoderPreprocessor

    backbone, tokenizer = BertBackbone.from_preset(tiny_init), BertTokenizer.from_preset(tiny_init)
    folder = tmp_path / "st"
    BertSentenceEncoder(backbone, BertSentenceEncoderPreprocessor(tokenizer, sequence_length=12),
                        pooling="cls").export_to_transformers(folder)
    data = write_scored_pairs(tmp_path / "sts.tsv", rows=24)
    for options, pooling in (([], "cls"), (["--pooling", "max"], "max")):
        run = tmp_path / f"run_{pooling}"
        main(["train", "--data", str(data), "--init", str(folder), "--out", str(run), "--batch-size", "4",
              "--max-length", "12", "--progress", "0", *options])
        assert json.loads((run / "metrics.json").read_text())["pooling"] == pooling
        assert load_run(run).pooling == pooling
