"""Issue 43: `import kbert` and the tokenizer start without TensorFlow's and CUDA's start-up lines on every
backend (they print on a machine without a GPU: oneDNN's line, "Could not find cuda drivers", "failed call to
cuInit"); KBERT_VERBOSE=1 shows them; other lines (a Python warning) still show."""

import os
import subprocess
import sys

import keras

from kbert_core.start_up import START_UP_LINE
from tests.conftest import TESTS

USE_THE_TOKENIZER = """
import warnings
import kbert
from kbert.text import BertTokenizer
print(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"]).encode("hi", max_length=4)["token_ids"].numpy())
warnings.warn("a real warning")
"""


def run_with(**env):
    base = {key: value for key, value in os.environ.items() if not key.startswith(("TF_CPP", "KBERT_VERBOSE"))}
    result = subprocess.run([sys.executable, "-c", USE_THE_TOKENIZER], cwd=TESTS.parent, capture_output=True,
                            text=True, env={**base, "KERAS_BACKEND": keras.config.backend(), **env})
    assert result.returncode == 0 and result.stdout == "[2 5 3 0]\n", result.stderr[-3000:]
    return result.stderr.splitlines()


def test_import_kbert_and_tokenize_without_start_up_lines():
    lines = run_with()
    assert lines == ["<string>:6: UserWarning: a real warning"], lines


def test_kbert_verbose_shows_them():
    lines = run_with(KBERT_VERBOSE="1")
    assert any(map(START_UP_LINE.match, lines)) and lines[-1] == "<string>:6: UserWarning: a real warning", lines
