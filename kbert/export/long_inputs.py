"""NER and QA over inputs of any length inside the serving graph, in ops that TFLite runs.

The string-in exports read each text (or context) whole, cut it into the windows of the Python
path and run the model once on the windows of the whole batch:

- NER (`ner_outputs`): `kbert.data.windows.ner.NerWindows`' windows, `max_length - 2` tokens each, cut
  before a word's first piece (`kbert_core.windows.word_windows`); they do not overlap, so
  each word is tagged by the one window that holds its first piece; entities are grouped over
  the words of the whole text, as `kbert_core.entities.entity_spans` does.
- QA (`qa_outputs`): `kbert.data.windows.squad.SquadWindows`' strided windows (`question_windows`,
  `doc_stride`), a start counting only in the window that gives it the most context
  (`max_context`), the `n_best` starts and ends of each window paired, and the best distinct
  spans over all windows ranked by start + end logit (`kbert_core.answers`).

At most `spec.max_windows` windows are read per input; `truncated` flags an input that
needed more (and, for QA, a question cut to `max_question_length` tokens). Every step is
index arithmetic on tensors (gathers, scatters of distinct indices, cumulative sums, top-k,
segment sums): TFLite builtins, besides the tokenizer's tensorflow-text ops.
"""

import tensorflow as tf

from kbert.data.windows.tensors import pick, question_window_rows, scatter, whole_texts, word_window_rows
from kbert_core.windows import question_tokens_kept

FLOOR = -3e38  # below every logit: marks the places that hold no candidate


def names_tensor(names, count):
    """The label names as a string tensor (their ids as strings when there are none)."""
    return tf.constant(list(names or [str(i) for i in range(count)]), tf.string)


def substrings(texts, starts, ends):
    """texts[i][starts[i, j]:ends[i, j]] in characters ("" where start < 0); SavedModel only."""
    texts = tf.broadcast_to(texts[:, tf.newaxis] if texts.shape.rank == 1 else texts, tf.shape(starts))
    pieces = tf.strings.substr(texts, tf.maximum(starts, 0), tf.maximum(ends - starts, 0), unit="UTF8_CHAR")
    return tf.where(starts >= 0, pieces, "")


def ner_windows(tokenizer, texts, spec):
    """The word-aligned windows of each text, as `kbert_core.windows.word_windows` cuts them
    (`kbert.data.windows.tensors.word_window_rows`, the tokenizer's words).

    Returns `(inputs, layout)`: the model inputs, one `[CLS] tokens [SEP]` row per window, and
    a dict of what `ner_outputs` needs to put the windows back together.
    """
    ids, offsets, word_ids, lengths = whole_texts(tokenizer, texts)
    inputs, layout = word_window_rows(tokenizer, ids, word_ids, lengths, spec.max_length, spec.max_windows,
                                      fixed_width=spec.padding == "max_length")
    return inputs, {**layout, "offsets": offsets, "word_ids": word_ids}


