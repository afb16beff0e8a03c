"""kbert_core and kbert_edge import with numpy and the standard library only."""

import subprocess
import sys

import keras
import pytest

from tests.conftest import TESTS

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def test_import_leaves_the_frameworks_out():
    code = ("import sys, kbert_core, kbert_edge; "
            "print(sorted(m for m in ('tensorflow', 'keras', 'torch', 'jax', 'kbert') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=TESTS.parent, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
