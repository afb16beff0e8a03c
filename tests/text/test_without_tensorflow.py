"""Issue 39: `import kbert` and everything on token ids work where TensorFlow cannot be imported (torch or JAX),
raw strings then fail in one line that says what to install, and beside torch or JAX, TensorFlow (the tokenizer)
sees no GPU."""

import subprocess
import sys

import keras
import pytest

from tests.conftest import TESTS

pytestmark = pytest.mark.skipif(keras.config.backend() == "tensorflow",
                                reason="Keras's TensorFlow backend needs TensorFlow; this is for torch and JAX")

WITHOUT_TENSORFLOW = """
import sys
sys.modules["tensorflow"] = sys.modules["tensorflow_text"] = None  # `import tensorflow` raises ImportError
import numpy as np
import kbert
from tests.conftest import TINY, tiny_batch

model = kbert.BertClassifier(kbert.BertBackbone(**TINY), 2)
batch = tiny_batch()
model.fit(batch, np.array([0, 1, 0]), epochs=1, verbose=0)
print("predict", model.predict(batch, verbose=0).shape)
try:
    kbert.BertClassifier.from_preset("bert_tiny", num_classes=2)
except ImportError as error:
    print("raw strings:", error)
print("tensorflow loaded:", sys.modules["tensorflow"] is not None)
"""


def test_token_ids_without_tensorflow_and_one_line_for_raw_strings():
    result = subprocess.run([sys.executable, "-c", WITHOUT_TENSORFLOW], cwd=TESTS.parent, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "predict (3, 2)" in lines and "tensorflow loaded: False" in lines
    assert [line for line in lines if line.startswith("raw strings:")] == [
        "raw strings: Raw text needs kbert's tokenizer, which runs on TensorFlow ops (import of tensorflow halted; "
        "None in sys.modules): pip install 'tensorflow==2.21.*' 'tensorflow-text==2.21.*'. Token ids (dicts of "
        "token_ids, segment_ids, padding_mask) work without them."]


def test_beside_torch_or_jax_tensorflow_sees_no_gpu():
    import tensorflow as tf

    import kbert.text  # noqa: F401 (hides the GPUs from TensorFlow on import)

    assert tf.config.get_visible_devices("GPU") == []
