"""On 8 virtual JAX CPU devices: the sentiment app under --distribution model, its bad meshes,
apps/pretrain.py under --distribution data, and
checkpoints (.keras and the run backup) written sharded and unsharded, each loaded the other way.

argv: TINY_INIT (a backbone folder) WORKDIR. Writes WORKDIR/results.npz and WORKDIR/results.json; leaves
the app's run folder WORKDIR/run and a run backup written sharded (beside WORKDIR/sharded) for the test
process to load unsharded (with `fit_with_backup` and `state`, imported from here).
"""

import contextlib
import io
import json
import os
import pathlib
import sys

if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # before jax is imported
    os.environ["KERAS_BACKEND"] = "jax"
ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "apps")]

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kbert  # noqa: E402
import kbert.distribution  # noqa: E402
from kbert.training import run_backup  # noqa: E402

TEXTS = ["a film good fun", "a film dull awful", "the man plays"]


def fit_with_backup(out, init, data):
    """A bert classifier on `init` fitted one epoch on the TSV `data` with the run backup of `out`,
    resumed from it if there is one; the backup is kept."""
    model = kbert.BertClassifier.from_preset(str(init), num_classes=2, sequence_length=8)
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9))
    backup = run_backup(out, {"case": "checkpoints"})
    rows = [line.split("\t") for line in pathlib.Path(data).read_text().splitlines()[1:]]
    model.fit([text for text, _ in rows], [int(label) for _, label in rows], batch_size=8, epochs=1,
              shuffle=False, callbacks=[backup], verbose=0)
    return model


def state(model):
    """The weights, then the optimizer's variables, as numpy arrays."""
    return [np.array(v.value) for v in model.weights] + [np.array(v.value) for v in model.optimizer.variables]


def specs(variables, *names):
    """The PartitionSpec of each variable whose path holds one of `names`, as a repr'd tuple."""
    return {v.path: repr(tuple(v.value.sharding.spec)) for v in variables if any(name in v.path for name in names)}


def run_app(main, argv, prog):
    """(exit code, last line of stderr) of an app's `main(argv)`, run as its __main__ runs it."""
    import cli_errors

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            cli_errors.run(main, list(argv), prog=prog)
            code = 0
        except SystemExit as exit:
            code = exit.code
    keras.distribution.set_distribution(None)
    lines = stderr.getvalue().strip().splitlines()
    return code, lines[-1] if lines else ""


def app(*argv):
    """The sentiment app (see `run_app`)."""
    import sentence_cli

    return run_app(lambda args: sentence_cli.main("sentiment", args), argv, "sentiment.py")


def pretrain_app(*argv):
    """apps/pretrain.py (see `run_app`)."""
    import pretrain

    return run_app(pretrain.main, argv, "pretrain.py")


def main(init, work):
    from kbert.saving import load_run
    from tests.tasks.conftest import write_sentiment_tsv

    from kbert.saving import BACKBONE_FILE
    from tests.conftest import TINY

    data = write_sentiment_tsv(work / "train.tsv", rows=24)
    uneven = work / "hidden_6"  # a backbone whose hidden size 6 the model dimension 4 does not divide
    uneven.mkdir()
    kbert.BertBackbone(**{**TINY, "hidden_dim": 6}).save(uneven / BACKBONE_FILE)
    (uneven / "vocab.txt").write_text((pathlib.Path(init) / "vocab.txt").read_text())
    results, arrays = {"devices": len(keras.distribution.list_devices())}, {}
    train = ["train", "--data", str(data), "--init", str(init), "--epochs", "1", "--batch-size", "8",
             "--progress", "0"]
    for name, extra in {"heads": ["--distribution", "model", "--mesh", "2x4"],
                        "preset_heads": ["--init", "bert_tiny", "--distribution", "model", "--mesh", "2x4"],
                        "folder_hidden": ["--init", str(uneven), "--distribution", "model", "--mesh", "2x4"],
                        "product": ["--distribution", "model", "--mesh", "3x3"],
                        "no_mesh": ["--distribution", "model"],
                        "mesh_without_model": ["--distribution", "data", "--mesh", "8x1"],
                        "mesh_parse": ["--distribution", "model", "--mesh", "2x"]}.items():
        out = work / f"refused_{name}"
        code, message = app(*train, "--out", str(out), *extra)
        results[f"refused/{name}"] = {"code": code, "message": message, "written": out.exists()}

    # The app, trained model-parallel; its run folder loaded again under model_parallel (sharded).
    results["app"] = app(*train, "--out", str(work / "run"), "--distribution", "model", "--mesh", "4x2",
                         "--gradient-accumulation", "2", "--remat")
    results["app_metrics"] = json.loads((work / "run" / "metrics.json").read_text())
    keras.distribution.set_distribution(kbert.distribution.model_parallel((4, 2)))
    model = load_run(work / "run")
    arrays["run/probabilities"] = model.predict(TEXTS, verbose=0)
    results["run/sharding"] = specs(model.weights, "transformer_layer_0/self_attention/qkv_dense/kernel",
                                    "transformer_layer_0/output_dense/kernel")

    # apps/pretrain.py data-parallel with accumulation and remat; a batch the 8 devices do not divide.
    from tests.tasks.test_pretrain_app import write_corpus

    write_corpus(work / "corpus.txt")
    pretraining = ["--corpus", str(work / "corpus.txt"), "--output", str(work), "--preset", "bert_tiny",
                   "--vocab", str(init), "--objective", "mlm", "--steps", "2", "--checkpoint-every", "1",
                   "--seq-len", "16", "--holdout-fraction", "0.25", "--distribution", "data"]
    results["pretrain"] = pretrain_app(*pretraining, "--run", "pretrain", "--batch-size", "8",
                                       "--gradient-accumulation", "2", "--remat")
    results["pretrain_metrics"] = json.loads((work / "pretrain" / "metrics.json").read_text())
    results["refused/pretrain_batch"] = [*pretrain_app(*pretraining, "--run", "refused", "--batch-size", "12"),
                                         (work / "refused").exists()]

    # Sharded -> unsharded: a backup written under model_parallel, for the test process to restore.
    keras.utils.set_random_seed(1)
    sharded = fit_with_backup(work / "sharded", init, data)
    arrays.update({f"sharded/{i}": value for i, value in enumerate(state(sharded))})
    keras.distribution.set_distribution(None)

    # Unsharded -> sharded: a .keras file and a backup written on one device, loaded under model_parallel.
    keras.utils.set_random_seed(2)
    plain = fit_with_backup(work / "plain", init, data)
    plain.save(work / "plain.keras")
    keras.distribution.set_distribution(kbert.distribution.model_parallel((4, 2)))
    restored = fit_with_backup(work / "plain", init, data)  # resumes after the only epoch: no step
    loaded = keras.saving.load_model(work / "plain.keras")
    results["unsharded_to_sharded"] = {
        "restored_steps": int(restored.optimizer.iterations),
        "backup_equal": all(np.array_equal(a, b) for a, b in zip(state(plain), state(restored), strict=True)),
        "keras_equal": all(np.array_equal(np.array(a.value), np.array(b.value))
                           for a, b in zip(plain.weights, loaded.weights, strict=True)),
        "backup_sharding": specs(restored.weights + restored.optimizer.variables,
                                 "transformer_layer_1/intermediate_dense/kernel",
                                 "transformer_layer_1_intermediate_dense_kernel_momentum"),
        "keras_sharding": specs(loaded.weights, "transformer_layer_1/output_dense/kernel"),
    }
    np.savez(work / "results.npz", **arrays)
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
