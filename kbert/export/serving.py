"""The serving graphs of each task: raw strings in, what a user wants out; or token ids in.

`serving_functions(model, tokenizer, spec)` returns `tf.function`s with fixed input
signatures, for `tf.saved_model.save` and the TFLite converter alike:

| task | text signature (`serving_default`) inputs -> outputs |
|---|---|
| classifier | `texts` (and `pairs` for NLI) -> `label`, `label_id`, `probability`, `probabilities`, `truncated`; a regressor gives `score` |
| backbone | `texts` -> `embeddings` (mean-pooled over real tokens, L2-normalised, as `SentenceEncoder`) |
| token_classifier | `texts` -> per token `tags`, `tag_ids`, `tag_probabilities`, `offsets`, `word_ids`, `token_ids`; grouped entities `entity_types`, `entity_starts`, `entity_ends`, `entity_scores` (padded with "" / -1 / 0), `entity_count`; SavedModel only: `entity_texts` |
| question_answerer | `questions`, `contexts` -> `answer_start`, `answer_end` (chars), `score` (start + end logit), `probability`, `found`; SavedModel only: `answer_text` |

The `token_ids` signature takes `token_ids`, `segment_ids`, `padding_mask` (int32, batch x
length) and returns the model's raw outputs (logits) plus probabilities or embeddings.
Every text output has a `truncated` flag (the input had more than `max_length` tokens).
Text is tokenized in the graph by the tokenizer's own `encode`, one window per
input; NER and QA over windows of long inputs run in `kbert_edge.EdgeModel` (token-id model).
"""

import dataclasses

import tensorflow as tf

from kbert.layers.mean_pooling import mean_pool
from kbert.models.bert_backbone import INPUT_KEYS

TASKS = ("classifier", "backbone", "token_classifier", "question_answerer")
PADDINGS = ("max_length", "longest")


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    """What an export holds besides the weights.

    Args:
        task: str. One of `TASKS`.
        max_length: int. Tokens per input, special tokens included.
        padding: str. "max_length" (static shapes, best for TFLite) or "longest".
        num_texts: int. 1, or 2 for sentence-pair classifiers (NLI) and QA.
        label_names: tuple of str or None. Class or tag names in id order.
        max_question_length: int. QA: question tokens kept.
        n_best: int. QA: start and end candidates paired, as `SquadWindows.decode`.
        max_answer_length: int. QA: longest answer in tokens.
        doc_stride: int. QA: tokens between window starts (for the runner).

    Example:
    >>> ExportSpec("classifier", 128, label_names=("negative", "positive")).num_texts
    1
    """

    task: str
    max_length: int = 128
    padding: str = "max_length"
    num_texts: int = 1
    label_names: tuple = None
    max_question_length: int = 64
    n_best: int = 20
    max_answer_length: int = 30
    doc_stride: int = 128

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}.")
        if self.padding not in PADDINGS:
            raise ValueError(f"padding must be one of {PADDINGS}, got {self.padding!r}.")

    def to_dict(self):
        return {**dataclasses.asdict(self), "label_names": None if self.label_names is None
                else list(self.label_names)}


def task_of(model):
    """The `TASKS` entry for a kbert model, or a ValueError naming what it is."""
    from kbert.models.bert_backbone import BertBackbone
    from kbert.tasks import BertClassifier, BertQuestionAnswerer, BertTokenClassifier

    for kind, name in ((BertClassifier, "classifier"), (BertTokenClassifier, "token_classifier"),
                       (BertQuestionAnswerer, "question_answerer"), (BertBackbone, "backbone")):
        if isinstance(model, kind):
            return name
    raise ValueError(f"Cannot export a {type(model).__name__}: export takes a BertClassifier, "
                     "BertTokenClassifier, BertQuestionAnswerer or BertBackbone.")


def text_input_names(spec):
    if spec.task == "question_answerer":
        return ("questions", "contexts")
    return ("texts", "pairs")[: spec.num_texts]


