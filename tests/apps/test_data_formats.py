"""Every task app trains, evaluates and predicts from CSV, JSON Lines and Parquet versions of its TSV, CoNLL or
SQuAD files (written here by pandas), with Hugging Face's column names read by default and others by flags: the
metrics of an evaluation on each version are those on today's file. Backend-independent: TensorFlow only."""

import json

import pandas as pd
import pytest

from kbert.data.readers.conll import read_conll
from tests.apps.test_app_errors import APPS, call
from tests.conftest import ONCE_ON_TORCH
from tests.data.readers.test_squad import squad_rows
from tests.data.readers.test_tagged_table import CONLL2003_TAGS, conll2003_dataset
from tests.recipes.conftest import write_conll, write_squad
from tests.tasks.conftest import tiny_init, write_nli_tsv, write_sentiment_tsv  # noqa: F401 (a fixture)

pytestmark = ONCE_ON_TORCH

QUICK = ["--epochs", "1", "--batch-size", "8", "--quiet", "--json"]


def run_app(app, argv, monkeypatch, capsys, stdin=b""):
    code, out, err = call(app, argv, monkeypatch, capsys, stdin)
    assert code == 0, err
    return out


def scores(metrics):
    """An evaluation's scores, without what names its files."""
    return {key: value for key, value in metrics.items() if key not in ("data", "model", "seconds", "out")}


def evaluations(app, run, files, flags, monkeypatch, capsys):
    """The scores of `evaluate --json` of `run` on each file (with the flags of its layout)."""
    return [scores(json.loads(run_app(app, ["evaluate", "--model", str(run), "--data", str(path), "--json",
                                            "--out", str(path) + ".eval.json", *flags.get(path.suffix, [])],
                                      monkeypatch, capsys)))
            for path in files]


@pytest.mark.parametrize("app, num_texts", [("sentiment", 1), ("nli", 2)])  # similarity: nli's code, scores
def test_sentence_apps(app, num_texts, tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811
    tsv = tmp_path / "data.tsv"
    write_sentiment_tsv(tsv, rows=24) if num_texts == 1 else write_nli_tsv(tsv, rows=18)
    frame = pd.read_csv(tsv, sep="\t", dtype=str, quoting=3)
    renamed = frame.set_axis(["review", "verdict"] if num_texts == 1 else ["premise_text", "claim", "gold"], axis=1)
    renamed.to_csv(tmp_path / "data.csv", index=False)  # the user's own names: flags
    frame.to_json(tmp_path / "data.jsonl", orient="records", lines=True)  # GLUE's names: read by default
    frame.to_parquet(tmp_path / "data.parquet")
    flags = {".csv": ["--text-column", "review", "--label-column", "verdict"] if num_texts == 1 else
             ["--text-column", "premise_text", "--pair-column", "claim", "--label-column", "gold"]}
    run = tmp_path / "run"
    run_app(app, ["train", "--data", str(tmp_path / "data.parquet"), "--init", str(tiny_init), "--out", str(run),
                  *QUICK], monkeypatch, capsys)
    files = [tsv, tmp_path / "data.csv", tmp_path / "data.jsonl", tmp_path / "data.parquet"]
    on_tsv, *on_others = evaluations(app, run, files, flags, monkeypatch, capsys)
    assert on_tsv["examples"] == len(frame) and all(other == on_tsv for other in on_others)
    if num_texts == 1:
        by_data = run_app(app, ["predict", "--model", str(run), "--json", "--data", str(tmp_path / "data.csv"),
                                *flags[".csv"][:2]], monkeypatch, capsys)
        by_texts = run_app(app, ["predict", "--model", str(run), "--json", *frame["sentence"]], monkeypatch, capsys)
    else:
        by_data = run_app(app, ["predict", "--model", str(run), "--json", "--data", str(tmp_path / "data.jsonl")],
                          monkeypatch, capsys)
        stdin = "".join(f"{a.strip()}\t{b.strip()}\n" for a, b in zip(frame["sentence1"], frame["sentence2"])).encode()
        by_texts = run_app(app, ["predict", "--model", str(run), "--json"], monkeypatch, capsys, stdin)
    assert by_data == by_texts and by_data.count("\n") == len(frame)


def test_ner_app(tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811
    """conll2003's layout: tokens and ner_tags ids, named by --tag-names (JSON Lines) or the file itself (Parquet)."""
    conll = tmp_path / "conll.txt"
    write_conll(conll, sentences=12)
    sentences = read_conll(conll)
    dataset = conll2003_dataset(sentences)
    dataset.to_json(tmp_path / "conll.jsonl")
    dataset.to_parquet(tmp_path / "conll.parquet")
    tag_names = ["--tag-names", ",".join(CONLL2003_TAGS)]
    run = tmp_path / "run"
    run_app("ner", ["train", "--data", str(tmp_path / "conll.jsonl"), *tag_names, "--init", str(tiny_init), "--out",
                    str(run), *QUICK], monkeypatch, capsys)
    on_conll, *on_tables = evaluations("ner", run, [conll, tmp_path / "conll.jsonl", tmp_path / "conll.parquet"],
                                       {".jsonl": tag_names}, monkeypatch, capsys)
    assert on_conll["sentences"] == len(sentences) and all(other == on_conll for other in on_tables)


def test_qa_app(tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811
    squad = tmp_path / "squad.json"
    write_squad(squad)
    frame = pd.DataFrame(squad_rows(json.loads(squad.read_text())))
    frame.to_json(tmp_path / "squad.jsonl", orient="records", lines=True)
    frame.rename(columns={"question": "query"}).to_parquet(tmp_path / "squad.parquet")
    run = tmp_path / "run"
    run_app("qa", ["train", "--data", str(tmp_path / "squad.jsonl"), "--validation-articles", "1", "--max-length",
                   "12", "--doc-stride", "4", "--max-question-length", "4", "--init", str(tiny_init), "--out",
                   str(run), *QUICK], monkeypatch, capsys)
    on_squad, *on_tables = evaluations("qa", run, [squad, tmp_path / "squad.jsonl", tmp_path / "squad.parquet"],
                                       {".parquet": ["--question-column", "query"]}, monkeypatch, capsys)
    assert on_squad["questions"] == len(frame) and all(other == on_squad for other in on_tables)


def test_embed_app(tiny_init, tmp_path, monkeypatch, capsys):  # noqa: F811
    tsv = tmp_path / "sts.tsv"
    write_nli_tsv(tsv, rows=18, regression=True)
    frame = pd.read_csv(tsv, sep="\t", dtype=str, quoting=3)
    frame.set_axis(["a", "b", "score"], axis=1).to_csv(tmp_path / "sts.csv", sep=";", index=False)
    frame.to_parquet(tmp_path / "sts.parquet")
    run = tmp_path / "run"
    run_app("embed", ["train", "--data", str(tmp_path / "sts.parquet"), "--init", str(tiny_init), "--out", str(run),
                      *QUICK], monkeypatch, capsys)
    flags = {".csv": ["--delimiter", ";", "--text-column", "a", "--pair-column", "b"]}
    on_tsv, *on_tables = evaluations("embed", run, [tsv, tmp_path / "sts.csv", tmp_path / "sts.parquet"], flags,
                                     monkeypatch, capsys)
    assert on_tsv["pairs"] == len(frame) and all(other == on_tsv for other in on_tables)
