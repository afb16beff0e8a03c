import json
import math
import os
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

import kbert.tasks.bert_classifier
import kbert.training.results
from kbert import BertBackbone
from kbert.data import TsvFormatError, read_sentence_tsv
from kbert.models.compute_dtype import with_compute_dtype
from kbert.saving import BACKBONE_FILE
from kbert.tasks import BertClassifier
from kbert.recipes import NLI, SENTIMENT, SIMILARITY, sentence
from kbert.training import NonFiniteLossError
from tests.conftest import APPS, ONCE_ON_TORCH, TESTS, TINY, app_module, next_backend, run_python
from tests.recipes.conftest import check_run_metrics, record_models
from tests.tasks.conftest import VOCABULARY, write_nli_tsv, write_sentiment_tsv

main = app_module("sentence_cli").main  # the command line of apps/sentiment.py, nli.py, similarity.py
TEXTS = ["a good film", "a dull and boring film", "fun fun fun", "the man is not very fine"]


@pytest.fixture(scope="module")
def sentiment_run(tiny_init, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sentiment")
    data = write_sentiment_tsv(folder / "train.tsv")
    metrics = sentence.train(SENTIMENT, data, tiny_init, folder / "run", epochs=2, batch_size=8,
                                  learning_rate=1e-3, verbose=0)
    return folder / "run", data, metrics


def test_sentiment_in_float16_under_loss_scaling(tiny_init, tmp_path, monkeypatch):
    """mixed_precision="float16" (--mixed-precision float16): a float16 backbone with float32 weights, trained
    through a LossScaleOptimizer; a float32 model in the run folder. Refused under JAX on a CPU (no float16
    attention in XLA's CPU), before any training."""
    from kbert.optimizers.mixed_precision import _computes_on_the_cpu

    built = record_models(monkeypatch, BertClassifier)
    data = write_sentiment_tsv(tmp_path / "train.tsv")

    def train():
        return sentence.train(SENTIMENT, data, tiny_init, tmp_path / "run", epochs=1, batch_size=8,
                              learning_rate=1e-3, mixed_precision="float16", verbose=0)

    if keras.config.backend() == "jax" and _computes_on_the_cpu():
        with pytest.raises(ValueError, match="float16 compute under JAX needs a GPU"):
            train()
        assert not built and not (tmp_path / "run").exists()
        return
    with pytest.warns(UserWarning, match="float16 compute on a CPU"):
        metrics = train()
    model = built[0]
    assert model.backbone.get_layer("transformer_layer_0").compute_dtype == "float16"
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert {v.dtype for v in model.weights} == {"float32"} and np.isfinite(metrics["history"]["loss"]).all()
    assert metrics["hyperparameters"]["mixed_precision"] == "float16"
    loaded = sentence.load_run(tmp_path / "run")
    assert loaded.backbone.get_layer("transformer_layer_0").compute_dtype == "float32"
    assert np.isfinite(loaded.predict(TEXTS, verbose=0)).all()


def test_run_folder(sentiment_run):
    run, _, metrics = sentiment_run
    assert sorted(p.name for p in run.iterdir()) == [
        "README.md", "SHA256SUMS", "curves.png", "history.csv", "logs", "metrics.json", "model.keras",
        "tokenizer_config.json", "vocab.txt"]
    assert json.loads((run / "metrics.json").read_text()) == metrics
    assert metrics["train_examples"] == 43 and metrics["validation_examples"] == 5
    assert metrics["max_length"] == 12  # capped at the tiny model's positions
    assert len(metrics["history"]["val_accuracy"]) == 2 and metrics["steps"] == 12
    check_run_metrics(metrics, "val_accuracy")
    model = sentence.load_run(run)
    assert isinstance(model, BertClassifier) and model.label_names == ["negative", "positive"]
    assert model.preprocessor.tokenizer.vocabulary() == VOCABULARY and model.preprocessor.sequence_length == 12


def test_the_validation_scores_are_those_keras_computes(sentiment_run):
    """The loss and accuracy the run logs each epoch (one pass of `evaluate_examples`) are `model.evaluate`'s."""
    run, data, _ = sentiment_run
    model = sentence.load_run(run)
    examples = read_sentence_tsv(data, label_names=model.label_names)
    model.compile(learning_rate=1e-5)
    expected = model.evaluate(examples.texts, np.array(examples.labels), batch_size=8, return_dict=True, verbose=0)
    scores = sentence.evaluate_examples(model, examples, batch_size=8)
    assert scores["loss"] == pytest.approx(expected["loss"], rel=1e-4)
    assert scores["accuracy"] == pytest.approx(expected["accuracy"])


def test_evaluate_agrees_with_predict(sentiment_run, capsys):
    run, data, _ = sentiment_run
    metrics = sentence.evaluate(SENTIMENT, run, data)
    assert json.loads((run / "eval_train.json").read_text()) == metrics
    rows = [line.split("\t") for line in data.read_text().splitlines()[1:]]
    predicted = [r["label"] for r in sentence.predict(run, [text for text, _ in rows])]
    labels = [["negative", "positive"][int(label)] for _, label in rows]
    assert metrics["accuracy"] == pytest.approx(np.mean(np.array(predicted) == np.array(labels)))
    assert np.sum(metrics["confusion_matrix"]) == len(rows)
    assert "confusion matrix" in capsys.readouterr().out


def test_unseen_label_at_evaluation(sentiment_run, tmp_path):
    run, _, _ = sentiment_run
    data = tmp_path / "eval.tsv"
    data.write_text("sentence\tlabel\na good film\tpositive\na film\tmixed\n")
    with pytest.raises(TsvFormatError, match="eval.tsv:3: unknown label 'mixed'"):
        sentence.evaluate(SENTIMENT, run, data)


def test_predict_answers_empty_and_long_inputs(sentiment_run):
    run, _, _ = sentiment_run
    empty, long, short = sentence.predict(run, ["  ", "good " * 5000, "fun"])
    assert empty["label"] is None and "empty" in empty["note"]
    assert "first 12 tokens" in long["note"] and long["label"] in ("negative", "positive")
    assert "note" not in short and sum(short["probabilities"].values()) == pytest.approx(1, abs=1e-5)


def test_same_predictions_under_the_next_backend(sentiment_run):
    other = next_backend()
    pytest.importorskip(other)
    run, _, _ = sentiment_run
    expected = sentence.predict(run, TEXTS)
    result = run_python(APPS / "sentiment.py", "predict", "--model", run, "--json", *TEXTS, backend=other)
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [a["label"] for a in answers] == [e["label"] for e in expected]
    np.testing.assert_allclose([a["probability"] for a in answers], [e["probability"] for e in expected], atol=1e-5)


def test_failed_run_writes_nothing(tiny_init, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(kbert.training.results, "plot_history", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        sentence.train(SENTIMENT, write_sentiment_tsv(tmp_path / "t.tsv", rows=16), tiny_init,
                            tmp_path / "run", epochs=1, batch_size=8, verbose=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.backup", "t.tsv"]  # kept: a rerun resumes


def test_nli_app_pairs(tiny_init, tmp_path, capsys, monkeypatch):
    data = write_nli_tsv(tmp_path / "nli.tsv")
    main("nli", ["train", "--data", str(data), "--valid", str(data), "--init", str(tiny_init),
                 "--out", str(tmp_path / "run"), "--epochs", "1", "--batch-size", "8", "--progress", "0"])
    capsys.readouterr()
    main("nli", ["predict", "--model", str(tmp_path / "run"), "--json",
                 "--premise", "a man plays", "--hypothesis", "nobody plays",
                 "--premise", "a man plays", "--hypothesis", ""])
    first, second = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert first["pair"] == "nobody plays" and first["label"] in NLI.label_names
    assert set(first["probabilities"]) == set(NLI.label_names) and second["label"] is None
    computed_in = []  # the tiny model's bfloat16 answer may round (6 decimals) to its float32 one

    def recording(model, dtype):
        copy = with_compute_dtype(model, dtype)
        computed_in.append(copy.backbone.get_layer("transformer_layer_0").compute_dtype)
        return copy

    monkeypatch.setattr(kbert.tasks.bert_classifier, "with_compute_dtype", recording)
    main("nli", ["predict", "--model", str(tmp_path / "run"), "--json", "--dtype", "bfloat16",
                 "--premise", "a man plays", "--hypothesis", "nobody plays"])
    bfloat16 = json.loads(capsys.readouterr().out)["probabilities"]
    assert computed_in == ["bfloat16"]
    assert max(abs(bfloat16[name] - p) for name, p in first["probabilities"].items()) < 0.02


def test_similarity_regression_with_lora(tiny_init, tmp_path, capsys):
    data = write_nli_tsv(tmp_path / "sts.tsv", rows=40, regression=True)
    metrics = sentence.train(SIMILARITY, data, tiny_init, tmp_path / "run", epochs=1,
                                  batch_size=8, lora_rank=2, verbose=0)
    out = capsys.readouterr().out
    assert "LoRA rank 2 on 2 layers" in out and f"{metrics['trainable_parameters']:,} trainable" in out
    assert metrics["trainable_parameters"] == 2 * 2 * (8 + 24) + 8 + 1
    assert set(metrics["validation"]) == {"loss", "pearson", "spearman", "mse", "mae", "examples"}
    [answer] = sentence.predict(tmp_path / "run", ["a man plays"], ["someone plays"])
    assert isinstance(answer["score"], float)


def test_run_folder_from_before_the_task_api(sentiment_run, tmp_path):
    """A model.keras saved without its preprocessor (before 42628e5) gets one from vocab.txt and metrics.json."""
    run, _, _ = sentiment_run
    model = sentence.load_run(run)
    config = model.get_config()
    del config["preprocessor"]
    older = BertClassifier.from_config(config)
    older.set_weights(model.get_weights())
    old = tmp_path / "old"
    old.mkdir()
    older.save(old / "model.keras")
    for name in ("vocab.txt", "tokenizer_config.json", "metrics.json"):
        (old / name).write_bytes((run / name).read_bytes())
    loaded = sentence.load_run(old)
    assert loaded.preprocessor.sequence_length == 12  # metrics.json's max_length
    assert loaded.preprocessor.tokenizer.vocabulary() == VOCABULARY
    texts = [*TEXTS, "good " * 20]
    assert sentence.predict(old, texts) == sentence.predict(run, texts)
    restored = BertClassifier.from_preset(old)  # the task API attaches the same one
    assert restored.preprocessor.sequence_length == 12  # metrics.json's, not default_sequence_length
    np.testing.assert_allclose(restored.predict(texts, verbose=0), model.predict(texts, verbose=0), atol=1e-6)


@ONCE_ON_TORCH
def test_non_finite_score_is_refused_before_training(tiny_init, tmp_path):
    data = write_nli_tsv(tmp_path / "sts.tsv", rows=12, regression=True)
    lines = data.read_text().splitlines()
    lines[4] = lines[4].rsplit("\t", 1)[0] + "\tnan"
    data.write_text("\n".join(lines) + "\n")
    with pytest.raises(TsvFormatError, match=r"sts.tsv:5: the score 'nan' is not finite"):
        sentence.train(SIMILARITY, data, tiny_init, tmp_path / "run", epochs=1, batch_size=8, verbose=0)
    assert not (tmp_path / "run").exists()


@ONCE_ON_TORCH
def test_a_loss_that_goes_nan_stops_the_run_and_writes_nothing(tmp_path):
    backbone = BertBackbone(**TINY)
    backbone.set_weights([np.full_like(w, np.nan) if i == 0 else w for i, w in enumerate(backbone.get_weights())])
    init = tmp_path / "nan_init"
    init.mkdir()
    backbone.save(init / BACKBONE_FILE)
    (init / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY))
    data = write_sentiment_tsv(tmp_path / "t.tsv", rows=16)
    with pytest.raises(NonFiniteLossError, match="The training loss is nan at step 1: training stopped and there "
                                                 "is no checkpoint before it"):
        sentence.train(SENTIMENT, data, init, tmp_path / "run", epochs=2, batch_size=8, verbose=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan_init", "t.tsv"]


KILLED_AFTER_THE_FIRST_BACKUP = """
import os, signal, sys
from kbert.recipes import SENTIMENT, sentence
from kbert.training import AtomicBackupAndRestore

save = AtomicBackupAndRestore._save_model
def save_then_die(self, logs):
    save(self, logs)
    os.kill(os.getpid(), signal.SIGKILL)
AtomicBackupAndRestore._save_model = save_then_die
sentence.train(SENTIMENT, sys.argv[1], sys.argv[2], sys.argv[3], epochs=3, batch_size=8, patience=3, verbose=0)
"""


@ONCE_ON_TORCH  # the process side is the same on every backend
def test_fine_tuning_resumes_after_kill_9(tiny_init, tmp_path, capsys):
    data, out = write_sentiment_tsv(tmp_path / "t.tsv", rows=24), tmp_path / "run"
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_THE_FIRST_BACKUP, str(data), str(tiny_init), str(out)],
                            cwd=TESTS.parent, env={**os.environ, "KERAS_BACKEND": "torch"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert sorted(p.name for p in (tmp_path / ".run.backup").iterdir())[-1] == "training_metadata.json"
    (tmp_path / ".run.partial-x1").mkdir()  # as a kill while the run folder is written leaves
    metrics = sentence.train(SENTIMENT, data, tiny_init, out, epochs=3, batch_size=8, patience=3, verbose=0)
    steps_per_epoch = math.ceil(metrics["train_examples"] / 8)
    assert "Resuming from the backup in" in capsys.readouterr().out
    assert (metrics["resumed_at_step"], metrics["steps"]) == (steps_per_epoch, 3 * steps_per_epoch)
    assert len(metrics["history"]["loss"]) == len(metrics["history"]["val_accuracy"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "t.tsv"]


def write_multi_label_tsv(path, rows=48, seed=0):
    """Separable toy data with any number of two classes a text: positive words -> "pos", negative words -> "neg",
    both kinds -> "neg,pos", neither -> an empty cell."""
    from tests.tasks.conftest import WORDS

    rng = np.random.default_rng(seed)
    lines = ["sentence\tlabel"]
    for i in range(rows):
        kinds = [["pos"], ["neg"], ["neg", "pos"], []][i % 4]
        words = [*(rng.choice(WORDS[:4], 2) if "pos" in kinds else []), *(rng.choice(WORDS[4:8], 2) if "neg" in kinds
                                                                         else [])]
        lines.append(" ".join(["a", "film", *words]) + "\t" + ",".join(kinds))
    path.write_text("\n".join(lines) + "\n")
    return path


@ONCE_ON_TORCH  # the recipe's own logic; the multi-label model is tested on every backend in tests/tasks
def test_a_multi_label_run_trains_evaluates_and_predicts(tiny_init, tmp_path, capsys):
    """apps/multi_label.py's recipe: classes learned from the file's cells, early stopping on micro-F1, and
    evaluate's scores are scikit-learn's on what predict chooses at the threshold."""
    from sklearn import metrics as sklearn_metrics

    from kbert.recipes import MULTI_LABEL

    data = write_multi_label_tsv(tmp_path / "train.tsv")
    metrics = sentence.train(MULTI_LABEL, data, tiny_init, tmp_path / "run", epochs=2, batch_size=8,
                             learning_rate=1e-3, verbose=0)
    assert metrics["label_names"] == ["neg", "pos"] and len(metrics["history"]["val_micro_f1"]) == 2
    check_run_metrics(metrics, "val_micro_f1")
    scores = sentence.evaluate(MULTI_LABEL, tmp_path / "run", data)
    rows = [line.split("\t") for line in data.read_text().splitlines()[1:]]
    predicted = sentence.predict(tmp_path / "run", [text for text, _ in rows])
    chosen = np.array([[name in result["labels"] for name in ("neg", "pos")] for result in predicted])
    gold = np.array([[name in cell.split(",") for name in ("neg", "pos")] for _, cell in rows])
    assert scores["micro_f1"] == pytest.approx(sklearn_metrics.f1_score(gold, chosen, average="micro", zero_division=0))
    assert scores["macro_f1"] == pytest.approx(sklearn_metrics.f1_score(gold, chosen, average="macro", zero_division=0))
    assert scores["accuracy"] == pytest.approx(np.mean(chosen == gold))
    assert [scores["per_label"][name]["support"] for name in ("neg", "pos")] == gold.sum(0).tolist()
    assert all(set(result["probabilities"]) == {"neg", "pos"} for result in predicted)
    assert "precision  recall" in capsys.readouterr().out


@ONCE_ON_TORCH
def test_a_multi_label_cell_naming_an_unknown_class_names_the_line(tiny_init, tmp_path):
    from kbert.recipes import MULTI_LABEL

    data = tmp_path / "train.tsv"
    data.write_text("sentence\tlabel\na good film\tpos\na dull film\tneg,ppos\n")
    with pytest.raises(TsvFormatError, match=r"train.tsv:3: unknown label 'ppos'; the labels are \['neg', 'pos'\]"):
        sentence.train(MULTI_LABEL, data, tiny_init, tmp_path / "run", labels=["neg", "pos"], verbose=0)


@ONCE_ON_TORCH
def test_a_sentiment_run_reads_long_texts_through_windows(tiny_init, tmp_path, capsys):
    """--doc-stride (issue 42): training on all windows, and predict reading every window of a long text with no
    'first tokens' note, as the run's model predicts it."""
    data = write_sentiment_tsv(tmp_path / "train.tsv")
    main("sentiment", ["train", "--data", str(data), "--init", str(tiny_init), "--out", str(tmp_path / "run"),
                       "--epochs", "1", "--batch-size", "8", "--doc-stride", "4", "--train-windows", "all",
                       "--window-pooling", "max", "--progress", "0"])
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (metrics["doc_stride"], metrics["train_windows"], metrics["window_pooling"]) == (4, "all", "max")
    long_text = "a film good great fun bad dull " * 20
    [answer] = sentence.predict(tmp_path / "run", [long_text])
    assert "note" not in answer
    model = sentence.load_run(tmp_path / "run")
    assert model.preprocessor.doc_stride == 4 and model.window_pooling == "max"
    assert len(model.preprocessor.prepare([long_text]).windows) > 10
    np.testing.assert_allclose(list(answer["probabilities"].values()), model.predict([long_text], verbose=0)[0],
                               atol=1e-5)


def test_the_sentiment_app_weighs_each_class_as_asked(tiny_init, tmp_path, capsys):
    """--class-weight negative=0: the negative examples teach nothing, so every text comes out positive, and the other
    way round with positive=0; the weights are recorded with the run."""
    data = write_sentiment_tsv(tmp_path / "train.tsv")
    texts = ["a film bad dull", "a film awful boring", "a film good great", "a film fun fine"]
    for weighed_out, kept in (("negative", "positive"), ("positive", "negative")):
        out = tmp_path / f"run_{weighed_out}"
        main("sentiment", ["train", "--data", str(data), "--valid", str(data), "--init", str(tiny_init),
                           "--out", str(out), "--epochs", "2", "--batch-size", "8", "--lr", "1e-3", "--progress", "0",
                           "--class-weight", f"{weighed_out}=0"])
        capsys.readouterr()
        main("sentiment", ["predict", "--model", str(out), "--json", *texts])
        assert [json.loads(line)["label"] for line in capsys.readouterr().out.splitlines()] == [kept] * 4
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["hyperparameters"]["class_weight"] == {weighed_out: 0.0}