def serving_functions(model, tokenizer, spec, tflite=False):
    """`{"serving_default": text -> outputs, "token_ids": ids -> outputs}` as `tf.function`s.

    Args:
        model: the Keras model (TensorFlow backend).
        tokenizer: its `kbert.text.BertTokenizer`.
        spec: `ExportSpec`.
        tflite: bool. Leave out outputs TFLite cannot compute (substrings of the input).
    """
    length = spec.max_length if spec.padding == "max_length" else None
    head = _HEADS[spec.task]
    names = text_input_names(spec)

    def from_text(*texts):
        encoded = tokenizer.encode(
            texts[0], texts[1] if len(texts) > 1 else None, max_length=spec.max_length,
            padding=spec.padding,
            truncation="only_second" if spec.task == "question_answerer" else "longest_first",
            return_offsets=spec.task in ("token_classifier", "question_answerer"),
            max_first_length=spec.max_question_length if spec.task == "question_answerer" else None,
            return_lengths=True)
        inputs = {key: encoded[key] for key in INPUT_KEYS}
        outputs = head(model, spec, inputs, model(inputs, training=False), encoded, texts, tflite)
        outputs["truncated"] = encoded["lengths"] > spec.max_length
        return outputs

    def from_ids(token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        return _raw_outputs(model, spec, inputs, model(inputs, training=False))

    text_signature = [tf.TensorSpec([None], tf.string, name=name) for name in names]
    id_signature = [tf.TensorSpec([None, length], tf.int32, name=key) for key in INPUT_KEYS]
    return {"serving_default": tf.function(from_text, input_signature=text_signature),
            "token_ids": tf.function(from_ids, input_signature=id_signature)}


def _names(spec, count):
    names = spec.label_names or tuple(str(i) for i in range(count))
    return tf.constant(list(names), tf.string)


def _raw_outputs(model, spec, inputs, outputs):
    if spec.task == "backbone":
        return {"embeddings": mean_pool(outputs["sequence_output"], inputs["padding_mask"]),
                "sequence_output": outputs["sequence_output"]}
    if spec.task == "question_answerer":
        return dict(outputs)
    if spec.task == "classifier" and model.num_classes == 1:
        return {"logits": outputs, "score": outputs[:, 0]}
    return {"logits": outputs, "probabilities": tf.nn.softmax(outputs, axis=-1)}


def _classifier(model, spec, inputs, logits, encoded, texts, tflite):
    if model.num_classes == 1:
        return {"score": logits[:, 0]}
    probabilities = tf.nn.softmax(logits, axis=-1)
    best = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    return {"label": tf.gather(_names(spec, model.num_classes), best), "label_id": best,
            "probability": tf.reduce_max(probabilities, axis=-1), "probabilities": probabilities}


def _backbone(model, spec, inputs, outputs, encoded, texts, tflite):
    return {"embeddings": mean_pool(outputs["sequence_output"], inputs["padding_mask"])}


def _token_classifier(model, spec, inputs, logits, encoded, texts, tflite):
    """Per-token tags, and entities grouped over words as conlleval does (`get_entities`)."""
    names = list(spec.label_names)
    probabilities = tf.nn.softmax(logits, axis=-1)
    tag_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    tag_probabilities = tf.reduce_max(probabilities, axis=-1)
    word_ids, offsets = encoded["word_ids"], encoded["offsets"]
    # Word-level views (batch, words): a word's tag is that of its first piece.
    width = tf.shape(word_ids)[1]
    words = tf.range(width)
    previous = tf.concat([tf.fill([tf.shape(word_ids)[0], 1], -1), word_ids[:, :-1]], axis=1)
    first = (word_ids >= 0) & tf.not_equal(word_ids, previous)
    member = tf.equal(word_ids[:, :, tf.newaxis], words[tf.newaxis, tf.newaxis, :])  # (b, t, w)
    first_member = member & first[:, :, tf.newaxis]

    def per_word(values, where=first_member, reduce=tf.reduce_sum):
        values = tf.cast(values, tf.float32)[:, :, tf.newaxis]
        return reduce(tf.where(where, values, tf.zeros_like(values)), axis=1)

    prefix_of = tf.constant([_prefix(name) for name in names], tf.int32)  # 0 O, 1 B, 2 I
    types = sorted({name[2:] for name in names if _prefix(name)})
    type_of = tf.constant([types.index(name[2:]) if _prefix(name) else -1 for name in names], tf.int32)
    word_exists = tf.reduce_any(first_member, axis=1)
    word_tag = tf.cast(per_word(tag_ids), tf.int32)
    word_prefix = tf.where(word_exists, tf.gather(prefix_of, word_tag), 0)
    word_type = tf.gather(type_of, word_tag)
    word_probability = per_word(tag_probabilities)
    word_start = tf.cast(per_word(offsets[..., 0]), tf.int32)
    word_end = tf.cast(per_word(offsets[..., 1], member, tf.reduce_max), tf.int32)
    shift = lambda x, fill: tf.concat([tf.fill([tf.shape(x)[0], 1], fill), x[:, :-1]], axis=1)  # noqa: E731
    previous_prefix, previous_type = shift(word_prefix, 0), shift(word_type, -1)
    starts = tf.equal(word_prefix, 1) | (tf.equal(word_prefix, 2) & (
        tf.equal(previous_prefix, 0) | tf.not_equal(previous_type, word_type)))
    entity = tf.where(word_prefix > 0, tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, -1)
    in_entity = tf.equal(entity[:, :, tf.newaxis], words[tf.newaxis, tf.newaxis, :])  # (b, w, e)
    size = tf.reduce_sum(tf.cast(in_entity, tf.float32), axis=1)
    exists = size > 0
    first_word = in_entity & starts[:, :, tf.newaxis]
    entity_type = tf.cast(per_word(word_type, first_word), tf.int32)
    entity_start = tf.cast(per_word(word_start, first_word), tf.int32)
    entity_end = tf.cast(per_word(word_end, in_entity, tf.reduce_max), tf.int32)
    entity_score = per_word(word_probability, in_entity) / tf.maximum(size, 1.0)
    type_names = tf.constant(["", *types], tf.string)
    outputs = {
        "tags": tf.gather(_names(spec, len(names)), tag_ids), "tag_ids": tag_ids,
        "tag_probabilities": tag_probabilities, "offsets": offsets, "word_ids": word_ids,
        "token_ids": inputs["token_ids"],
        "entity_types": tf.gather(type_names, tf.where(exists, entity_type + 1, 0)),
        "entity_starts": tf.where(exists, entity_start, -1),
        "entity_ends": tf.where(exists, entity_end, -1),
        "entity_scores": tf.where(exists, entity_score, 0.0),
        "entity_count": tf.reduce_sum(tf.cast(starts, tf.int32), axis=1),
    }
    if not tflite:
        outputs["entity_texts"] = _substrings(texts[0], outputs["entity_starts"], outputs["entity_ends"])
    return outputs


def _question_answerer(model, spec, inputs, outputs, encoded, texts, tflite):
    """The best span of the one window, decoded as `SquadWindows.decode` does."""
    start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
    context = tf.equal(inputs["segment_ids"], 1) & (encoded["word_ids"] >= 0)
    k = min(spec.n_best, spec.max_length)
    width = tf.shape(start_logits)[1]
    k = tf.minimum(k, width)
    floor = tf.constant(-3e38, tf.float32)
    start_top, start_at = tf.math.top_k(tf.where(context, start_logits, floor), k)
    end_top, end_at = tf.math.top_k(tf.where(context, end_logits, floor), k)
    span = end_at[:, tf.newaxis, :] - start_at[:, :, tf.newaxis] + 1  # (b, k, k)
    valid = ((span >= 1) & (span <= spec.max_answer_length)
             & (start_top > floor)[:, :, tf.newaxis] & (end_top > floor)[:, tf.newaxis, :])
    scores = start_top[:, :, tf.newaxis] + end_top[:, tf.newaxis, :]
    flat = tf.reshape(tf.where(valid, scores, floor), [tf.shape(scores)[0], -1])
    best_scores, best = tf.math.top_k(flat, tf.minimum(spec.n_best, k * k))
    found = best_scores[:, 0] > floor
    kept = best_scores > floor
    weights = tf.where(kept, tf.exp(best_scores - best_scores[:, :1]), 0.0)
    probability = tf.where(found, 1.0 / tf.maximum(tf.reduce_sum(weights, axis=1), 1.0), 0.0)
    start_token = tf.gather(start_at, best[:, 0] // k, batch_dims=1)
    end_token = tf.gather(end_at, best[:, 0] % k, batch_dims=1)
    offsets = encoded["offsets"]
    answer_start = tf.where(found, tf.gather(offsets[..., 0], start_token, batch_dims=1), -1)
    answer_end = tf.where(found, tf.gather(offsets[..., 1], end_token, batch_dims=1), -1)
    result = {"answer_start": answer_start, "answer_end": answer_end,
              "score": tf.where(found, best_scores[:, 0], 0.0), "probability": probability,
              "found": found, "start_logits": start_logits, "end_logits": end_logits,
              "offsets": offsets}
    if not tflite:
        result["answer_text"] = _substrings(texts[1][:, tf.newaxis], answer_start[:, tf.newaxis],
                                            answer_end[:, tf.newaxis])[:, 0]
    return result


def _substrings(texts, starts, ends):
    """texts[i][starts[i, j]:ends[i, j]] in characters ("" where start < 0); SavedModel only."""
    texts = tf.broadcast_to(texts[:, tf.newaxis] if texts.shape.rank == 1 else texts, tf.shape(starts))
    pieces = tf.strings.substr(texts, tf.maximum(starts, 0), tf.maximum(ends - starts, 0), unit="UTF8_CHAR")
    return tf.where(starts >= 0, pieces, "")


def _prefix(name):
    if name[:2] == "B-":
        return 1
    if name[:2] == "I-":
        return 2
    return 0


_HEADS = {"classifier": _classifier, "backbone": _backbone,
          "token_classifier": _token_classifier, "question_answerer": _question_answerer}
