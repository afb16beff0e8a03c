"""Every app, fed bad inputs: a non-zero exit, one line naming the problem, no traceback, nothing
written, the previous output intact (issue 21). And a few inputs near the edge that must work.

The apps run in this process (`cli_errors.run(main, argv)`, as their `__main__` does) on tiny run
folders saved without training. Backend-independent: runs under TensorFlow only.
"""

import doctest
import functools
import hashlib
import importlib
import io
import json
import os
import re
import subprocess
import sys

import keras
import pytest

from kbert.tasks import BertClassifier, BertQuestionAnswerer, BertTokenClassifier
from kbert.tasks.bert_question_answerer_preprocessor import BertQuestionAnswererPreprocessor
from kbert.recipes import NLI, SENTIMENT
from kbert.saving import claim_run_folder
from tests.conftest import APPS as APPS_FOLDER, app_module
from tests.tasks.conftest import tiny_init, write_nli_tsv, write_sentiment_tsv  # noqa: F401 (a fixture)
from tests.recipes.conftest import write_conll, write_squad

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")

cli_errors = app_module("cli_errors")
sentence_main = app_module("sentence_cli").main
APPS = {
    **{name: functools.partial(sentence_main, name) for name in ("sentiment", "nli", "similarity")},
    **{name: app_module(name).main for name in ("ner", "qa", "pretrain", "embed", "demo", "export")},
}
BAD_UTF8 = b"sentence\tlabel\na good film\t1\nan \xff film\t0\n"


@pytest.fixture(scope="module")
def workspace(tiny_init, tmp_path_factory):  # noqa: F811 (the imported fixture)
    """Data files and run folders of every task (saved untrained), in one folder."""
    ws = tmp_path_factory.mktemp("workspace")
    write_sentiment_tsv(ws / "sentiment.tsv", rows=16)
    write_nli_tsv(ws / "nli.tsv", rows=12)
    write_nli_tsv(ws / "sts.tsv", rows=12, regression=True)
    write_conll(ws / "conll.txt", sentences=6)
    write_squad(ws / "squad.json")
    (ws / "bad_utf8.tsv").write_bytes(BAD_UTF8)
    (ws / "bad_utf8.txt").write_bytes(b"the man plays.\nsomeone \xfe sleeps.\n")
    (ws / "bad_utf8.conll").write_bytes(b"a O\nm\xfean B-PER\n")
    (ws / "empty.txt").write_text("")
    (ws / "context.txt").write_text("the man plays a film . someone sleeps .")
    (ws / "corpus.txt").write_text("The cat sat.\nA dog ran.\n\nRain fell.\nShe read.\n")
    (ws / "config.json").write_text("{not json")
    (ws / "typo.json").write_text('{"num_layer": 2}')
    (ws / "heads_text.json").write_text('{"num_heads": "2"}')
    (ws / "heads_zero.json").write_text('{"num_heads": 0}')
    (ws / "huge_class.tsv").write_text("sentence\tlabel\na fine film\t1\na dull film\t99999999999\n")
    (ws / "broken.csv").write_text('sentence,label\na fine film,1\n"a dull, film,0\nfun,1\n')
    (ws / "reviews.csv").write_text("review,sentiment\na fine film,1\na dull film,0\n")
    (ws / "premises.jsonl").write_text('{"premise": "a man plays", "label": "neutral"}\n')
    (ws / "tag_ids.jsonl").write_text('{"tokens": ["a", "man"], "ner_tags": [0, 1]}\n')
    (ws / "reviews.xlsx").write_bytes(b"PK not read")
    squad = json.loads(write_squad(ws / "squad_twice.json").read_text())
    squad["data"][1]["paragraphs"][0]["qas"][0]["id"] = "0-0"  # an id of article 0 again
    (ws / "squad_twice.json").write_text(json.dumps(squad))
    (ws / "a_file").write_text("in the way")
    (ws / "not_a_run").mkdir()
    (ws / "not_a_run" / "notes.txt").write_text("precious")
    pretraining = ws / "pretraining"  # what apps/pretrain.py leaves: a backbone, no model.keras
    pretraining.mkdir()
    (pretraining / "backbone.keras").write_bytes((tiny_init / "backbone.keras").read_bytes())
    (ws / "corrupt").mkdir()
    (ws / "corrupt" / "model.keras").write_text("not a zip")
    save_run(ws / "sentiment_run", "sentiment", BertClassifier.from_preset(
        tiny_init, num_classes=2, label_names=SENTIMENT.label_names, sequence_length=12, compile=False))
    (ws / "sentiment_run" / "logs").mkdir()  # a folder of the run's, as TensorBoard's
    save_run(ws / "nli_run", "nli", BertClassifier.from_preset(
        tiny_init, num_classes=3, label_names=NLI.label_names, sequence_length=12, compile=False))
    save_run(ws / "sts_run", "similarity", BertClassifier.from_preset(
        tiny_init, num_classes=1, sequence_length=12, compile=False))
    (ws / "sts_model_only").mkdir()  # a model.keras saved from Python: no metrics.json names its task
    (ws / "sts_model_only" / "model.keras").write_bytes((ws / "sts_run" / "model.keras").read_bytes())
    save_run(ws / "ner_run", "ner", BertTokenClassifier.from_preset(
        tiny_init, label_names=["O", "B-PER", "I-PER"], sequence_length=12, compile=False))
    (ws / "mixed_run").mkdir()  # a sentiment metrics.json beside an NER model
    (ws / "mixed_run" / "model.keras").write_bytes((ws / "ner_run" / "model.keras").read_bytes())
    (ws / "mixed_run" / "metrics.json").write_text(json.dumps({"task": "sentiment"}))
    qa = BertQuestionAnswerer.from_preset(tiny_init, sequence_length=12, compile=False)
    qa.preprocessor = BertQuestionAnswererPreprocessor(qa.preprocessor.tokenizer, 12, doc_stride=3,
                                                       max_question_length=4)
    save_run(ws / "qa_run", "qa", qa)
    return ws


