"""apps/pretrain.py end to end on a tiny corpus: killed with SIGKILL mid-run, rerun, finished; the corpus
read where it is, split for any document shape."""

import hashlib
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import zlib

import keras
import numpy as np
import pytest

from kbert.saving import RunFolderError
from kbert_core.start_up import START_UP_LINE
from tests.conftest import ONCE_ON_TORCH, app_module

APP = pathlib.Path(__file__).parents[2] / "apps" / "pretrain.py"
SENTENCES = ["The cat sat on the mat.", "A dog ran home at night.", "Rain fell on the old town.",
             "She read a book by the fire.", "The ship sailed far away.", "Birds sang in the tall trees."]


def write_corpus(path, documents=12):
    lines = []
    for d in range(documents):
        lines += [f"Chapter {d} begins."] + [SENTENCES[(d + i) % len(SENTENCES)] for i in range(7)] + [""]
    path.write_text("\n".join(lines))


def tiny_run_command(folder, run, steps, checkpoint_every, holdout):
    """apps/pretrain.py on a tiny corpus written into `folder`, bert_tiny at 4 x 32 tokens."""
    corpus = folder / "corpus.txt"
    write_corpus(corpus)
    return [sys.executable, str(APP), "--corpus", str(corpus), "--run", run, "--output", str(folder),
            "--preset", "bert_tiny", "--vocab-size", "120", "--steps", str(steps),
            "--checkpoint-every", str(checkpoint_every), "--batch-size", "4", "--seq-len", "32",
            "--holdout-fraction", str(holdout)]


