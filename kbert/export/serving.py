"""The serving graphs of each kind of model: raw strings in, what a user wants out; or token ids in.

`serving_functions(model, tokenizer, spec)` returns `tf.function`s with fixed input
signatures, for `tf.saved_model.save` and the TFLite converter alike:

| model kind | text signature (`serving_default`) inputs -> outputs |
|---|---|
| classifier | `texts` (and `pairs` for NLI) -> `label`, `label_id`, `probability`, `probabilities`, `truncated`, `empty`; a regressor gives `score`; a multi-label classifier `probabilities` (a sigmoid per class) and `chosen` (the classes at or above its threshold) |
| backbone | `texts` -> `embeddings` (mean-pooled over real tokens, L2-normalised, as all-MiniLM-L6-v2's `BertSentenceEncoder`; a trained `BertSentenceEncoder`'s own pooling) |
| token_classifier | `texts` -> per word `tags`, `tag_ids`, `tag_probabilities`, `word_starts`, `word_ends` (chars), `word_count`; grouped entities `entity_types`, `entity_starts`, `entity_ends`, `entity_scores` (padded with "" / -1 / 0), `entity_count`; `windows`, `truncated`; SavedModel only: `entity_texts` |
| question_answerer | `questions`, `contexts` -> `answer_start`, `answer_end` (chars), `score` (start + end logit), `probability`, `found`; the n best: `n_best_starts`, `n_best_ends`, `n_best_scores`, `n_best_probabilities`; `windows`, `truncated`; per window `start_logits`, `end_logits`, `offsets`, `window_examples`; SavedModel only: `answer_text`; a model with `allow_no_answer` also `no_answer` (the answer is "no answer": start and end 0, `found` false) and `null_score` |

The `token_ids` signature takes `token_ids`, `segment_ids`, `padding_mask` (int32, batch x
length) and returns the model's raw outputs (logits) plus probabilities or embeddings.
Text is tokenized in the graph by the tokenizer's own `encode`. Classifiers and the backbone
read one window per input (`truncated`: the input had more than `max_length` tokens), but a
classifier exported with `window_pooling` reads whole texts through its windows, up to
`max_windows` (`windows` read per text; `truncated`: more were needed); a
classifier gives a text (or pair) with no tokens (empty, blank, or only characters BERT drops)
no label, as the apps do: `empty` true, `label` "", `label_id` -1, probabilities 0 (a regressor's
`score` NaN). NER
and QA read whole inputs through the windows of `BertTokenClassifier.predict` and
`BertQuestionAnswerer.predict`, in the graph (`kbert.export.long_inputs`), up to
`max_windows` windows per input (`truncated`: more were needed, or a QA question was cut).
"""

import dataclasses

import tensorflow as tf

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data.windows.tensors import text_window_rows
from kbert.export import long_inputs
from kbert.export.long_inputs import names_tensor
from kbert.layers.mean_pooling import mean_pool
from kbert.models.bert_backbone import INPUT_KEYS
from kbert.text import sentence_piece, tokenizer as wordpiece
from kbert_core.answers import MAX_ANSWER_LENGTH, N_BEST
from kbert_core.windows import MAX_QUESTION_LENGTH, MAX_WINDOWS, QA_DOC_STRIDE

MODEL_KINDS = ("classifier", "backbone", "token_classifier", "question_answerer")
PADDINGS = ("max_length", "longest")
# Tokenizer kind -> the tensorflow-text ops its in-graph `encode` holds (TFLite custom ops); byte-level BPE has no op.
GRAPH_OPS = {"wordpiece": wordpiece.CUSTOM_OPS, "sentence_piece": sentence_piece.CUSTOM_OPS}


class ExportError(ValueError):
    """An export that cannot be done as asked; the message says which part and why."""