def save_run(folder, task, model):
    folder.mkdir()
    model.save(folder / "model.keras")
    model.preprocessor.tokenizer.save(folder)
    (folder / "metrics.json").write_text(json.dumps({"task": task}))


def snapshot(folder):
    """{relative path: content hash} of every file and folder under `folder`."""
    return {str(p.relative_to(folder)): p.is_dir() or hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


def call(app, argv, monkeypatch, capsys, stdin=b""):
    """Runs the app as its `__main__` does; returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", [f"apps/{app}.py"])  # argparse's program name
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    try:
        cli_errors.run(APPS[app], argv, prog=f"{app}.py")
        code = 0
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


TRAIN = {  # a valid train command of each task app, on the workspace's files; probes change one thing
    "sentiment": ["train", "--data", "sentiment.tsv", "--out", "new_run"],
    "nli": ["train", "--data", "nli.tsv", "--out", "new_run"],
    "similarity": ["train", "--data", "sts.tsv", "--out", "new_run"],
    "ner": ["train", "--data", "conll.txt", "--out", "new_run"],
    "qa": ["train", "--data", "squad.json", "--out", "new_run", "--validation-articles", "1"],
}
PRETRAIN = ["--corpus", "corpus.txt", "--output", ".", "--run", "pre", "--preset", "bert_tiny", "--steps", "0",
            "--checkpoint-every", "1", "--vocab-size", "60", "--holdout-fraction", "0"]


def train(app, *changes, init="INIT"):
    return [*TRAIN[app], "--init", init, *changes]


def replace(argv, option, value):
    return [value if argv[i - 1] == option else arg for i, arg in enumerate(argv)]


# (app, argv, what the one error line must say). Paths are relative to the workspace; INIT is the tiny backbone.
ERRORS = [
    # arguments: refused by argparse, before anything is read
    *[(app, train(app, option, value), f"argument {option}: expected")
      for app in TRAIN for option, value in [("--batch-size", "0"), ("--max-length", "2")]],
    *[("sentiment", train("sentiment", option, value), f"argument {option}: expected")
      for option, value in [("--epochs", "0"), ("--lr", "-1"), ("--lr", "nan"), ("--lr", "inf"), ("--limit", "0"),
                            ("--validation-fraction", "1"), ("--patience", "-1"), ("--lora-rank", "0"),
                            ("--progress", "3")]],
    ("sentiment", train("sentiment", "--labels", "good,,bad"), "argument --labels: expected"),
    ("nli", train("nli", "--labels", "a,a,b"), "argument --labels: expected"),
    ("ner", train("ner", "--limit", "-5"), "argument --limit: expected"),
    ("sentiment", train("sentiment", "--class-weight", "positive=x"), "argument --class-weight: expected a finite"),
    ("ner", train("ner", "--class-weight", "B-PER"), "argument --class-weight: expected 'balanced' or NAME=WEIGHT"),
    ("qa", train("qa", "--doc-stride", "0"), "argument --doc-stride: expected"),
    ("qa", train("qa", "--validation-articles", "0"), "argument --validation-articles: expected"),
    ("sentiment", ["evaluate", "--model", "sentiment_run", "--data", "sentiment.tsv", "--batch-size", "0"],
     "argument --batch-size: expected"),
    ("ner", ["predict", "--model", "ner_run", "--batch-size", "-1", "x"], "argument --batch-size: expected"),
    ("qa", ["predict", "--model", "qa_run", "--context", "a b", "--question", "q", "--n-best", "0"],
     "argument --n-best: expected"),
    # --out: refused before training, where the trained model would have been lost
    *[(app, replace(train(app), "--out", "a_file/run"), "a_file is a file, not a folder") for app in TRAIN],
    ("sentiment", replace(train("sentiment"), "--out", "a_file"), "a_file is a file, not a run folder"),
    ("nli", replace(train("nli"), "--out", "/sys/kbert_run"), "cannot write in /sys"),  # even as root
    ("ner", replace(train("ner"), "--out", "not_a_run"), "holds files but no model.keras"),
    ("sentiment", replace(train("sentiment"), "--out", "busy_run"), "busy_run is in use by another run"),
    # training inputs
    ("sentiment", replace(train("sentiment"), "--data", "missing.tsv"), "missing.tsv"),
    ("sentiment", replace(train("sentiment"), "--data", "not_a_run"), "not_a_run"),
    ("sentiment", train("sentiment", "--valid", "missing.tsv"), "missing.tsv"),
    ("nli", train("nli", init="no_such_init"), "'no_such_init' is neither a preset"),
    ("similarity", replace(train("similarity"), "--data", "empty.txt"), "empty.txt"),
    ("sentiment", replace(train("sentiment"), "--data", "bad_utf8.tsv"), "bad_utf8.tsv:3: invalid UTF-8"),
    ("ner", replace(train("ner"), "--data", "bad_utf8.conll"), "bad_utf8.conll:2: invalid UTF-8"),
    ("ner", replace(train("ner"), "--data", "missing.txt"), "missing.txt"),
    ("qa", replace(train("qa"), "--data", "config.json"), "config.json"),
    # data files by format
    ("sentiment", replace(train("sentiment"), "--data", "broken.csv"), "broken.csv:3: cannot read this row"),
    ("sentiment", replace(train("sentiment"), "--data", "reviews.csv"),
     "reviews.csv: no text column: none of ['sentence', 'text'] is a column; its columns are ['review', 'sentiment']"),
    ("sentiment", [*replace(train("sentiment"), "--data", "reviews.csv"), "--text-column", "body"],
     "reviews.csv: no column 'body' (the text column); its columns are ['review', 'sentiment']"),
    ("nli", replace(train("nli"), "--data", "premises.jsonl"), "premises.jsonl: no pair column"),
    ("sentiment", replace(train("sentiment"), "--data", "reviews.xlsx"), "reviews.xlsx: unknown format '.xlsx'"),
    ("ner", replace(train("ner"), "--data", "tag_ids.jsonl"), "tag_ids.jsonl:1: column 'ner_tags' holds tag ids (0)"),
    ("ner", train("ner", "--class-weight", "B-ORG=2"),
     "class_weight has the key 'B-ORG', which is neither a class name of ['O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER']"),
    ("sentiment", train("sentiment", "--class-weight", "2=1.5"), "class_weight has the key 2, which is neither"),
    # run folders given to evaluate and predict
    ("nli", ["predict", "--model", "sentiment_run", "--premise", "a", "--hypothesis", "b"],
     "sentiment_run is a run folder of sentiment, not of nli"),
    ("sentiment", ["predict", "--model", "nli_run", "a film"], "nli_run is a run folder of nli, not of sentiment"),
    ("sentiment", ["evaluate", "--model", "sts_run", "--data", "sentiment.tsv"], "of similarity, not of sentiment"),
    ("similarity", ["predict", "--model", "nli_run", "--premise", "a", "--hypothesis", "b"], "of nli"),
    ("sentiment", ["predict", "--model", "sts_model_only", "a"], "predicts a score (regression), not classes"),
    ("sentiment", ["predict", "--model", "ner_run/model.keras", "a"], "a file, not a folder"),
    ("ner", ["predict", "--model", "qa_run", "a man"], "qa_run is a run folder of qa, not of ner"),
    ("sentiment", ["predict", "--model", "mixed_run", "a"],
     "mixed_run: its model.keras holds a BertTokenClassifier, not the BertClassifier of a sentiment run"),
    ("qa", ["predict", "--model", "ner_run", "--context", "a b", "--question", "q"], "of ner, not of qa"),
    ("sentiment", ["predict", "--model", "missing_run", "a"], "missing_run: no such folder"),
    ("sentiment", ["predict", "--model", "a_file", "a"], "a_file: a file, not a folder"),
    ("ner", ["evaluate", "--model", "pretraining", "--data", "conll.txt"], "a pretraining run (backbone.keras)"),
    ("qa", ["evaluate", "--model", "not_a_run", "--data", "squad.json"], "no model.keras in it"),
    ("sentiment", ["predict", "--model", "corrupt", "a"], "is not a Keras model file"),
    ("sentiment", ["evaluate", "--model", "sentiment_run", "--data", "missing.tsv"], "missing.tsv"),
    ("sentiment", ["evaluate", "--model", "sentiment_run", "--data", "sentiment.tsv", "--out", "a_file/x.json"],
     "a_file is a file, not a folder"),
    ("ner", ["evaluate", "--model", "ner_run", "--data", "conll.txt", "--out", "a_file/x.json"],
     "a_file is a file, not a folder"),
    # predict inputs
    ("sentiment", ["predict", "--model", "sentiment_run"], "Nothing to predict"),  # empty stdin
    ("ner", ["predict", "--model", "ner_run"], "Nothing to predict"),
    ("nli", ["predict", "--model", "nli_run", "--premise", "a", "--premise", "b", "--hypothesis", "c"],
     "one --hypothesis for each --premise"),
    ("sentiment", ["predict", "--model", "sentiment_run"], "stdin:2: invalid UTF-8: byte 0xff at column 4",
     b"a fine film\nan \xff film\n"),
    ("nli", ["predict", "--model", "nli_run"], "stdin, line 1: expected premise<TAB>hypothesis", b"no tab\n"),
    ("qa", ["predict", "--model", "qa_run", "--context", "missing.txt", "--question", "who?"],
     "--context missing.txt: no such file"),
    ("qa", ["predict", "--model", "qa_run", "--context", "docs/article", "--question", "who?"],
     "--context docs/article: no such file"),
    ("qa", ["predict", "--model", "qa_run", "--context", "not_a_run", "--question", "who?"], "is a folder"),
    ("qa", ["predict", "--model", "qa_run", "--context", "", "--question", "who?"], "--context is empty"),
    ("qa", ["predict", "--model", "qa_run", "--context", "empty.txt", "--question", "who?"], "context file is empty"),
    ("qa", ["predict", "--model", "qa_run", "--context", "bad_utf8.txt", "--question", "who?"],
     "bad_utf8.txt:2: invalid UTF-8: byte 0xfe at column 9"),
    ("qa", ["predict", "--model", "qa_run", "--context", "a b c", "--question", " "],
     "Question 1 is empty"),
    ("qa", ["predict", "--model", "qa_run", "--question", "who?"], "--question needs a --context"),
    ("qa", ["predict", "--model", "qa_run"], "stdin:2: expected a JSON object with a \"question\" and a \"context\"",
     b'{"question": "who?", "context": "a man"}\n{"question": "who?"}\n'),
    ("qa", ["predict", "--model", "qa_run"], "Nothing to predict"),
    # pretraining
    *[("pretrain", replace(PRETRAIN, option, value), f"argument {option}: expected")
      for option, value in [("--steps", "-1"), ("--checkpoint-every", "0"), ("--vocab-size", "0")]],
    *[("pretrain", [*PRETRAIN, option, value], f"argument {option}: expected")
      for option, value in [("--batch-size", "0"), ("--seq-len", "2"), ("--lr", "0"), ("--warmup-ratio", "1.5"),
                            ("--holdout-fraction", "1.5"), ("--duplication-factor", "-2")]],
    ("pretrain", replace(replace(PRETRAIN, "--steps", "5"), "--checkpoint-every", "2"),
     "--steps 5 is not a multiple of --checkpoint-every 2"),
    *[("pretrain", replace(PRETRAIN, "--run", run), f"--run {run!r}: give a name") for run in ["", "..", "a/../b"]],
    ("pretrain", replace(PRETRAIN, "--corpus", "missing.txt"), "--corpus missing.txt: no such file"),
    ("pretrain", replace(PRETRAIN, "--corpus", "missing*.txt"), "--corpus missing*.txt: the pattern matches no file"),
    ("pretrain", replace(PRETRAIN, "--holdout-fraction", "1"), "the training split is empty"),
    ("pretrain", replace(PRETRAIN, "--corpus", "not_a_run"), "--corpus not_a_run: a folder"),
    ("pretrain", replace(PRETRAIN, "--corpus", "bad_utf8.txt"), "bad_utf8.txt:2: invalid UTF-8"),
    ("pretrain", [*PRETRAIN, "--vocab", "missing_vocab.txt"], "--vocab missing_vocab.txt: neither"),
    ("pretrain", [*PRETRAIN, "--config", "config.json"], "--config config.json: not a JSON file"),
    ("pretrain", [*PRETRAIN, "--config", "missing.json"], "--config missing.json: no such file"),
    ("pretrain", [*PRETRAIN, "--config", "typo.json"], "--config typo.json: Unknown BertConfig field(s) ['num_layer']"),
    # issue 43: a TypeError and a ZeroDivisionError, with settings.json and vocab.txt left behind
    ("pretrain", [*PRETRAIN, "--config", "heads_text.json"], "BertConfig.num_heads must be a positive integer, not '2'"),
    ("pretrain", [*PRETRAIN, "--config", "heads_zero.json"], "BertConfig.num_heads must be a positive integer, not 0"),
    ("pretrain", replace(PRETRAIN, "--run", "sentiment_run"), "holds a fine-tuned model"),
    ("pretrain", [*replace(PRETRAIN, "--run", "not_a_run"), "--restart"], "not a pretraining run folder"),
    ("pretrain", replace(PRETRAIN, "--output", "a_file"), "a_file is a file, not a folder"),
    ("pretrain", replace(PRETRAIN, "--run", "busy_run"), "busy_run is in use by another run"),
    ("pretrain", replace(PRETRAIN, "--output", "/sys"), "cannot write in /sys"),
    # issue 43: silent wrong results (10^11 classes made; one question fewer scored than reported)
    ("sentiment", replace(train("sentiment"), "--data", "huge_class.tsv"),
     "huge_class.tsv:3: unknown label '99999999999'; the labels are ['negative', 'positive'] (or ids 0..1)"),
    ("qa", ["evaluate", "--model", "qa_run", "--data", "squad_twice.json"],
     "question 0-0: the question id '0-0' is also the id of the question in article 'article 0'"),
    # sentence embeddings, the demo, the export
    ("embed", ["--file", "missing.txt"], "missing.txt: No such file"),
    ("embed", ["--file", "bad_utf8.txt"], "bad_utf8.txt:2: invalid UTF-8: byte 0xfe at column 9"),
    ("embed", ["--max-length", "2"], "argument --max-length: expected"),
    ("embed", ["only one"], "at least two sentences"),
    ("embed", ["a", "--examples"], "one of them"),
    ("embed", ["--save", "a_file/vectors.npy", "a"], "a_file is a file, not a folder"),
    ("embed", ["--save", "not_a_run", "a", "b"], "not_a_run: a folder, not a file"),  # issue 43: .partial left
    *[("demo", [option, value], f"argument {option}: expected")
      for option, value in [("--limit", "0"), ("--epochs", "0"), ("--valid-size", "-1"), ("--max-length", "1"),
                            ("--batch-size", "0"), ("--learning-rate", "0"), ("--repeats", "0")]],
    ("demo", ["--backend", "cuda"], "argument --backend: invalid choice: 'cuda'"),
    ("demo", ["--precision", "half"], "argument --precision: invalid choice: 'half'"),
    ("demo", ["--out", "a_file/demo", "--init", "bert_tiny"], "a_file is a file, not a folder"),
    ("demo", ["--out", "not_a_run", "--init", "bert_tiny"], "holds files but no model.keras"),
    ("demo", ["--out", "demo", "--data", "missing.tsv", "--init", "bert_tiny"], "missing.tsv"),
    ("export", ["--model", "missing_run", "--format", "tflite", "--out", "exported"], "missing_run"),
    ("export", ["--model", "sentiment_run", "--format", "saved_model", "--quantize", "float16", "--out", "exported"],
     "--quantize applies to --format tflite and onnx only"),
    # outputs that would replace what the user owns (issue 43: export replaced them all, exit 0)
    *[("export", ["--model", "sentiment_run", "--format", "tflite", "--out", out], message) for out, message in [
        ("not_a_run", "--out not_a_run: it exists and is not an export folder that kbert wrote: not replaced "
                      "(it holds notes.txt)"),
        ("a_file", "--out a_file: it exists and is not an export folder"),
        ("nli_run", "--out nli_run: it exists and is not an export folder"),
        ("sentiment_run", "is, holds or lies in the folder of --model sentiment_run"),
        (".", "is, holds or lies in the folder of --model sentiment_run"),
        ("sentiment_run/logs", "is, holds or lies in the folder of --model sentiment_run")]],
    ("export", ["--model", "sentiment_run", "--format", "tflite", "--out", "sentiment_run", "--overwrite"],
     "is, holds or lies in the folder of --model sentiment_run"),
    ("export", ["--model", "sentiment_run/model.keras", "--format", "tflite", "--out", "sentiment_run/model.keras",
                "--overwrite"], "is, holds or lies in the folder of --model sentiment_run/model.keras"),
    *[("sentiment", ["evaluate", "--model", "sentiment_run", "--data", "sentiment.tsv", "--out", out], message)
      for out, message in [
          ("sentiment_run/model.keras", "--out sentiment_run/model.keras: it exists and is not an evaluation file"),
          ("sentiment_run/metrics.json", "--out sentiment_run/metrics.json: it exists and is not an evaluation file"),
          ("not_a_run", "--out not_a_run: it exists and is not an evaluation file")]],
]


ERRORS = [(*probe, b"")[:4] for probe in ERRORS]  # (app, argv, message, stdin)


@pytest.mark.parametrize("app, argv, message, stdin", ERRORS, ids=[f"{a}:{' '.join(v)[-60:]}" for a, v, *_ in ERRORS])
def test_bad_input_gets_one_clear_line_and_changes_nothing(app, argv, message, stdin, workspace,
                                                           tiny_init, monkeypatch, capsys):  # noqa: F811
    monkeypatch.chdir(workspace)
    argv = [str(tiny_init) if arg == "INIT" else arg for arg in argv]
    before = snapshot(workspace)
    with claim_run_folder(workspace / "busy_run"):  # another run, writing busy_run
        code, out, err = call(app, argv, monkeypatch, capsys, stdin)
    assert code not in (0, None), out
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if re.match(rf"{app}\.py( \w+)?: error: ", line)]
    assert len(lines) == 1 and err.rstrip().endswith(lines[0]), err
    assert message in lines[0]
    assert snapshot(workspace) == before  # nothing written, nothing left half-written, nothing lost


def test_a_traceback_only_with_debug(workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    with pytest.raises(FileNotFoundError):
        call("embed", ["--debug", "--file", "missing.txt"], monkeypatch, capsys)
    code, _, err = call("embed", ["--file", "missing.txt"], monkeypatch, capsys)
    assert code == 2 and err == "embed.py: error: missing.txt: No such file or directory\n"
    code, _, err = call("qa", ["predict", "--context", "x", "--question", "who?"], monkeypatch, capsys)
    assert code == 2 and "usage:" in err and "the following arguments are required: --model" in err


def test_an_unforeseen_error_is_one_line_too(monkeypatch, capsys):
    def main(argv):
        raise RuntimeError("boom\nand more")

    with pytest.raises(SystemExit) as exit:
        cli_errors.run(main, [], prog="app.py")
    assert exit.value.code == 1
    assert capsys.readouterr().err == ("app.py: error: RuntimeError: boom and more "
                                       "(run with --debug for the traceback)\n")
    with pytest.raises(SystemExit) as exit:
        cli_errors.run(lambda argv: (_ for _ in ()).throw(KeyboardInterrupt), [], prog="app.py")
    assert exit.value.code == 130


# (app, argv, stdin, what stdout must hold): inputs near an edge that must be answered.
ANSWERS = [
    ("sentiment", ["predict", "--model", "sentiment_run", "--json", "--debug"], b"a good film\n\nfun\n",
     '"label": null'),
    ("nli", ["predict", "--model", "nli_run", "--json", "--premise", "a man", "--hypothesis", "nobody"], b"",
     '"pair": "nobody"'),
    ("similarity", ["predict", "--model", "sts_run", "--json"], b"a man\tsomeone\n", '"score"'),
    ("ner", ["predict", "--model", "ner_run", "--json", "a man plays"], b"", '"entities"'),
    ("qa", ["predict", "--model", "qa_run", "--json", "--context", "context.txt", "--question", "who plays ?"], b"",
     '"question": "who plays ?"'),
    ("qa", ["predict", "--model", "qa_run", "--json", "--context", "the man/woman plays a film and / sleeps " * 30,
            "--question", "who?"], b"", '"question": "who?"'),  # long, with slashes: the text itself
    ("qa", ["predict", "--model", "qa_run", "--json", "--context", "context.txt"], b"who plays ?\nwho sleeps ?\n",
     '"question": "who sleeps ?"'),  # questions on stdin
    ("qa", ["predict", "--model", "qa_run", "--json"], b'{"question": "who?", "context": "a man plays ."}\n',
     '"question": "who?"'),  # JSON lines on stdin
]


@pytest.mark.parametrize("app, argv, stdin, expected", ANSWERS, ids=[a for a, *_ in ANSWERS])
def test_inputs_near_the_edge_are_answered(app, argv, stdin, expected, workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace)
    before = snapshot(workspace)
    code, out, err = call(app, argv, monkeypatch, capsys, stdin)
    assert code == 0 and expected in out, err
    assert snapshot(workspace) == before


def test_a_run_writes_its_folder_after_the_checks_and_leaves_no_lock(tiny_init, tmp_path, monkeypatch,  # noqa: F811
                                                                     capsys):
    monkeypatch.chdir(tmp_path)
    write_sentiment_tsv(tmp_path / "sentiment.tsv", rows=16)
    code, _, err = call("sentiment", [*train("sentiment", init=str(tiny_init)), "--epochs", "1", "--batch-size", "8",
                                      "--progress", "0", "--out", "runs/new/run"], monkeypatch, capsys)
    assert code == 0, err
    assert (tmp_path / "runs" / "new" / "run" / "model.keras").is_file()
    assert sorted(p.name for p in (tmp_path / "runs" / "new").iterdir()) == ["run"]  # no lock file left


def test_the_script_itself_exits_with_one_line(tmp_path):
    """`python apps/X.py` goes through `cli_errors.run` (the edge runner: no TensorFlow to import, fast)."""
    result = subprocess.run([sys.executable, str(APPS_FOLDER / "edge_predict.py"), str(tmp_path / "x.tflite"), "a"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    missing = tmp_path / "export.json"
    assert result.stderr.splitlines()[-1] == f"edge_predict.py: error: {missing}: No such file or directory"


def test_a_lock_left_by_a_killed_run_blocks_nobody(tmp_path):
    (tmp_path / ".run.lock").write_text("999999\n")  # as kill -9 leaves it: a file, no flock held
    with claim_run_folder(tmp_path / "run"):
        assert (tmp_path / ".run.lock").read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / ".run.lock").exists()


@pytest.mark.parametrize("name", ["cli_errors", "task_cli", "app_cli", "demo", "run_checks"])
def test_docstring_examples_of_the_shared_app_modules(name):
    module = importlib.import_module(name)  # as the apps import it (app_module put apps/ on sys.path)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
