"""Windows over whole texts built from string tensors, in TensorFlow ops that TFLite also runs.

`question_window_rows` makes SQuAD's strided windows (those of `kbert_core.windows.question_windows`,
which `kbert.data.windows.squad.SquadWindows` packs in numpy) for `BertQuestionAnswererPreprocessor.call` in
`tf.data` and for the exported QA graph (`kbert.export.long_inputs`); `word_window_rows` the NER
windows cut at words (those of `kbert_core.windows.word_windows`, `kbert.data.windows.ner.NerWindows`'), for
`BertTokenClassifierPreprocessor.call` and the exported NER graph; `text_window_rows` a classifier's strided
windows over long texts (`kbert_core.windows.text_windows`), for the exported classifier graph.
"""

from kbert.data.windows.token_rows import UNLIMITED
from kbert.start_up import import_tensorflow

tf = import_tensorflow()  # quietly; under torch or JAX, off the GPUs


def whole_texts(tokenizer, texts):
    """Every token of each text, without special tokens: `(ids, offsets, word_ids, lengths)`.

    ids and word ids (batch, n + 1), offsets (batch, n + 1, 2), where n is the most tokens of
    a text in the batch; the column at a text's length holds its [SEP], the columns after it
    padding; word ids are -1 from a text's length on.
    """
    encoded = tokenizer.encode(texts, max_length=UNLIMITED, padding="longest", return_offsets=True)
    lengths = tf.reduce_sum(encoded["padding_mask"], axis=1) - 2
    return encoded["token_ids"][:, 1:], encoded["offsets"][:, 1:], encoded["word_ids"][:, 1:], lengths


def window_rows(counts):
    """`(example, window)` of each row when example b has `counts[b]` windows, rows in order.

    Example:
    >>> [x.numpy().tolist() for x in window_rows(tf.constant([2, 1]))]
    [[0, 0, 1], [0, 1, 0]]
    """
    most = tf.reduce_max(tf.concat([counts, [0]], axis=0))
    valid = tf.range(most)[tf.newaxis, :] < counts[:, tf.newaxis]
    where = tf.cast(tf.where(valid), tf.int32)
    return where[:, 0], where[:, 1]


def pick(values, rows, columns):
    """values[rows[i], columns[i, j]] for each row i and column j (columns clipped into range).

    `values` may have more axes after the first two: they are kept.

    Example:
    >>> pick(tf.constant([[5, 6, 7], [8, 9, 10]]), tf.constant([1, 0]), tf.constant([[0, 2], [1, 9]])).numpy().tolist()
    [[8, 10], [6, 7]]
    """
    columns = tf.clip_by_value(columns, 0, tf.shape(values)[1] - 1) + tf.zeros_like(rows)[:, tf.newaxis]
    rows = tf.broadcast_to(rows[:, tf.newaxis], tf.shape(columns))
    return tf.gather_nd(values, tf.stack([rows, columns], axis=-1))