def text_model_refusal(tokenizer):
    """Why no string-in model can hold `tokenizer` (None when one can): RoBERTa's byte-level BPE runs in Python.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> text_model_refusal(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])) is None
    True
    """
    if tokenizer.kind in GRAPH_OPS:
        return None
    return (f"the {tokenizer.kind} tokenizer (RoBERTa's) has no TensorFlow or TFLite op, so no string-in model "
            "can hold it")


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    """What an export holds besides the weights.

    Args:
        model_kind: str. One of `MODEL_KINDS`: which model the export serves.
        max_length: int. Tokens per input, special tokens included.
        padding: str. "max_length" (static shapes, best for TFLite) or "longest".
        num_texts: int. 1, or 2 for sentence-pair classifiers (NLI) and QA.
        label_names: tuple of str or None. Class or tag names in id order.
        max_question_length: int. QA: question tokens kept.
        n_best: int. QA: start and end candidates paired, as `SquadWindows.decode`.
        max_answer_length: int. QA: longest answer in tokens.
        allow_no_answer: bool. QA: the answer may be "no answer" (SQuAD 2.0; `BertQuestionAnswerer.allow_no_answer`):
            the outputs add `no_answer` and `null_score`.
        no_answer_threshold: float. QA: how much the null score must beat the best span's by.
        doc_stride: int. QA: tokens between window starts.
        window_pooling: None, "mean" or "max". A classifier that reads a long text through windows
            starting every `doc_stride` tokens (a preprocessor with `doc_stride`), combining their
            logits so (`BertClassifier.window_pooling`); None reads the first `max_length` tokens.
        multi_label: bool. A classifier with a sigmoid per class (`BertClassifier(multi_label=True)`).
        threshold: float. Under `multi_label`, the probability from which a class is chosen.
        max_windows: int. NER and QA: most windows read per input (the model runs on all
            windows of a batch at once, so this bounds its memory); inputs that need more are
            read up to there and flagged `truncated`. `kbert_edge.EdgeModel` reads as many on
            `token_ids.tflite`.

    Example:
    >>> ExportSpec("classifier", 128, label_names=("negative", "positive")).num_texts
    1
    """

    model_kind: str
    max_length: int = DEFAULT_SEQUENCE_LENGTH
    padding: str = "max_length"
    num_texts: int = 1
    label_names: tuple = None
    max_question_length: int = MAX_QUESTION_LENGTH
    n_best: int = N_BEST
    max_answer_length: int = MAX_ANSWER_LENGTH
    allow_no_answer: bool = False
    no_answer_threshold: float = 0.0
    doc_stride: int = QA_DOC_STRIDE
    max_windows: int = MAX_WINDOWS
    window_pooling: str = None
    multi_label: bool = False
    threshold: float = 0.5

    def __post_init__(self):
        if self.model_kind not in MODEL_KINDS:
            raise ValueError(f"model_kind must be one of {MODEL_KINDS}, got {self.model_kind!r}.")
        if self.padding not in PADDINGS:
            raise ValueError(f"padding must be one of {PADDINGS}, got {self.padding!r}.")
        if self.window_pooling is not None and (self.model_kind != "classifier" or self.num_texts != 1):
            raise ValueError("window_pooling reads long texts through windows: a classifier of single texts only.")
        if self.max_windows < 1 or self.doc_stride < 1:
            raise ValueError(f"max_windows and doc_stride must be at least 1, got {self.max_windows} "
                             f"and {self.doc_stride}.")

    def to_dict(self):
        return {**dataclasses.asdict(self), "label_names": None if self.label_names is None
                else list(self.label_names)}


def model_kind_of(model):
    """The `MODEL_KINDS` entry for a kbert model, or a ValueError naming what it is."""
    from kbert.models.bert_backbone import BertBackbone
    from kbert.tasks import BertClassifier, BertQuestionAnswerer, BertSentenceEncoder, BertTokenClassifier

    for kind, name in ((BertClassifier, "classifier"), (BertTokenClassifier, "token_classifier"),
                       (BertQuestionAnswerer, "question_answerer"), (BertBackbone, "backbone"),
                       (BertSentenceEncoder, "backbone")):
        if isinstance(model, kind):
            return name
    raise ValueError(f"Cannot export a {type(model).__name__}: export takes a BertClassifier, "
                     "BertTokenClassifier, BertQuestionAnswerer, BertSentenceEncoder or BertBackbone.")


def text_input_names(spec):
    if spec.model_kind == "question_answerer":
        return ("questions", "contexts")
    return ("texts", "pairs")[: spec.num_texts]


