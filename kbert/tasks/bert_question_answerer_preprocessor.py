import keras
import numpy as np

from kbert.data.readers.squad_example import SquadExample
from kbert.data.windows.squad import SquadWindows
from kbert.tasks.bert_preprocessor import BertPreprocessor, Prepared, text_pairs
from kbert_core.windows import MAX_QUESTION_LENGTH, QA_DOC_STRIDE, QA_SEQUENCE_LENGTH


@keras.saving.register_keras_serializable(package="kbert")
class BertQuestionAnswererPreprocessor(BertPreprocessor):
    """Questions and contexts to `[CLS] question [SEP] context window [SEP]` windows.

    Long contexts are read through overlapping windows (`doc_stride` tokens apart, BERT's
    recipe; see `kbert.data.windows.squad.SquadWindows`), so a question has as many rows as its context
    has windows. With answers, each window's targets are the answer's first and last token,
    or [CLS] (position 0) where the window lacks the answer; a question without an answer (""
    or `{"text": [], ...}`: SQuAD 2.0's, which `BertQuestionAnswerer` takes with `allow_no_answer`)
    has [CLS] in every window. A question's sample weight, if any, is each of its windows'. `call`
    makes the same windows and targets in TensorFlow ops, for training on a `tf.data` batch of
    `(questions, contexts)` with answers as `{"text": ..., "answer_start": ...}` (character index;
    text "": no answer); examples whose answer covers no context token are dropped there.

    Args:
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Tokens per window (384 in BERT's recipe).
        doc_stride: int. Tokens between the starts of consecutive windows.
        max_question_length: int. Question tokens kept.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "?"])
    >>> preprocessor = BertQuestionAnswererPreprocessor(tokenizer, sequence_length=8, doc_stride=2)
    >>> prepared = preprocessor.prepare((["a?"], ["a b a b a"]), ["b a"])
    >>> prepared.inputs["token_ids"].tolist(), prepared.y["start_logits"].tolist()
    ([[2, 5, 7, 3, 5, 6, 5, 3], [2, 5, 7, 3, 5, 6, 5, 3]], [5, 0])
    """

    def __init__(self, tokenizer, sequence_length=QA_SEQUENCE_LENGTH, doc_stride=QA_DOC_STRIDE,
                 max_question_length=MAX_QUESTION_LENGTH, **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        self.doc_stride = doc_stride
        self.max_question_length = max_question_length

    def prepare(self, x, y=None, sample_weight=None):
        questions, contexts = text_pairs(x, ("questions", "contexts"))
        if y is not None and len(y) != len(questions):
            raise ValueError(f"Got {len(questions)} questions but {len(y)} answers.")
        examples = [SquadExample(str(i), question, context)
                    for i, (question, context) in enumerate(zip(questions, contexts))]
        for example, answer in zip(examples, [] if y is None else y):
            if is_no_answer(answer):
                continue  # no answers: [CLS] in every window
            answer = first_answer(answer)
            example.answers, example.answer_start = [answer_text(answer)], answer_start(example, answer)
        windows = SquadWindows(self.tokenizer, examples, self.sequence_length, self.doc_stride,
                               self.max_question_length, training=y is not None, unanswerable=True)
        if windows.skipped:
            raise ValueError(f"{windows.skipped} answer(s) cover no context token.")
        targets = None if y is None else {"start_logits": windows.start_positions,
                                          "end_logits": windows.end_positions}
        weights = None if sample_weight is None else np.asarray(sample_weight, "float32")[windows.window_examples]
        return Prepared(windows.inputs, targets, weights, windows)

    def call(self, x, y=None, sample_weight=None):
        import tensorflow as tf

        from kbert.data.windows.tensors import question_window_rows  # TensorFlow ops: loaded with TensorFlow

        questions, contexts = x
        rows = question_window_rows(self.tokenizer, questions, contexts, self.sequence_length, self.doc_stride,
                                    self.max_question_length)
        tf.debugging.assert_positive(rows["budget"], f"sequence_length={self.sequence_length} leaves no room "
                                     "for the context after a question")
        inputs, offsets, example, begin, first = (rows[k] for k in ("inputs", "offsets", "example", "begin", "first"))
        if y is None:
            return self.pad_to_multiple(inputs)
        start = tf.cast(y["answer_start"], tf.int32)[:, tf.newaxis]
        end = start + tf.strings.length(y["text"], unit="UTF8_CHAR")[:, tf.newaxis]
        in_text = tf.range(tf.shape(offsets)[1])[tf.newaxis, :] < rows["context_lengths"][:, tf.newaxis]
        overlap = in_text & (offsets[..., 1] > start) & (offsets[..., 0] < end)
        located = tf.gather(tf.reduce_any(overlap, 1), example)
        answer_first = tf.gather(tf.argmax(tf.cast(overlap, tf.int32), 1, output_type=tf.int32), example)
        answer_last = tf.gather(tf.shape(overlap)[1] - 1 - tf.argmax(
            tf.cast(overlap[:, ::-1], tf.int32), 1, output_type=tf.int32), example)
        holds = located & (begin <= answer_first) & (answer_last < begin + rows["size"])
        targets = {"start_logits": tf.where(holds, first[:, 0] + answer_first - begin, 0),
                   "end_logits": tf.where(holds, first[:, 0] + answer_last - begin, 0)}
        keep = located | tf.gather(tf.strings.length(y["text"]) == 0, example)  # or no answer: [CLS]
        inputs = {key: tf.boolean_mask(value, keep) for key, value in self.pad_to_multiple(inputs).items()}
        targets = {key: tf.boolean_mask(value, keep) for key, value in targets.items()}
        if sample_weight is None:
            return inputs, targets
        return inputs, targets, tf.boolean_mask(tf.gather(tf.cast(sample_weight, tf.float32), example), keep)

    def get_config(self):
        return {**super().get_config(), "doc_stride": self.doc_stride,
                "max_question_length": self.max_question_length}


def is_no_answer(answer):
    """Whether `answer` says its question has none in the context (SQuAD 2.0): "", or SQuAD's `{"text": [], ...}`
    (a `datasets` SQuAD 2.0's) or `{"text": "", ...}`.

    Example:
    >>> is_no_answer({"text": [], "answer_start": []}), is_no_answer(""), is_no_answer("Ann"), is_no_answer(None)
    (True, True, False, False)
    """
    text = answer.get("text") if isinstance(answer, dict) else answer
    if isinstance(text, (list, tuple, np.ndarray)):
        return len(text) == 0
    return isinstance(text, str) and not text


def first_answer(answer):
    """`answer` as one answer: of SQuAD's `{"text": [...], "answer_start": [...]}` (a `datasets` SQuAD's), the
    first.

    Example:
    >>> first_answer({"text": ["Ann", "Ann"], "answer_start": [0, 0]})
    {'text': 'Ann', 'answer_start': 0}
    """
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), (list, tuple, np.ndarray)):
        return answer
    texts, starts = list(answer["text"]), list(answer.get("answer_start", [None] * len(answer["text"])))
    return {"text": texts[0], "answer_start": None if starts[0] is None else int(starts[0])}


def answer_text(answer):
    """The text of an answer given as a str or as SQuAD's `{"text", "answer_start"}`."""
    return answer["text"] if isinstance(answer, dict) else answer


def answer_start(example, answer):
    """Where `answer` starts in `example.context`; a ValueError names the example if nowhere."""
    text = answer_text(answer)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"Example {example.id}: the answer must be a non-empty string; got {text!r}.")
    start = answer.get("answer_start") if isinstance(answer, dict) else None
    if start is None:
        start = example.context.find(text)
    if start < 0 or example.context[start : start + len(text)] != text:
        raise ValueError(f"Example {example.id}: the answer {text!r} is not in its context"
                         + ("" if start < 0 else f" at character {start}") + ".")
    return start
