import os
import string
import subprocess
import sys

import keras
import pytest

from kbert_core import says_no_answer
from tests.conftest import APPS, app_module

# Export runs in a TensorFlow-backend process (apps/export.py switches to one): the export
# tests skip under the other backends.
TENSORFLOW_ONLY = pytest.mark.skipif(keras.config.backend() != "tensorflow",
                                     reason="export runs under the TensorFlow backend only")
EDGE_PREDICT = APPS / "edge_predict.py"
# Runs a script (argv[1]) as `python script ...` would, with `import keras` made to fail and, but for
# text.tflite, `import tensorflow` too (text.tflite needs the TensorFlow wheel's native library, which
# it finds by importlib.util.find_spec, not its Python modules); fails if either was imported all the
# same; the last two lines on stderr name the files kbert_core and kbert_edge were imported from.
WITHOUT_FRAMEWORKS = """
import os, runpy, sys
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
blocked = ["keras", "torch", "jax"] + ([] if any(a.endswith("text.tflite") for a in sys.argv) else ["tensorflow"])
sys.modules.update(dict.fromkeys(blocked))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    loaded = [m for m in ("tensorflow", "keras") if sys.modules.get(m) is not None]
    for package in ("kbert_core", "kbert_edge"):
        print(f"{package}:", getattr(sys.modules.get(package), "__file__", None), file=sys.stderr)
    if loaded:
        sys.exit(f"imported {loaded}")
"""

WORDS = ["the", "film", "good", "bad", "paris", "angela", "merkel", "visited", "who", "what",
         "is", "was", "un", "##aff", "##able", "cafe", "naive"]
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + list(string.ascii_lowercase)
         + [f"##{c}" for c in string.ascii_lowercase] + list(string.digits) + list(string.punctuation))

TEXTS = ["The film was good!", "", "   ", "Angela Merkel visited Paris.", "unaffable café, naïve",
         "a bad film " * 30, "x" * 150 + " good", "日本 émoji 😀 text\u200b"]
# Batches without a single wordpiece: every row is [CLS] [SEP] ("\u200b" is deleted).
EMPTY_BATCHES = ([""], ["", "  ", "\u200b"])


@pytest.fixture(scope="session")
def tokenizer():
    from kbert.text import BertTokenizer

    return BertTokenizer(VOCAB)


def tiny_backbone():
    from kbert import BertBackbone

    keras.utils.set_random_seed(1)
    return BertBackbone.from_preset("bert_tiny", vocabulary_size=len(VOCAB), max_sequence_length=64)


def small_backbone(max_sequence_length=16):
    """A backbone of `tests.conftest.TINY` (2 layers, hidden 8) on `VOCAB`: for the modules' own tests."""
    from kbert import BertBackbone
    from tests.conftest import TINY

    keras.utils.set_random_seed(2)
    return BertBackbone(**{**TINY, "vocabulary_size": len(VOCAB), "max_sequence_length": max_sequence_length})


SMALL_LABELS = ("negative", "positive")


@pytest.fixture(scope="module")
def small_classifier():
    """A two-class `BertClassifier` on `small_backbone()`, labelled `SMALL_LABELS`."""
    from kbert.tasks import BertClassifier

    return BertClassifier(small_backbone(), 2, label_names=list(SMALL_LABELS))


def numpy_mean_pool(sequence_output, padding_mask):
    """Sentence embeddings by their definition: the mean over real tokens, divided by its L2 norm."""
    import numpy as np

    mask = np.asarray(padding_mask, "float32")[..., None]
    mean = (np.asarray(sequence_output) * mask).sum(1) / mask.sum(1)
    return mean / np.linalg.norm(mean, axis=-1, keepdims=True)