def serving_functions(model, tokenizer, spec, tflite=False, text_model=True):
    """`{"serving_default": text -> outputs, "token_ids": ids -> outputs}` as `tf.function`s.

    Args:
        model: the Keras model (TensorFlow backend).
        tokenizer: its tokenizer (`kbert.text.BertTokenizer`, `SentencePieceTokenizer` or `ByteLevelBPETokenizer`).
        spec: `ExportSpec`.
        tflite: bool. Leave out outputs TFLite cannot compute (substrings of the input).
        text_model: bool. Also the string-in `serving_default`; an ExportError where the tokenizer has no graph op
            (`text_model_refusal`).
    """
    if text_model and (reason := text_model_refusal(tokenizer)):
        raise ExportError(f"{reason}: export the token-ids model alone (text_model=False) and tokenize beside it "
                          "with kbert_core.ByteLevelBPE (kbert_edge does).")
    length = spec.max_length if spec.padding == "max_length" else None
    names = text_input_names(spec)

    def from_text(*texts):
        if spec.model_kind in long_inputs.WINDOWED:
            return long_inputs.WINDOWED[spec.model_kind](model, tokenizer, spec, texts, tflite)
        if spec.window_pooling:
            return _windowed_classifier(model, tokenizer, spec, texts[0])
        encoded = tokenizer.encode(texts[0], texts[1] if len(texts) > 1 else None, max_length=spec.max_length,
                                   padding=spec.padding, return_lengths=True)
        inputs = {key: encoded[key] for key in INPUT_KEYS}
        outputs = model(inputs, training=False)
        if spec.model_kind == "classifier":
            outputs = _classifier(model, spec, outputs, tf.reduce_any(encoded["segment_lengths"] == 0, axis=-1))
        else:
            outputs = {"embeddings": embeddings(outputs, inputs)}
        outputs["truncated"] = encoded["lengths"] > spec.max_length
        return outputs

    def from_ids(token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        return _raw_outputs(model, spec, inputs, model(inputs, training=False))

    text_signature = [tf.TensorSpec([None], tf.string, name=name) for name in names]
    id_signature = [tf.TensorSpec([None, length], tf.int32, name=key) for key in INPUT_KEYS]
    functions = {"token_ids": tf.function(from_ids, input_signature=id_signature)}
    if text_model:
        functions["serving_default"] = tf.function(from_text, input_signature=text_signature)
    return functions


def _raw_outputs(model, spec, inputs, outputs):
    if spec.model_kind == "backbone" and not isinstance(outputs, dict):  # a BertSentenceEncoder: its embeddings
        return {"embeddings": outputs}
    if spec.model_kind == "backbone":
        return {"embeddings": embeddings(outputs, inputs), "sequence_output": outputs["sequence_output"]}
    if spec.model_kind == "question_answerer":
        return dict(outputs)
    if spec.model_kind == "classifier" and model.num_classes == 1:
        return {"logits": outputs, "score": outputs[:, 0]}
    return {"logits": outputs, "probabilities": class_probabilities(outputs, spec)}


def embeddings(outputs, inputs):
    """An embedding model's vectors from its outputs: a backbone's mean-pooled, L2-normalised sequence (as
    all-MiniLM-L6-v2's `BertSentenceEncoder`), or a `BertSentenceEncoder`'s own embeddings (its pooling and
    normalisation)."""
    if isinstance(outputs, dict):
        return mean_pool(outputs["sequence_output"], inputs["padding_mask"])
    return outputs


def class_probabilities(logits, spec):
    """A classifier's probabilities: a softmax over the classes, or a sigmoid per class under `multi_label`."""
    return tf.sigmoid(logits) if spec.multi_label else tf.nn.softmax(logits, axis=-1)


def _windowed_classifier(model, tokenizer, spec, texts):
    """The classifier's outputs on whole texts: every window (`text_window_rows`, as the preprocessor's
    `doc_stride` cuts them, at most `max_windows`) through the model at once, each text's window logits
    combined by `window_pooling` (as `kbert_core.windows.combine_windows`); `windows` read per text, and
    `truncated` where more were needed."""
    rows = text_window_rows(tokenizer, texts, spec.max_length, spec.doc_stride, spec.max_windows,
                            width=spec.max_length if spec.padding == "max_length" else None)
    logits = model(rows["inputs"], training=False)
    count = tf.shape(texts)[0]
    if spec.window_pooling == "max":
        combined = tf.math.unsorted_segment_max(logits, rows["example"], count)
    else:
        combined = (tf.math.unsorted_segment_sum(logits, rows["example"], count)
                    / tf.cast(rows["windows"], logits.dtype)[:, tf.newaxis])
    outputs = _classifier(model, spec, combined, tf.equal(rows["lengths"], 0))
    return {**outputs, "windows": rows["windows"], "truncated": rows["needed"] > spec.max_windows}


def _classifier(model, spec, logits, empty):
    """Label, probabilities (or a regressor's score; or a multi-label classifier's probabilities and chosen
    classes); where `empty` (a text or pair without tokens) no label: label "", label_id -1, probabilities 0
    (no class chosen), score NaN; and `empty` itself."""
    if model.num_classes == 1:
        return {"score": tf.where(empty, float("nan"), logits[:, 0]), "empty": empty}
    probabilities = tf.where(empty[:, tf.newaxis], 0.0, class_probabilities(logits, spec))
    if spec.multi_label:
        return {"probabilities": probabilities, "chosen": probabilities >= spec.threshold, "empty": empty}
    best = tf.where(empty, -1, tf.argmax(probabilities, axis=-1, output_type=tf.int32))
    names = tf.concat([[""], names_tensor(spec.label_names, model.num_classes)], 0)  # a gather: TFLite has
    return {"label": tf.gather(names, best + 1), "label_id": best,  # no select on strings
            "probability": tf.reduce_max(probabilities, axis=-1), "probabilities": probabilities, "empty": empty}
