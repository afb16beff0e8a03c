"""Keras and TensorFlow started without their start-up lines; TensorFlow kept off torch's and JAX's GPUs.

`import kbert` loads Keras (with the TensorFlow backend, TensorFlow too, and looks for its
devices) inside `kbert_core.start_up.start_up_lines_held`, and every kbert module that needs
TensorFlow under another backend (the tokenizer, tf.data pipelines, export) loads it through
`import_tensorflow()`: on a machine without a GPU nothing of "oneDNN custom operations",
"Could not find cuda drivers" or "failed call to cuInit" reaches stderr. Other lines (a Python
warning) still show. `KBERT_VERBOSE=1` shows them all.
"""

import sys

from kbert_core.start_up import start_up_lines_held


def start_keras():
    """Imports Keras quietly; with the TensorFlow backend, also lets TensorFlow find its devices
    (where CUDA's probes print). Does nothing when Keras is loaded already."""
    if "keras" in sys.modules:
        return
    with start_up_lines_held():
        import keras

        if keras.config.backend() == "tensorflow":
            sys.modules["tensorflow"].config.list_physical_devices()


def import_tensorflow():
    """TensorFlow, with tensorflow-text's ops registered, loaded quietly; under the torch or JAX
    backend TensorFlow sees no GPU (the tokenizer and tf.data run on the CPU, leaving the GPUs to
    the backend). Raises ImportError when either is not installed.

    Example:
    >>> import_tensorflow().constant([1, 2]).shape
    TensorShape([2])
    """
    if sys.modules.get("tensorflow_text") is not None:
        return sys.modules["tensorflow"]
    with start_up_lines_held():
        import keras
        import tensorflow
        import tensorflow_text  # noqa: F401 (registers the ops the tokenizer's graphs use)

        if keras.config.backend() != "tensorflow":
            try:
                tensorflow.config.set_visible_devices([], "GPU")
            except RuntimeError:  # TensorFlow had started its devices before kbert loaded it
                pass
    return tensorflow