def ner_outputs(logits, layout, label_names):
    """Per word tags and probabilities, and the entities of each whole text, from the windows' logits.

    A word is tagged by its first piece (as `NerWindows.word_tags`); a word the tokenizer
    numbered but gave no piece is `O` with probability 1. Entities start at `B-X`, or at an
    `I-X` after `O` or another type, and run over the following `I-X` (conlleval's rule).
    """
    names = list(label_names)
    probabilities = tf.nn.softmax(logits, axis=-1)
    window_tags = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    window_probabilities = tf.reduce_max(probabilities, axis=-1)
    rows, place, word_ids, offsets = layout["row"], layout["place"], layout["word_ids"], layout["offsets"]
    places = tf.stack([rows, place], axis=-1)
    read = layout["read"] & (place >= 1)
    safe = tf.where(tf.expand_dims(read, 2), places, 0)
    token_tags = tf.gather_nd(window_tags, safe)
    token_probabilities = tf.gather_nd(window_probabilities, safe)
    batch = tf.shape(word_ids)[0]
    firsts = layout["first"] & read
    count = tf.reduce_max(tf.where(firsts, word_ids + 1, 0), axis=1)  # words read, per text
    # At least one column of words and of entities: a batch without any (empty texts, or texts the
    # model tags O throughout) would give zero-width tensors, on which TFLite's batched gathers
    # divide by zero (SIGFPE). The counts say how many columns of each row are real.
    shape = tf.stack([batch, tf.reduce_max(tf.concat([count, [1]], 0))])
    following = tf.pad(word_ids[:, 1:], [[0, 0], [0, 1]], constant_values=-1)
    read_next = tf.pad(read[:, 1:], [[0, 0], [0, 1]])
    lasts = read & (word_ids >= 0) & (tf.not_equal(word_ids, following) | ~read_next)
    texts = tf.range(batch)
    tagged = scatter(token_tags + 1, texts, word_ids, firsts, shape) - 1  # -1: no piece
    word_start = scatter(offsets[..., 0] + 1, texts, word_ids, firsts, shape) - 1
    word_end = scatter(offsets[..., 1] + 1, texts, word_ids, lasts, shape) - 1
    word_probability = scatter(token_probabilities, texts, word_ids, firsts, shape)
    in_text = tf.range(shape[1])[tf.newaxis, :] < count[:, tf.newaxis]
    missing = in_text & (tagged < 0)
    outside = names.index("O") if "O" in names else -1
    tag_ids = tf.where(missing, outside, tagged)
    word_probability = tf.where(missing, 1.0, word_probability)
    prefix_of = tf.constant([_prefix(name) for name in names], tf.int32)  # 0 O, 1 B, 2 I
    types = sorted({name[2:] for name in names if _prefix(name)})
    type_of = tf.constant([types.index(name[2:]) if _prefix(name) else -1 for name in names], tf.int32)
    word_prefix = tf.where(tag_ids >= 0, tf.gather(prefix_of, tf.maximum(tag_ids, 0)), 0)
    word_type = tf.where(word_prefix > 0, tf.gather(type_of, tf.maximum(tag_ids, 0)), -1)
    previous_prefix = tf.pad(word_prefix[:, :-1], [[0, 0], [1, 0]])
    previous_type = tf.pad(word_type[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
    starts = tf.equal(word_prefix, 1) | (tf.equal(word_prefix, 2) & (
        tf.equal(previous_prefix, 0) | tf.not_equal(previous_type, word_type)))
    entity = tf.where(word_prefix > 0, tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, -1)
    following_entity = tf.pad(entity[:, 1:], [[0, 0], [0, 1]], constant_values=-1)
    ends = (entity >= 0) & tf.not_equal(entity, following_entity)
    entity_count = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
    most = tf.reduce_max(tf.concat([entity_count, [1]], 0))
    entity_shape = tf.stack([batch, most])
    words = tf.broadcast_to(tf.range(shape[1])[tf.newaxis, :], tf.shape(entity))
    first_word = scatter(words + 1, texts, entity, starts, entity_shape) - 1
    last_word = scatter(words + 1, texts, entity, ends, entity_shape) - 1
    exists = first_word >= 0
    segments = tf.where(entity >= 0, texts[:, tf.newaxis] * most + entity, batch * most)
    total = tf.math.unsorted_segment_sum(word_probability, segments, batch * most + 1)[:-1]
    size = tf.cast(last_word - first_word + 1, tf.float32)
    entity_type = tf.gather(word_type, tf.maximum(first_word, 0), batch_dims=1)
    type_names = tf.constant(["", *types], tf.string)
    return {
        "tags": tf.gather(tf.constant(["", *names]), tf.where(in_text, tag_ids + 1, 0)),  # no string select in TFLite
        "tag_ids": tf.where(in_text, tag_ids, -1),
        "tag_probabilities": tf.where(in_text, word_probability, 0.0),
        "word_starts": tf.where(in_text & ~missing, word_start, -1),
        "word_ends": tf.where(in_text & ~missing, word_end, -1), "word_count": count,
        "entity_types": tf.gather(type_names, tf.where(exists, entity_type + 1, 0)),
        "entity_starts": tf.where(exists, tf.gather(word_start, tf.maximum(first_word, 0), batch_dims=1), -1),
        "entity_ends": tf.where(exists, tf.gather(word_end, tf.maximum(last_word, 0), batch_dims=1), -1),
        "entity_scores": tf.where(exists, tf.reshape(total, entity_shape) / tf.maximum(size, 1.0), 0.0),
        "entity_count": entity_count, "windows": layout["windows"], "truncated": layout["truncated"],
    }


def question_windows(tokenizer, questions, contexts, spec):
    """The rows of `kbert.data.windows.tensors.question_window_rows` and each token's max context.

    Questions are cut to `max_question_length` tokens (at most `max_length - 4`, so that a
    window always holds a context token). Returns `(inputs, layout)`.
    """
    kept = question_tokens_kept(spec.max_question_length, spec.max_length)
    rows = question_window_rows(tokenizer, questions, contexts, spec.max_length, spec.doc_stride, kept,
                                spec.max_windows, spec.max_length if spec.padding == "max_length" else None)
    example, windows, in_context, source = rows["example"], rows["windows"], rows["in_context"], rows["source"]
    # BERT's max-context rule: of the windows holding a token, the one where min(tokens left,
    # tokens right) + 0.01 * window length is largest (the earliest of equals), in hundredths.
    reach = -(-(spec.max_length - 3) // spec.doc_stride)  # most windows after (or before) one that overlap it
    other = rows["window"][:, tf.newaxis] + tf.range(-reach, reach + 1)[tf.newaxis, :]
    other_begin = other * rows["step"][:, tf.newaxis]
    other_end = tf.minimum(other_begin + rows["budget"][:, tf.newaxis], rows["context_length"][:, tf.newaxis])
    exists = (other >= 0) & (other < tf.gather(windows, example)[:, tf.newaxis])
    token = tf.expand_dims(source, 2)
    left, right = token - tf.expand_dims(other_begin, 1), tf.expand_dims(other_end, 1) - 1 - token
    holds = tf.expand_dims(exists, 1) & (left >= 0) & (right >= 0)
    score = tf.where(holds, 100 * tf.minimum(left, right) + tf.expand_dims(other_end - other_begin, 1), -1)
    max_context = in_context & tf.equal(tf.argmax(score, axis=-1, output_type=tf.int32), reach)
    layout = {"offsets": tf.where(tf.expand_dims(in_context, 2), pick(rows["offsets"], example, source), -1),
              "context": in_context, "max_context": max_context, "example": example, "windows": windows,
              "truncated": (rows["needed"] > spec.max_windows) | rows["question_cut"]}
    return rows["inputs"], layout


def qa_outputs(start_logits, end_logits, layout, n_best, max_answer_length, no_answer_threshold=None):
    """The best answer of each question over all windows of its context, and its `n_best` list.

    As `kbert_core.answers`: in each window the `n_best` highest start and end logits of
    context tokens are paired (end >= start, at most `max_answer_length` tokens, the start
    where this window gives it the most context); over the windows of a context the spans
    are ranked by start + end logit, each distinct [start, end) character span once, and
    `probability` is the softmax of the scores over the n best. With `no_answer_threshold`
    (a model that allows no answer), the null score is the least start + end logit at position
    0 over the question's windows; the answer is "no answer" (`no_answer`, start and end 0,
    `found` false) where it beats the best span's by more than the threshold or no span fits,
    and the softmax counts it, as `best_answers` with `null`.
    """
    offsets, context, example, windows = layout["offsets"], layout["context"], layout["example"], layout["windows"]
    k = tf.minimum(n_best, tf.shape(start_logits)[1])
    start_top, start_at = tf.math.top_k(tf.where(context, start_logits, FLOOR), k)
    end_top, end_at = tf.math.top_k(tf.where(context, end_logits, FLOOR), k)
    start_ok = (start_top > FLOOR) & tf.gather(layout["max_context"], start_at, batch_dims=1)
    span = tf.expand_dims(end_at, 1) - tf.expand_dims(start_at, 2) + 1
    valid = ((span >= 1) & (span <= max_answer_length) & tf.expand_dims(start_ok, 2)
             & tf.expand_dims(end_top > FLOOR, 1))
    scores = tf.reshape(tf.where(valid, tf.expand_dims(start_top, 2) + tf.expand_dims(end_top, 1), FLOOR),
                        [tf.shape(start_logits)[0], -1])
    # Each window's best pairs, then each question's over its windows (window by window, in order).
    kept = tf.minimum(2 * n_best, k * k)
    window_scores, best = tf.math.top_k(scores, kept)
    window_starts = tf.gather(tf.gather(offsets[..., 0], start_at, batch_dims=1), best // k, batch_dims=1)
    window_ends = tf.gather(tf.gather(offsets[..., 1], end_at, batch_dims=1), best % k, batch_dims=1)
    slots = tf.range(tf.reduce_max(tf.concat([windows, [0]], 0)) * kept)
    row = tf.cumsum(windows, exclusive=True)[:, tf.newaxis] + slots[tf.newaxis, :] // tf.maximum(kept, 1)
    filled = slots[tf.newaxis, :] // tf.maximum(kept, 1) < windows[:, tf.newaxis]
    at = tf.stack([tf.where(filled, row, 0), tf.broadcast_to(slots % tf.maximum(kept, 1), tf.shape(row))], axis=-1)
    candidates = tf.where(filled, tf.gather_nd(window_scores, at), FLOOR)
    top, chosen = tf.math.top_k(candidates, tf.minimum(2 * n_best, tf.shape(candidates)[1]))
    starts, ends = (tf.gather(tf.gather_nd(x, at), chosen, batch_dims=1) for x in (window_starts, window_ends))
    valid = top > FLOOR
    order = tf.range(tf.shape(top)[1])
    same = (tf.equal(tf.expand_dims(starts, 2), tf.expand_dims(starts, 1))
            & tf.equal(tf.expand_dims(ends, 2), tf.expand_dims(ends, 1))
            & tf.expand_dims(valid, 1) & (order[tf.newaxis, :] < order[:, tf.newaxis])[tf.newaxis])
    keep = valid & ~tf.reduce_any(same, axis=2)
    rank = tf.cumsum(tf.cast(keep, tf.int32), axis=1) - 1
    keep &= rank < n_best
    _, listed = tf.math.top_k(tf.where(keep, -tf.cast(rank, tf.float32), FLOOR), tf.minimum(n_best, tf.shape(top)[1]))
    listed_ok = tf.gather(keep, listed, batch_dims=1)
    scores, starts, ends = (tf.gather(x, listed, batch_dims=1) for x in (top, starts, ends))
    found = listed_ok[:, 0]
    best_score = tf.where(found, scores[:, 0], 0.0)
    top, null_weight = best_score, 0.0
    if no_answer_threshold is not None:
        null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example, tf.shape(windows)[0])
        no_answer = ~found | (null - best_score > no_answer_threshold)
        top = tf.where(found, tf.maximum(best_score, null), null)
        null_weight = tf.exp(null - top)
    weights = tf.where(listed_ok, tf.exp(scores - top[:, tf.newaxis]), 0.0)
    total = tf.reduce_sum(weights, axis=1) + null_weight
    probabilities = weights / tf.maximum(total, 1e-30)[:, tf.newaxis]
    outputs = {"answer_start": tf.where(found, starts[:, 0], -1), "answer_end": tf.where(found, ends[:, 0], -1),
               "score": best_score, "probability": tf.where(found, probabilities[:, 0], 0.0), "found": found,
               "n_best_starts": tf.where(listed_ok, starts, -1), "n_best_ends": tf.where(listed_ok, ends, -1),
               "n_best_scores": tf.where(listed_ok, scores, 0.0), "n_best_probabilities": probabilities,
               "windows": windows, "truncated": layout["truncated"], "window_examples": example,
               "start_logits": start_logits, "end_logits": end_logits, "offsets": offsets}
    if no_answer_threshold is None:
        return outputs
    return {**outputs, "answer_start": tf.where(no_answer, 0, outputs["answer_start"]),
            "answer_end": tf.where(no_answer, 0, outputs["answer_end"]), "score": tf.where(no_answer, null, best_score),
            "probability": tf.where(no_answer, null_weight / total, outputs["probability"]), "found": ~no_answer,
            "no_answer": no_answer, "null_score": null}


def ner_from_text(model, tokenizer, spec, texts, tflite):
    """The NER `serving_default` outputs of a batch of texts (`texts[0]`)."""
    inputs, layout = ner_windows(tokenizer, texts[0], spec)
    outputs = ner_outputs(model(inputs, training=False), layout, spec.label_names)
    if not tflite:
        outputs["entity_texts"] = substrings(texts[0], outputs["entity_starts"], outputs["entity_ends"])
    return outputs


def qa_from_text(model, tokenizer, spec, texts, tflite):
    """The QA `serving_default` outputs of a batch of `(questions, contexts)`."""
    inputs, layout = question_windows(tokenizer, *texts, spec)
    logits = model(inputs, training=False)
    outputs = qa_outputs(logits["start_logits"], logits["end_logits"], layout, spec.n_best, spec.max_answer_length,
                         spec.no_answer_threshold if spec.allow_no_answer else None)
    if not tflite:
        outputs["answer_text"] = substrings(texts[1][:, tf.newaxis], outputs["answer_start"][:, tf.newaxis],
                                            outputs["answer_end"][:, tf.newaxis])[:, 0]
    return outputs


WINDOWED = {"token_classifier": ner_from_text, "question_answerer": qa_from_text}


def _prefix(name):
    if name[:2] == "B-":
        return 1
    if name[:2] == "I-":
        return 2
    return 0
