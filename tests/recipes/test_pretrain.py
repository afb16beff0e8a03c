"""kbert.recipes.pretrain on a tiny corpus: the same metrics.json fields as every task's run (issue 41), the backup
beside the run folder, kept to train further, and a rerun with other settings refused before anything is written.
apps/pretrain.py end to end (kill -9, its settings check, --restart): tests/tasks/test_pretrain_app.py."""

import json

import keras
import numpy as np
import pytest

from kbert.data.batches.child_process import process_batches
from kbert.recipes import pretrain as recipe
from kbert.saving import ChangedFileError, SettingsChangedError, model_source, recorded_checksums, sha256
from kbert.training.resume_policy import ResumeRefusedError
from tests.conftest import ONCE_ON_TORCH
from tests.recipes.conftest import RUN_FIELDS
from tests.tasks.test_pretrain_app import write_corpus

# the recipe starts a tf.data child process: once (the pretrainer itself resumes on every backend in
# tests/tasks/test_bert_pretrainer.py)
pytestmark = ONCE_ON_TORCH
CONFIG = dict(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=32, dropout=0.0)


def test_a_run_writes_every_runs_fields_keeps_its_backup_and_trains_further(tmp_path, capsys, monkeypatch):
    corpus, out = tmp_path / "corpus.txt", tmp_path / "run"
    write_corpus(corpus)
    options = dict(config=CONFIG, vocabulary_sample=corpus.read_text().splitlines(), vocabulary_size=80,
                   checkpoint_every=1, batch_size=4, sequence_length=32, holdout_fraction=0.25, verbose=0)
    settings = {"corpus": str(corpus), "seq_len": 32, "steps": 2}
    started = []
    monkeypatch.setattr(recipe, "process_batches", lambda *args, **kwargs: started.append(args[0]) or
                        process_batches(*args, **kwargs))
    metrics = recipe.train([corpus], out, settings, steps=2, **options)
    assert len(started) == 1  # one pipeline process (TensorFlow starts once) for the held-out and training batches
    assert RUN_FIELDS <= set(metrics) and {"start", "end", "settings"} <= set(metrics)
    assert (metrics["task"], metrics["steps"], metrics["resumed_at_step"], metrics["best_epoch"]) == ("pretrain", 2, 0, 2)
    assert metrics["validation"] == metrics["end"] and metrics["settings"] == settings
    assert json.loads((out / "metrics.json").read_text()) == metrics
    assert {"backbone.keras", "settings.json", "vocab.txt", "history.csv", "curves.png", "README.md", "SHA256SUMS"} <= {
        path.name for path in out.iterdir()}
    assert recorded_checksums(out)["backbone.keras"] == sha256(out / "backbone.keras")  # what loading checks
    assert (tmp_path / ".run.backup" / "training_metadata.json").is_file()  # beside the run folder, and kept

    written = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    with pytest.raises(SettingsChangedError, match=r"run/settings.json: this run started with seq_len 32, not 16\."):
        recipe.train([corpus], out, {**settings, "seq_len": 16}, steps=2, **options)
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == written

    capsys.readouterr()
    more = recipe.train([corpus], out, {**settings, "steps": 4}, steps=4, **options)  # steps may grow
    assert (more["resumed_at_step"], more["steps"], len(more["history"]["loss"])) == (2, 4, 4)
    assert more["start"] == metrics["start"] and "held-out before" not in capsys.readouterr().out
    assert json.loads((out / "settings.json").read_text())["steps"] == 4
    assert recorded_checksums(out)["backbone.keras"] == sha256(out / "backbone.keras")  # recorded anew

    damaged = bytearray((out / "backbone.keras").read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # one byte flipped
    (out / "backbone.keras").write_bytes(bytes(damaged))
    with pytest.raises(ChangedFileError, match=r"backbone\.keras: its SHA-256 is not the one recorded"):
        model_source(out).saved_model


def test_mixed_precision_builds_the_model_alone_in_it(tmp_path, monkeypatch):
    """mixed_precision (--mixed-precision [float16]): the pretrainer computes in float16 under loss scaling (or in
    bfloat16), with float32 weights; the policy is the model's alone: the process's stays float32 and the saved
    backbone loads as float32."""
    for mixed_precision, compute_dtype in ((True, "bfloat16"), ("float16", "float16")):
        backbone, _ = recipe.load_init("bert_tiny", mixed_precision)
        assert backbone.get_layer("transformer_layer_0").compute_dtype == compute_dtype
        assert keras.config.dtype_policy().name == "float32"
    corpus, out = tmp_path / "corpus.txt", tmp_path / "run"
    write_corpus(corpus)
    trained, training_run = [], recipe.training_run
    monkeypatch.setattr(recipe, "training_run", lambda model, *args, **kwargs: trained.append(model)
                        or training_run(model, *args, **kwargs))
    metrics = recipe.train([corpus], out, {}, config=CONFIG, vocabulary_sample=corpus.read_text().splitlines(),
                           vocabulary_size=80, steps=2, checkpoint_every=2, batch_size=4, sequence_length=32,
                           holdout_fraction=0.25, mixed_precision="float16", verbose=0)
    model = trained[0]
    assert model.backbone.get_layer("transformer_layer_0").compute_dtype == "float16"
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert {v.dtype for v in model.trainable_weights} == {"float32"} and np.isfinite(metrics["history"]["loss"]).all()
    assert metrics["hyperparameters"]["mixed_precision"] == "float16"
    assert keras.config.dtype_policy().name == "float32"
    saved = keras.saving.load_model(out / "backbone.keras")
    assert saved.get_layer("transformer_layer_0").compute_dtype == "float32"


def test_a_run_of_steps_not_a_multiple_of_its_interval_is_refused(tmp_path):
    with pytest.raises(ValueError, match="steps 3 is not a multiple of checkpoint_every 2"):
        recipe.train([], tmp_path / "run", {}, steps=3, checkpoint_every=2)
    assert list(tmp_path.iterdir()) == []


def test_a_precision_setting_not_known_is_refused_before_anything_is_written(tmp_path):
    """(float16 under JAX on a CPU, refused by the same check: tests/optimizers/test_mixed_precision.py)"""
    with pytest.raises(ValueError, match="mixed_precision must be one of .* got 'fp16'"):
        recipe.train([], tmp_path / "run", {}, steps=2, checkpoint_every=2, mixed_precision="fp16")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("masking, message", [
    (dict(mask_unit="span", span_p=0.0), "span_p 0.0: .* in \\(0, 1\\]"),
    (dict(mask_unit="span", max_span=0), "max_span 0: .* >= 1"),
    (dict(mask_unit="word"), "mask_unit must be one of"),
    (dict(mask_unit="whole_word", span_boundary=True), "span_boundary=True .* give mask_unit='span'")])
def test_masking_settings_out_of_range_are_refused_before_anything_is_written(tmp_path, masking, message):
    with pytest.raises(ValueError, match=message):
        recipe.train([], tmp_path / "run", {}, steps=2, checkpoint_every=2, **masking)
    assert list(tmp_path.iterdir()) == []


def test_a_time_budget_stops_at_the_step_that_overruns_it_and_keeps_no_backup(tmp_path):
    corpus, out = tmp_path / "corpus.txt", tmp_path / "run"
    write_corpus(corpus)
    options = dict(config=CONFIG, vocabulary_sample=corpus.read_text().splitlines(), vocabulary_size=80,
                   checkpoint_every=5, batch_size=4, sequence_length=32, holdout_fraction=0.25, verbose=0)
    # 6 ms: past after the 3 untimed first steps (they compile), so the 4th, the first timed, finds the next one
    # overrunning and stops the fit there, in the first of the 4 epochs
    metrics = recipe.train([corpus], out, {"minutes": 1e-4}, steps=20, minutes=1e-4, **options)
    assert metrics["steps"] == 4 and metrics["hyperparameters"]["minutes"] == 1e-4
    assert metrics["time_budget"]["steps"] == 4 and metrics["time_budget"]["stopped_by_budget"]
    assert metrics["time_budget"]["plans"][-1][2] == 4  # the last plan: stop at step 4
    assert (out / "backbone.keras").is_file() and not (tmp_path / ".run.backup").exists()  # whole: nothing resumes
    with pytest.raises(ResumeRefusedError, match=r"run holds a whole run under a time budget.*\(restart\)"):
        recipe.train([corpus], out, {"minutes": 1e-4}, steps=20, minutes=1e-4, **options)

    killed = tmp_path / "killed"  # a run's backup, as a kill leaves it: a budget does not resume from it
    recipe.train([corpus], killed, {}, steps=5, **options)
    with pytest.raises(ResumeRefusedError, match=r"killed holds an interrupted run under a time budget .*\(restart\)"):
        recipe.train([corpus], killed, {}, steps=5, minutes=1.0, **options)
    with pytest.raises(ValueError, match="minutes 0: a time budget is a positive number of minutes"):
        recipe.train([], tmp_path / "none", {}, steps=2, checkpoint_every=2, minutes=0)
    assert not (tmp_path / "none").exists()
