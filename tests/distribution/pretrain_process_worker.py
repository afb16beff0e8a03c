"""Run by tests/distribution/commands_worker.py for test_torch_app_processes.py, as one process or as one of a torch
job's processes (MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set, as torchrun sets them), on torch unless
KERAS_BACKEND says otherwise (test_jax_app_processes.py runs its app mode on JAX).

argv: library OUT: a `BertPretrainer` (TINY, dropout 0, NSP head, SGD with momentum) fits the fixed global batches
of `batches()`: in a job, this process's share of each (`kbert.distribution.data_shares.shares`); alone, the whole batches.
Writes its weights, losses and validation losses to OUT (.npz), and, in a job, the refusal of raw texts.

argv: app WORKDIR STDOUT_FILE AUDIT_FILE ARGS...: apps/pretrain.py's `main(ARGS)` in the folder WORKDIR; writes what it
printed on stdout to STDOUT_FILE and, as JSON lines to AUDIT_FILE, every file this process opened for writing,
created, renamed or deleted (Python's audit events, in this process: the data pipeline's child is not audited).
"""

import contextlib
import io
import json
import os
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(root), str(root / "apps")]
os.environ.setdefault("KERAS_BACKEND", "torch")


def batches(count=4, rows=6, length=10, predictions=3, vocabulary_size=50):
    """Global batches `(x, y, sample_weight)` in `pretraining_dataset`'s layout, whose rows mask 1 to 3 tokens:
    the two halves of a batch hold different numbers of masked tokens."""
    import numpy as np

    rng = np.random.default_rng(0)
    made = []
    for _ in range(count):
        token_ids = rng.integers(5, vocabulary_size, (rows, length)).astype("int32")
        padding_mask = np.ones((rows, length), "int32")
        weights = (np.arange(predictions)[None, :] < rng.integers(1, predictions + 1, (rows, 1))).astype("float32")
        x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask,
             "mask_positions": rng.integers(1, length, (rows, predictions)).astype("int32")}
        y = {"mlm": rng.integers(5, vocabulary_size, (rows, predictions)).astype("int32"),
             "nsp": rng.integers(0, 2, rows).astype("int32")}
        made.append((x, y, {"mlm": weights, "nsp": np.ones(rows, "float32")}))
    return made


def library(out):
    import keras
    import numpy as np

    import kbert.distribution
    from kbert import BertBackbone, BertPretrainer
    from kbert.distribution.data_shares import shares
    from tests.conftest import TINY

    job = "WORLD_SIZE" in os.environ
    if job:
        kbert.distribution.activate(kbert.distribution.data_parallel())
    keras.utils.set_random_seed(int(os.environ.get("RANK", 0)))  # process 0's initial weights reach the others
    model = BertPretrainer(BertBackbone(**TINY, dropout=0.0))
    model.compile(optimizer=keras.optimizers.SGD(0.5, momentum=0.9))
    data = batches()
    stream = shares(data) if job else (batch for batch in data)
    history = model.fit(stream, epochs=2, steps_per_epoch=2, validation_data=data[0], shuffle=False, verbose=0)
    results = {f"weight{i}": weight for i, weight in enumerate(model.get_weights())}
    results.update(loss=history.history["loss"], val_loss=history.history["val_loss"])
    if job:
        try:
            BertPretrainer.from_preset("bert_tiny", sequence_length=16, next_sentence=False).fit(
                ["a first text to mask", "and another one"], batch_size=2, verbose=0)
        except ValueError as error:
            results["refusal"] = str(error)
    np.savez(out, **results)


def app(workdir, stdout_file, audit_file, argv):
    os.chdir(workdir)
    written, recording = [], [True]
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def audit(event, args):
        if not recording[0]:
            return
        if event == "open":
            path, mode, flags = args
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & write_flags)
            if writes and isinstance(path, (str, bytes, os.PathLike)):
                written.append([event, os.path.abspath(os.fsdecode(path))])
        elif event in ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "tempfile.mkdtemp",
                       "tempfile.mkstemp", "os.symlink", "os.truncate"):
            if isinstance(args[0], (str, bytes, os.PathLike)):
                written.append([event, os.path.abspath(os.fsdecode(args[0]))])

    sys.addaudithook(audit)
    import pretrain

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        pretrain.main(argv)
    recording[0] = False
    pathlib.Path(stdout_file).write_text(printed.getvalue())
    pathlib.Path(audit_file).write_text("".join(json.dumps(entry) + "\n" for entry in written))


if __name__ == "__main__":
    if sys.argv[1] == "library":
        library(sys.argv[2])
    else:
        app(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