def question_window_rows(tokenizer, questions, contexts, sequence_length, doc_stride, max_question_length,
                         max_windows=None, width=None):
    """`[CLS] question [SEP] context window [SEP]` rows for every window of every question.

    Each window holds `sequence_length - question tokens - 3` context tokens and starts
    `min(that, doc_stride)` tokens after the previous one; the last ends at the context's end.
    Questions are cut to `max_question_length` tokens, which must leave a context token.

    Args:
        tokenizer: `kbert.text.BertTokenizer`.
        questions, contexts: string tensors (batch,).
        sequence_length, doc_stride, max_question_length: int.
        max_windows: int or None. Most windows per question (None: all).
        width: int or None. Row length (None: the longest row).

    Returns a dict: `inputs` (`token_ids`, `segment_ids`, `padding_mask`: (rows, width) int32);
    per row `example`, `window` (its index among its question's), `begin` (its first context
    token), `size` (its context tokens), `budget`, `step`, `context_length`; per row and place
    `place` (1, width), `first` (rows, 1: the place of the first context token), `in_context`
    and `source` (the context token at each place); per question `windows` (rows made),
    `needed` (rows without `max_windows`) and `question_cut`; per context `offsets` (batch,
    n + 1, 2) and `context_lengths`.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "?"])
    >>> rows = question_window_rows(tokenizer, tf.constant(["a?"]), tf.constant(["a b a b a"]), 8, 2, 4)
    >>> rows["inputs"]["token_ids"].numpy().tolist()
    [[2, 5, 7, 3, 5, 6, 5, 3], [2, 5, 7, 3, 5, 6, 5, 3]]
    """
    if not tokenizer.layout.count_segments:
        raise ValueError(f"Question windows in TensorFlow ops are BERT's [CLS] q [SEP] c [SEP]; a "
                         f"{type(tokenizer).__name__} lays out RoBERTa's: give the questions and contexts as lists "
                         "(the preprocessor's prepare makes its windows), not a tf.data.Dataset.")
    asked = tokenizer.encode(questions, max_length=max_question_length + 2, padding="longest", return_lengths=True)
    question_ids = asked["token_ids"][:, 1:]
    question_length = tf.reduce_sum(asked["padding_mask"], axis=1) - 2
    ids, offsets, _, context_lengths = whole_texts(tokenizer, contexts)
    budget = sequence_length - question_length - 3
    step = tf.minimum(budget, doc_stride)
    needed = 1 + tf.maximum(0, -(-(context_lengths - budget) // step))
    windows = needed if max_windows is None else tf.minimum(needed, max_windows)
    example, window = window_rows(windows)
    budget, step, context_length = (tf.gather(x, example) for x in (budget, step, context_lengths))
    begin = window * step
    size = tf.minimum(budget, context_length - begin)
    first = tf.gather(question_length, example)[:, tf.newaxis] + 2
    total = first + size[:, tf.newaxis] + 1
    if width is None:
        width = tf.reduce_max(tf.concat([total[:, 0], [3]], 0))
    place = tf.range(width)[tf.newaxis, :]
    in_question = (place >= 1) & (place < first - 1)
    in_context = (place >= first) & (place < total - 1)
    source = begin[:, tf.newaxis] + place - first
    token_ids = tf.where(place == 0, tokenizer.cls_token_id, tokenizer.sep_token_id)
    token_ids = tf.where(in_question, pick(question_ids, example, place - 1), token_ids)
    token_ids = tf.where(in_context, pick(ids, example, source), token_ids)
    # The masks by arithmetic, not cast from bools: the TFLite converter folds the model's cast
    # of such a mask back into the bool, whose new axis TFLite's STRIDED_SLICE cannot take.
    padding_mask = tf.clip_by_value(total - place, 0, 1)
    inputs = {"token_ids": tf.where(place < total, token_ids, tokenizer.pad_token_id),
              "segment_ids": tf.clip_by_value(place - first + 1, 0, 1) * padding_mask, "padding_mask": padding_mask}
    return {"inputs": inputs, "example": example, "window": window, "begin": begin, "size": size, "budget": budget,
            "step": step, "context_length": context_length, "place": place, "first": first,
            "in_context": in_context, "source": source, "windows": windows, "needed": needed,
            "question_cut": asked["lengths"] - 2 > max_question_length, "offsets": offsets,
            "context_lengths": context_lengths}


def text_window_rows(tokenizer, texts, sequence_length, doc_stride, max_windows=None, width=None):
    """`[CLS] tokens [SEP]` rows for every window of every text: those of `kbert_core.windows.text_windows`
    (`sequence_length - 2` tokens each, starting `doc_stride` apart), which a classifier reads a long text by.

    Returns a dict: `inputs`, the model inputs (rows, width) int32; `example`, the text of each row; and per
    text `windows` (rows made, at most `max_windows`), `needed` (rows without that limit) and `lengths` (tokens).

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> rows = text_window_rows(tokenizer, tf.constant(["a b a b a", ""]), 5, 2)
    >>> [rows[key].numpy().tolist() for key in ("example", "windows")], rows["inputs"]["token_ids"].numpy().tolist()
    ([[0, 0, 1], [2, 1]], [[2, 5, 6, 5, 3], [2, 5, 6, 5, 3], [2, 3, 0, 0, 0]])
    """
    ids, _, _, lengths = whole_texts(tokenizer, texts)
    budget = sequence_length - 2
    step = min(budget, doc_stride)
    needed = 1 + tf.maximum(0, -(-(lengths - budget) // step))
    windows = needed if max_windows is None else tf.minimum(needed, max_windows)
    example, window = window_rows(windows)
    begin = window * step
    total = tf.minimum(budget, tf.gather(lengths, example) - begin)[:, tf.newaxis] + 2
    if width is None:
        width = tf.reduce_max(tf.concat([total[:, 0], [2]], 0))
    place = tf.range(width)[tf.newaxis, :]
    token_ids = tf.where(place == 0, tokenizer.cls_token_id, tokenizer.sep_token_id)
    token_ids = tf.where((place >= 1) & (place < total - 1), pick(ids, example, begin[:, tf.newaxis] + place - 1),
                         token_ids)
    padding_mask = tf.clip_by_value(total - place, 0, 1)  # by arithmetic, as in question_window_rows
    inputs = {"token_ids": tf.where(place < total, token_ids, tokenizer.pad_token_id),
              "segment_ids": tf.zeros_like(padding_mask), "padding_mask": padding_mask}
    return {"inputs": inputs, "example": example, "windows": windows, "needed": needed, "lengths": lengths}


def scatter(values, rows, columns, where, shape):
    """A `shape` tensor holding values[i, j] at [rows[i], columns[i, j]] where `where` (else 0).

    The places written must be distinct (TF sums repeated places, TFLite need not).
    """
    rows = tf.broadcast_to(rows[:, tf.newaxis], tf.shape(columns))
    indices = tf.stack([tf.boolean_mask(rows, where), tf.boolean_mask(columns, where)], axis=-1)
    return tf.scatter_nd(indices, tf.boolean_mask(values, where), shape)


def word_window_rows(tokenizer, ids, word_ids, lengths, sequence_length, max_windows, fixed_width=False):
    """`[CLS] tokens [SEP]` rows of at most `sequence_length` tokens, each text cut before a word's
    first piece as `kbert_core.windows.word_windows` cuts it (the windows do not overlap; a word longer
    than a window is cut inside), for `BertTokenClassifierPreprocessor.call` in `tf.data` and for the
    exported NER graph (`kbert.export.long_inputs`).

    Args:
        tokenizer: `kbert.text.BertTokenizer` (its special token ids).
        ids, word_ids, lengths: every token of each text and its word (-1: none), as `whole_texts`
            gives them, the word ids the tokenizer's or the caller's own (CoNLL words).
        sequence_length: int. Tokens per row, [CLS] and [SEP] included.
        max_windows: int. Most windows read per text; `truncated` flags a text that needed more.
        fixed_width: bool. Rows `sequence_length` long, not as long as the longest.

    Returns `(inputs, layout)`: the rows, and per text token its `row` and `place` there, `first`
    (a word's first piece), `read`; per text `lengths`, `windows`, `truncated`; per row its
    `example`, `begin` (its first token in the text) and `size` (tokens it holds).

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"])
    >>> ids, _, word_ids, lengths = whole_texts(tokenizer, tf.constant(["a bc a"]))
    >>> inputs, layout = word_window_rows(tokenizer, ids, word_ids, lengths, 4, 8)
    >>> inputs["token_ids"].numpy().tolist(), layout["windows"].numpy().tolist()
    ([[2, 5, 3, 0], [2, 6, 7, 3], [2, 5, 3, 0]], [3])
    """
    batch, columns = tf.shape(ids)[0], tf.shape(ids)[1]
    position = tf.broadcast_to(tf.range(columns)[tf.newaxis, :], tf.shape(ids))
    previous = tf.pad(word_ids[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
    first = (position < lengths[:, tf.newaxis]) & (word_ids >= 0) & tf.not_equal(word_ids, previous)
    # Where the window that starts at p ends: the last first piece in (p, p + budget], else p + budget.
    seen = tf.cumsum(tf.cast(first, tf.int32), axis=1)  # first pieces in [0, p]
    first_at = scatter(position, tf.range(batch), seen - 1, first, tf.stack([batch, columns]))
    budget = sequence_length - 2
    reach = position + budget
    seen_by_reach = tf.gather(seen, tf.minimum(reach, columns - 1), batch_dims=1)
    cut = tf.gather(first_at, tf.maximum(seen_by_reach - 1, 0), batch_dims=1)
    end = tf.where(seen_by_reach > seen, cut, reach)
    end = tf.where(reach >= lengths[:, tf.newaxis], lengths[:, tf.newaxis], end)
    # Window k begins at end^k(0): composing `end` with itself by doubling, for k = 0 .. max_windows.
    steps = tf.range(max_windows + 1)
    begins = tf.zeros([batch, max_windows + 1], tf.int32)
    for level in range(max_windows.bit_length()):
        taken = tf.equal(tf.bitwise.bitwise_and(tf.bitwise.right_shift(steps, level), 1), 1)
        begins = tf.where(taken[tf.newaxis, :], tf.gather(end, begins, batch_dims=1), begins)
        end = tf.gather(end, end, batch_dims=1)
    starts = begins[:, :max_windows]  # where windows 0 .. max_windows - 1 begin
    windows = tf.maximum(tf.reduce_sum(tf.cast(starts < lengths[:, tf.newaxis], tf.int32), axis=1), 1)
    example, window = window_rows(windows)
    begin = tf.gather_nd(begins, tf.stack([example, window], axis=1))
    size = tf.gather_nd(begins, tf.stack([example, window + 1], axis=1)) - begin
    width = sequence_length if fixed_width else tf.reduce_max(tf.concat([size + 2, [2]], 0))
    place = tf.range(width)[tf.newaxis, :]
    inside = (place >= 1) & (place <= size[:, tf.newaxis])
    token_ids = tf.where(place == 0, tokenizer.cls_token_id,
                         tf.where(place == size[:, tf.newaxis] + 1, tokenizer.sep_token_id, tokenizer.pad_token_id))
    token_ids = tf.where(inside, pick(ids, example, begin[:, tf.newaxis] + place - 1), token_ids)
    # The mask by arithmetic, not from a bool: the converter folds the model's cast of a mask
    # cast from bool back to the bool, whose new axis TFLite's STRIDED_SLICE cannot take.
    padding_mask = tf.clip_by_value(size[:, tf.newaxis] + 2 - place, 0, 1)
    inputs = {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids), "padding_mask": padding_mask}
    # Each token of a text: its window (row) and place there; tokens past the last window read are left out.
    index = tf.range(max_windows)[tf.newaxis, :]
    later = (index >= 1) & (index < windows[:, tf.newaxis])
    starts_window = scatter(tf.ones_like(starts), tf.range(batch), starts, later,
                            tf.stack([batch, columns]))
    token_window = tf.cumsum(starts_window, axis=1)
    row = tf.cumsum(windows, exclusive=True)[:, tf.newaxis] + token_window
    read_to = tf.gather(begins, windows, batch_dims=1)
    layout = {"first": first, "row": row, "place": position - tf.gather(begins, token_window, batch_dims=1) + 1,
              "read": position < read_to[:, tf.newaxis], "lengths": lengths, "windows": windows,
              "truncated": read_to < lengths, "example": example, "begin": begin, "size": size}
    return inputs, layout