def run_edge_predict(*args, script=EDGE_PREDICT, cwd=None):
    """apps/edge_predict.py ARGS in a fresh process without Keras or TensorFlow's Python modules."""
    result = subprocess.run([sys.executable, "-c", WITHOUT_FRAMEWORKS, str(script), *map(str, args)],
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, cwd=cwd, capture_output=True,
                            text=True)
    if result.returncode:
        raise AssertionError(f"{script} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


def edge_module():
    """apps/edge_predict.py, imported from its path."""
    return app_module("edge_predict")


NER_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
# QA windows: 32 tokens, questions cut to 6 tokens, window starts 8 tokens apart.
QA_WINDOWING = {"max_length": 32, "doc_stride": 8, "max_question_length": 6}
QUESTIONS = ["Who visited Paris?", "What is good?", "", "who " * 20]
CONTEXTS = ["Angela Merkel visited Paris.", "The film was good, the cafe was bad.", "Paris.", "Merkel!"]
LONG_TEXT = "Angela Merkel visited Paris, the film was good. " * 8  # 4 NER windows of 24 tokens
LONG_CONTEXT = "Angela Merkel visited Paris. " * 6 + "The film was good, the cafe was bad. " * 4  # 7 QA windows


def export_both(tmp_path_factory, model, tokenizer, metrics, name):
    """A run folder of `model`, loaded by `load_exportable`, exported as SavedModel and TFLite."""
    from kbert.export import export_saved_model, export_tflite, load_exportable
    from kbert.training import write_run_folder

    root = tmp_path_factory.mktemp(name)
    write_run_folder(root / "run", model, tokenizer, metrics, {"loss": [1.0]})
    model, tokenizer, spec = load_exportable(root / "run")
    export_saved_model(model, tokenizer, spec, root / "saved")
    export_tflite(model, tokenizer, spec, root / "tflite")
    return model, tokenizer, spec, root


@pytest.fixture(scope="session")
def ner(tmp_path_factory, tokenizer):
    """A tiny NER model (24-token windows, with its preprocessor) and its exports: (model, tokenizer, spec, root)."""
    import numpy as np

    from kbert.tasks import BertTokenClassifier, BertTokenClassifierPreprocessor

    model = BertTokenClassifier(tiny_backbone(), NER_TAGS, BertTokenClassifierPreprocessor(tokenizer, 24))
    model.get_layer("logits").bias.assign(np.array([0.0, 0.3, 0.3, 0.3, 0.3], "float32"))  # entities appear
    return export_both(tmp_path_factory, model, tokenizer, {"task": "ner", "max_length": 24}, "ner")


@pytest.fixture(scope="session")
def qa(tmp_path_factory, tokenizer):
    """A tiny QA model (`QA_WINDOWING`, with its preprocessor) and its exports: (model, tokenizer, spec, root)."""
    from kbert.tasks import BertQuestionAnswerer, BertQuestionAnswererPreprocessor

    preprocessor = BertQuestionAnswererPreprocessor(tokenizer, 32, doc_stride=8, max_question_length=6)
    model = BertQuestionAnswerer(tiny_backbone(), preprocessor)
    return export_both(tmp_path_factory, model, tokenizer, {"task": "qa", **QA_WINDOWING}, "qa")


@pytest.fixture(scope="session")
def qa_no_answer(tmp_path_factory, tokenizer):
    """A tiny QA model that allows no answer, its threshold the median of what the null score beats the best span's
    by on `QUESTIONS` and `LONG_CONTEXT` (so that some answer "" and some a span), and its exports."""
    import keras
    import numpy as np

    from kbert.tasks import BertQuestionAnswerer, BertQuestionAnswererPreprocessor

    preprocessor = BertQuestionAnswererPreprocessor(tokenizer, 32, doc_stride=8, max_question_length=6)
    model = BertQuestionAnswerer(tiny_backbone(), preprocessor, allow_no_answer=True)
    head = model.get_layer("span_logits")
    head.kernel.assign(np.random.default_rng(3).normal(size=head.kernel.shape).astype("float32"))
    prepared = preprocessor.prepare(([*QUESTIONS, "Who visited Paris?"], [*CONTEXTS, LONG_CONTEXT]))
    logits = {key: keras.ops.convert_to_numpy(value) for key, value in model(prepared.inputs).items()}
    lists = prepared.windows.decode(logits["start_logits"], logits["end_logits"], allow_no_answer=True)
    diffs = [next(a["score"] for a in best if says_no_answer(a)) - next((a["score"] for a in best if a["text"]), -1e9)
             for best in lists]
    model.set_decoding(no_answer_threshold=float(np.median([d for d in diffs if d > -1e8])) - 1e-3)
    return export_both(tmp_path_factory, model, tokenizer, {"task": "qa", **QA_WINDOWING}, "qa_no_answer")