# The app runs once (ONCE_ON_TORCH); tests/tasks/test_bert_pretrainer.py resumes a killed pretrainer on every backend.
@ONCE_ON_TORCH
def test_a_kill_9_then_the_same_command_finishes_the_run_as_if_never_killed(tmp_path):
    """The resumed run reads the data stream past the batches trained (issue 43) and restores dropout's random
    state: it ends with the weights of the run never killed, dropout on (0.1: 6.8e-5 away without that state)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(dict(num_layers=2, num_heads=2, hidden_dim=128, intermediate_dim=512, dropout=0.1)))
    command = [*tiny_run_command(tmp_path, "tiny", steps=6, checkpoint_every=2, holdout=0.25),  # 6 documents of 12
               "--config", str(config)]
    env = {**os.environ, "KERAS_BACKEND": keras.config.backend()}
    never_killed = [*command[:command.index("--run") + 1], "whole", *command[command.index("--run") + 2:]]
    assert subprocess.run(never_killed, env=env, capture_output=True).returncode == 0
    run = tmp_path / "tiny"
    metadata = tmp_path / ".tiny.backup" / "training_metadata.json"  # beside the run folder, as every app's backup
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while not (metadata.is_file() and json.loads(metadata.read_text())["step"] >= 2):
        assert first.poll() is None, f"the run ended before its first checkpoint:\n{first.stderr.read()[-3000:]}"
        assert time.time() < deadline, "no checkpoint after 300 s"
        time.sleep(0.2)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert not (run / "backbone.keras").exists()

    second = subprocess.run(command, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "shuffle=True" not in second.stderr  # Keras's warning: the tf.data pipeline shuffles itself
    assert "held-out before training" not in second.stdout  # measured once, by the first run
    # resumed after the checkpoint, not from the start (stdout is not a terminal: progress lines, not a bar)
    assert "pretrain: epoch 1/3 done" not in second.stdout
    assert "pretrain: epoch 3/3 done" in second.stdout
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["steps"] == 6
    assert set(metrics) >= {"start", "end"}
    assert metrics["settings"]["seq_len"] == 32 and metrics["settings"]["steps"] == 6
    backbone = keras.saving.load_model(run / "backbone.keras")
    assert backbone.vocabulary_size == len((run / "vocab.txt").read_text().split())
    assert "Resuming after 2 batches" in second.stdout or "Resuming after 4 batches" in second.stdout
    whole = keras.saving.load_model(tmp_path / "whole" / "backbone.keras")
    differences = [np.abs(keras.ops.convert_to_numpy(a) - keras.ops.convert_to_numpy(b)).max()
                   for a, b in zip(backbone.weights, whole.weights)]
    assert max(differences) < 1e-5, max(differences)
    assert {path.name for path in run.glob("*.txt")} == {"vocab.txt"}  # no copy of the corpus, no split files


@ONCE_ON_TORCH
def test_a_run_without_held_out_lines_saves_its_backbone_and_curves(tmp_path):
    command = tiny_run_command(tmp_path, "all", steps=2, checkpoint_every=1, holdout=0)
    env = {key: value for key, value in os.environ.items() if not key.startswith("TF_CPP")}
    run = subprocess.run(command, env={**env, "KERAS_BACKEND": keras.config.backend()}, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not any(map(START_UP_LINE.match, run.stderr.splitlines())), run.stderr  # the pipeline's child loads TensorFlow quietly too
    assert (tmp_path / "all" / "backbone.keras").is_file() and (tmp_path / "all" / "curves.png").is_file()
    assert not {"start", "end"} & set(json.loads((tmp_path / "all" / "metrics.json").read_text()))
    # the masked LM with its heads, as a Hugging Face BertForPreTraining folder: the same encoder, masks filled
    import kbert

    pretrainer = kbert.BertPretrainer.from_preset(tmp_path / "all" / "masked_lm", compile=False)
    backbone = kbert.BertBackbone.from_preset(tmp_path / "all")
    assert pretrainer.next_sentence and f"and {tmp_path / 'all' / 'masked_lm'};" in run.stdout
    ids = {"token_ids": np.array([[2, 7, 9, 3]]), "segment_ids": np.zeros((1, 4), "int32"),
           "padding_mask": np.ones((1, 4), "int32")}
    np.testing.assert_allclose(keras.ops.convert_to_numpy(pretrainer.backbone(ids)["sequence_output"]),
                               keras.ops.convert_to_numpy(backbone(ids)["sequence_output"]), atol=1e-6)
    [candidates] = app_module("fill_mask").load_masked_lm(tmp_path / "all" / "masked_lm").fill_mask(
        ["The cat [MASK] on the mat."])
    assert len({c["token"] for c in candidates}) == 5
    assert all(c["sequence"].startswith("the cat") and c["sequence"].endswith(" on the mat.") for c in candidates)


@ONCE_ON_TORCH
def test_a_rerun_must_repeat_the_settings_but_may_train_further(tmp_path, capsys, monkeypatch):
    """Defect 5 of issue 21: another --corpus or --checkpoint-every on a rerun was taken silently
    (the old text kept, steps trained past --steps); now refused, naming the setting, unless --restart.
    --steps 0 (and no held-out text) draws no batch: no pipeline process is started."""
    import multiprocessing.context

    main = app_module("pretrain").main
    command = tiny_run_command(tmp_path, "tiny", steps=0, checkpoint_every=1, holdout=0)[2:]
    started = []
    with monkeypatch.context() as patch:
        patch.setattr(multiprocessing.context.SpawnProcess, "start", lambda process: started.append(process))
        main(command)
    assert started == []
    run = tmp_path / "tiny"
    text = (tmp_path / "corpus.txt").read_bytes()
    corpus = {"path": str(tmp_path / "corpus.txt"), "bytes": len(text), "sha256": hashlib.sha256(text).hexdigest()}
    started = json.loads((run / "settings.json").read_text())
    assert started["corpus"] == [corpus] and started["steps"] == 0
    other = tmp_path / "other.txt"
    write_corpus(other, documents=4)
    files = {path: path.read_bytes() for path in run.rglob("*") if path.is_file()}
    for option, value, old in [("--corpus", other, repr([corpus])), ("--checkpoint-every", 2, "1"),
                               ("--seq-len", 16, "32")]:
        with pytest.raises(RunFolderError, match=rf"started with {option} {re.escape(old)}, not .*--restart"):
            main([*command, option, str(value)])
    assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == files

    main([*command, "--steps", "2"])  # --steps may grow: the run trains on, to exactly 2
    assert json.loads((run / "metrics.json").read_text())["steps"] == 2
    with pytest.raises(RunFolderError, match="has trained 2 steps already"):
        main(command)
    (tmp_path / "corpus.txt").write_bytes(text.replace(b"cat", b"cut"))  # the same file and size, edited
    edited = hashlib.sha256(text.replace(b"cat", b"cut")).hexdigest()
    with pytest.raises(RunFolderError, match=rf"started with --corpus .*'{corpus['sha256']}'.*, not .*'{edited}'"):
        main(command)
    main([*command, "--corpus", str(other), "--restart"])
    assert json.loads((run / "settings.json").read_text())["corpus"][0]["path"] == str(other)
    assert json.loads((run / "metrics.json").read_text())["steps"] == 0 and not (tmp_path / ".tiny.backup").exists()
    assert f"Started over: deleted {run} and the backup in {tmp_path / '.tiny.backup'}." in capsys.readouterr().out



@ONCE_ON_TORCH
def test_a_run_started_as_task_resumes_as_objective(tmp_path, capsys):
    """--objective was --task: a run folder whose settings.json says "task" (as every run started
    before the rename does) resumes under --objective; --task still works, naming --objective."""
    app = app_module("pretrain")
    command = tiny_run_command(tmp_path, "tiny", steps=0, checkpoint_every=1, holdout=0)[2:]
    app.main([*command, "--objective", "mlm"])
    settings_file = tmp_path / "tiny" / "settings.json"
    settings = json.loads(settings_file.read_text())
    old = {("task" if name == "objective" else name): value for name, value in settings.items()}
    settings_file.write_text(json.dumps(old))
    with pytest.raises(RunFolderError, match="started with --objective 'mlm', not 'nsp'"):
        app.main([*command, "--objective", "nsp"])
    app.main([*command, "--objective", "mlm", "--steps", "1"])
    assert json.loads((tmp_path / "tiny" / "metrics.json").read_text())["steps"] == 1
    assert json.loads(settings_file.read_text()) == {**settings, "steps": 1}
    capsys.readouterr()
    assert app.parse_args([*command, "--task", "sop"]).objective == "sop"
    assert "--task is now --objective" in capsys.readouterr().err

@ONCE_ON_TORCH
def test_span_masking_is_a_setting_of_the_run(tmp_path, capsys):
    """--mask-unit span (with --span-p and --max-span) is recorded in settings.json, and a rerun without it is
    refused; --mask-unit token or whole_word records whole_word_masking alone, as runs from before --mask-unit
    did (they resume). Span settings out of range, or without span, are one line each before anything is done."""
    app = app_module("pretrain")
    command = tiny_run_command(tmp_path, "tiny", steps=0, checkpoint_every=1, holdout=0)[2:]
    app.main([*command, "--mask-unit", "span", "--span-p", "0.3"])
    settings = json.loads((tmp_path / "tiny" / "settings.json").read_text())
    assert (settings["mask_unit"], settings["span_p"], settings["max_span"], settings["whole_word_masking"],
            settings["span_boundary_objective"]) == ("span", 0.3, 10, False, False)
    with pytest.raises(RunFolderError, match="started with --mask-unit 'span', not None"):
        app.main(command)
    assert {"whole_word_masking": True}.items() <= app.run_settings(app.parse_args(
        [*command, "--whole-word-masking"]), []).items()
    assert "mask_unit" not in app.run_settings(app.parse_args([*command, "--mask-unit", "whole_word"]), [])
    capsys.readouterr()
    for flags, message in ((["--mask-unit", "span", "--span-p", "0"],
                            "--span-p: expected a number above 0 and at most 1, got '0'"),
                           (["--mask-unit", "span", "--span-p", "1.2"], "--span-p"),
                           (["--mask-unit", "span", "--max-span", "0"], "--max-span"),
                           (["--mask-unit", "spans"], "--mask-unit: invalid choice: 'spans'"),
                           (["--max-span", "4"], "--max-span is a setting of span masking: give it with --mask-unit "),
                           (["--span-boundary-objective"], "--span-boundary-objective is a setting of span masking")):
        with pytest.raises(SystemExit):
            app.parse_args([*command, *flags])
        assert message in capsys.readouterr().err


def test_a_time_budget_is_a_setting_of_the_run(tmp_path, capsys):
    """--minutes is recorded in settings.json (and absent without it, as runs from before it were: they resume); a
    budget of no time is one line before anything is done. The budget itself: tests/recipes/test_pretrain.py."""
    app = app_module("pretrain")
    command = tiny_run_command(tmp_path, "tiny", steps=0, checkpoint_every=1, holdout=0)[2:]
    assert app.run_settings(app.parse_args([*command, "--minutes", "2.5"]), [])["minutes"] == 2.5
    assert "minutes" not in app.run_settings(app.parse_args(command), [])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        app.parse_args([*command, "--minutes", "0"])
    assert "--minutes: expected a finite number above 0, got '0'" in capsys.readouterr().err


def test_mixed_precision_is_a_setting_of_the_run(tmp_path, capsys):
    """--mixed-precision alone is bfloat16, recorded True as before float16 was offered (such runs resume);
    --mixed-precision float16 is recorded as such; anything else is one line. The training:
    tests/recipes/test_pretrain.py."""
    app = app_module("pretrain")
    command = tiny_run_command(tmp_path, "tiny", steps=0, checkpoint_every=1, holdout=0)[2:]
    recorded = [app.run_settings(app.parse_args([*command, *flags]), [])["mixed_precision"]
                for flags in ([], ["--mixed-precision"], ["--mixed-precision", "float16"])]
    assert recorded == [False, True, "float16"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        app.parse_args([*command, "--mixed-precision", "fp8"])
    assert "--mixed-precision: expected bfloat16 or float16 (or nothing: bfloat16), got 'fp8'" in capsys.readouterr().err


def reviews(folder, name, count):
    """A file of one-line documents with blank lines between them, as IMDB's unsup.txt; returns the lines."""
    lines = [f"Review {name}{i}: the {SENTENCES[i % 6].lower()}" for i in range(count)]
    (folder / f"{name}.txt").write_text("\n\n".join(lines) + "\n")
    return lines


