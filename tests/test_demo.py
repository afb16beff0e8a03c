"""apps/demo.py end to end on a tiny config: fine-tune, evaluate, export to TFLite, run the edge runner."""

import json

import keras
import pytest

from kbert.paths import samples_dir
from tests.conftest import TESTS, run_python

DEMO = TESTS.parent / "apps" / "demo.py"
ROWS = ["Keras (tensorflow)", "TFLite fp32", "TFLite dynamic-int8"]


@pytest.mark.skipif(keras.config.backend() != "tensorflow",
                    reason="runs once, under TensorFlow (export needs it; on JAX or torch the demo exports "
                    "through apps/export.py, which tests/export covers)")
def test_demo_runs_on_the_shipped_sample(tmp_path):
    out = tmp_path / "demo"
    sentences = ["A fine, warm film.", "Dull.", "\u200b "]  # the last has no token: no label (issue 43)
    result = run_python(DEMO, "--init", "bert_tiny", "--minutes", 2, "--epochs", 1, "--max-length", 32,
                        "--repeats", 2, "--data", samples_dir() / "sentiment_sample.tsv", "--out", out, "--json",
                        *sentences, backend="tensorflow")
    for name in ("model.keras", "README.md", "validation.tsv", "tflite_fp32/text.tflite", "tflite_int8/text.tflite"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "demo.json").read_text())
    assert [json.loads(line) for line in result.stdout.splitlines()] == [summary]  # --json: stdout is JSON only
    assert "oneDNN" not in result.stderr  # TensorFlow's start-up lines: only with --verbose
    rows, predictions = summary["rows"], summary["predictions"]
    assert list(rows) == ROWS
    assert summary["run"]["validation_examples"] == 40  # a fifth of the 200 sentences
    # The plan: training steps timed first, the steps sized to the budget (issue 40), said before and after; the
    # fit's TimeBudget re-plans as it runs (issue 55; tests/training/test_time_budget.py): here all 5 steps fit.
    plan = summary["plan"]
    assert summary["run"]["train_examples"] == plan["sentences"] == plan["sentences_trained"] == 160
    assert plan["steps"] == plan["steps_trained"] == 5 and plan["replans"] == [[5, plan["replans"][0][1], 5]]
    assert plan["seconds_per_step"] > 0 and summary["budget_minutes"] == 2
    assert "Plan: 5 steps of 32 (160 of 160 training sentences, 1.0 of at most 1 pass(es))" in result.stderr
    assert "Fine-tuned 5 steps (first plan 5; re-planned from the steps' own time 1 time(s))" in result.stderr
    assert f"; budget 2 min (" in result.stderr
    assert "deprecated" not in result.stderr  # tf.lite.Interpreter's warning: the export checks with LiteRT (issue 55)
    assert summary["machine"]["cores"] >= 1 and summary["precision"] == "float32"  # auto: float32 off torch
    assert "(--precision auto: float32 on tensorflow" in result.stderr
    for name in ROWS:
        assert 0 <= rows[name]["accuracy"] <= 1 and rows[name]["latency_ms"] > 0, name
        assert f"{name:22} {rows[name]['accuracy']:>9.2%}" in result.stderr  # the table, for people
    assert rows["TFLite dynamic-int8"]["size"] < rows["TFLite fp32"]["size"] / 2
    # What the demo says of model.keras holds: the weights (and the tokenizer), not the optimizer's state
    # (AdamW's two moments would double the file; issue 22 found a stale note saying it held them).
    keras_row = rows["Keras (tensorflow)"]
    assert keras_row["weights"] < keras_row["size"] < 1.3 * keras_row["weights"]
    assert "not the optimizer's state" in result.stderr and "also holds the optimizer" not in result.stderr
    # The fp32 export gives the Keras model's answers on raw text, through the edge runner.
    for keras_answer, edge_answer in zip(predictions["Keras"], predictions["TFLite fp32"]):
        assert edge_answer["label"] == keras_answer["label"]
        assert keras_answer["label"] is None or abs(edge_answer["probability"] - keras_answer["probability"]) < 1e-4
    assert len(predictions["TFLite dynamic-int8"]) == len(sentences)
    assert all(answers[2]["label"] is None and answers[1]["label"] is not None for answers in predictions.values())
    # Beside the showcase, how far to trust its labels: the run's validation accuracy (issue 22).
    lines = result.stderr.splitlines()
    showcase = lines.index(f"{len(sentences)} raw sentences (label and probability):")
    accuracy = json.loads((out / "metrics.json").read_text())["validation"]["accuracy"]
    assert [line.split()[0] for line in lines[showcase + 2 : showcase + 4]] == ["A", "Dull."]
    assert lines[showcase + 2 + len(sentences)] == (
        f"validation accuracy {100 * accuracy:.1f}% on 40 held-out sentences (the fine-tuned Keras model)")


def test_the_demo_trains_on_torch_in_bfloat16_unless_told_otherwise(monkeypatch):
    monkeypatch.syspath_prepend(str(DEMO.parent))
    import demo

    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    assert demo.parser().parse_args([]).backend == "torch"  # the recipe measured fastest (docs/results.md)
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert demo.parser().parse_args([]).backend == "jax"  # the user's choice wins
    assert demo.parser().parse_args(["--backend", "tensorflow"]).backend == "tensorflow"
    assert demo.parser().parse_args([]).limit is None  # all of the training sentences
    assert demo.parser().parse_args([]).epochs is None  # up to BUDGET_EPOCHS passes, as the budget allows
