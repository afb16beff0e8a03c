"""What to export: a run folder, a backbone folder or a preset, loaded under TensorFlow."""


import keras

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.export.serving import ExportSpec, model_kind_of
from kbert.models import BertBackbone
from kbert.saving import load_run, model_source
from kbert.text import BertTokenizer, load_hf_tokenizer
from kbert_core.windows import MAX_QUESTION_LENGTH, QA_DOC_STRIDE

PAIR_TASKS = ("nli", "similarity")


def require_tensorflow_backend():
    """Raises a RuntimeError unless Keras runs on TensorFlow, which export needs."""
    backend = keras.config.backend()
    if backend != "tensorflow":
        raise RuntimeError(
            f"Export needs the TensorFlow backend; this process runs {backend!r}. A .keras file "
            "saved under any backend loads under TensorFlow: run with KERAS_BACKEND=tensorflow "
            "(apps/export.py re-runs itself that way).")


def load_exportable(path, max_length=None, padding="max_length", num_texts=None):
    """Returns `(model, tokenizer, spec)` for `path`, ready for `export_saved_model` / `export_tflite`.

    A task model that carries its preprocessor (the task API's `from_preset`, and run folders
    of the apps) exports with the preprocessor's tokenizer and settings: its sequence length,
    and for QA its question length and document stride.

    Args:
        path: a `.keras` file saved by a task model (`model.save`), a run folder written by
            the task apps (`model.keras`, vocab.txt, metrics.json: sentiment, NLI,
            similarity, NER, QA), a backbone folder (`backbone.keras`), a Hugging Face BERT
            folder, or a preset name (the bare backbone, for embeddings).
        max_length: int or None. Tokens per input; default: the preprocessor's sequence
            length (else the run's `max_length`; 128 for a backbone), capped by the model's
            positions.
        padding: "max_length" or "longest".
        num_texts: int or None. 2 for a sentence-pair classifier; default from the run's task.
    """
    require_tensorflow_backend()
    source = model_source(path)
    metrics = source.metrics
    model = load_run(source) if source.kind in ("run_folder", "keras_file") else BertBackbone.from_preset(source)
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:  # a backbone: its folder's tokenizer and max_length (a run's metrics.json)
        tokenizer = source.load_tokenizer(load_hf_tokenizer, model, cls=BertTokenizer)
        saved_length = metrics.get("max_length", DEFAULT_SEQUENCE_LENGTH)
    else:
        tokenizer, saved_length = preprocessor.tokenizer, preprocessor.sequence_length
    settings = {} if preprocessor is None else preprocessor.get_config()
    kind = model_kind_of(model)
    backbone = getattr(model, "backbone", model)  # a task model's, or the model itself
    max_length = min(max_length or saved_length, backbone.max_sequence_length)
    if num_texts is None:
        num_texts = 2 if metrics.get("task") in PAIR_TASKS else 1
    if kind == "question_answerer":
        num_texts = 2
    elif kind != "classifier" and num_texts != 1:
        raise ValueError(f"{path}: a {kind} takes one text per input, not {num_texts}.")
    label_names = getattr(model, "label_names", None)
    spec = ExportSpec(kind, max_length, padding, num_texts,
                      None if label_names is None else tuple(label_names),
                      max_question_length=settings.get("max_question_length", MAX_QUESTION_LENGTH),
                      **({key: getattr(model, key) for key in model.decoding_settings}
                         if kind == "question_answerer" else {}),
                      doc_stride=settings.get("doc_stride") or QA_DOC_STRIDE,
                      multi_label=getattr(model, "multi_label", False),
                      threshold=getattr(model, "threshold", 0.5),
                      window_pooling=getattr(model, "window_pooling", None) if settings.get("doc_stride") and
                      kind == "classifier" else None)
    return model, tokenizer, spec