@ONCE_ON_TORCH
def test_the_corpus_is_read_where_it_is_and_one_line_documents_split(tmp_path, capsys):
    """Issue 26: --holdout-lines 20 emptied the training split of one-line documents (a bare StopIteration
    in the vocabulary learner); the corpus was copied into the run folder; one file at a time."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = reviews(corpus, "a", 40) + reviews(corpus, "b", 40)
    (corpus / "c_empty.txt").write_text("\n\n")
    main = app_module("pretrain").main
    command = ["--corpus", str(corpus / "*.txt"), "--run", "reviews", "--output", str(tmp_path), "--preset",
               "bert_tiny", "--vocab-size", "100", "--steps", "0", "--checkpoint-every", "1", "--seq-len", "32",
               "--batch-size", "2", "--holdout-fraction", "0.2"]
    main(command)
    held = sum(zlib.crc32(line.encode()) < 0.2 * 2**32 for line in lines)  # the rule, by hand
    out = capsys.readouterr().out
    assert f"Corpus: {80 - held} documents ({80 - held} lines) to train on, {held} ({held} lines) held out." in out
    assert f"--corpus {corpus / 'c_empty.txt'}: no text, skipped." in out
    run = tmp_path / "reviews"
    files = [corpus / name for name in ("a.txt", "b.txt", "c_empty.txt")]
    assert json.loads((run / "settings.json").read_text())["corpus"] == [
        {"path": str(path), "bytes": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        for path in files]
    assert "start" in json.loads((run / "metrics.json").read_text())  # the held-out split was evaluated
    saved = b"".join(path.read_bytes() for path in run.rglob("*") if path.is_file())
    assert not [line for line in lines if line.encode() in saved]  # no copy of the corpus in the run folder

    for fraction, message in [("1", "the training split is empty: --holdout-fraction 1.0 holds out all of its 80 "
                                    "documents and 80 lines"),
                              ("0.001", "the held-out split is empty: --holdout-fraction 0.001 of its 80 documents")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            main([*command[:3], "new", *command[4:-1], fraction])  # --run new
        assert not (tmp_path / "new").exists()  # refused before the vocabulary and the run folder


@ONCE_ON_TORCH
def test_init_continues_pretraining_from_a_checkpoint_with_its_vocabulary(tmp_path, tiny_init):
    app = app_module("pretrain")
    command = tiny_run_command(tmp_path, "continued", steps=0, checkpoint_every=1, holdout=0)[2:]
    with pytest.raises(ValueError, match="brings its own config and vocabulary: drop --vocab"):
        app.main([*command, "--init", str(tiny_init), "--vocab", str(tiny_init)])
    with pytest.raises(ValueError, match="--seq-len 32 exceeds the 12 positions of --init"):
        app.main([*command, "--init", str(tiny_init), "--objective", "mlm"])
    command[command.index("--seq-len") + 1] = "12"
    app.main([*command, "--init", str(tiny_init), "--objective", "mlm"])
    run = tmp_path / "continued"
    assert (run / "vocab.txt").read_text() == (tiny_init / "vocab.txt").read_text()
    init = keras.saving.load_model(tiny_init / "backbone.keras")
    saved = keras.saving.load_model(run / "backbone.keras")
    assert all((keras.ops.convert_to_numpy(a) == keras.ops.convert_to_numpy(b)).all()
               for a, b in zip(init.weights, saved.weights, strict=True))  # step 0: the checkpoint itself
    app.main([*command, "--init", str(tiny_init), "--objective", "mlm", "--steps", "1"])
    trained = keras.saving.load_model(run / "backbone.keras")
    assert json.loads((run / "metrics.json").read_text())["steps"] == 1
    assert any((keras.ops.convert_to_numpy(a) != keras.ops.convert_to_numpy(b)).any()
               for a, b in zip(init.weights, trained.weights))
