import keras
from keras import ops

from kbert.tasks.bert_question_answerer_preprocessor import BertQuestionAnswererPreprocessor, is_no_answer
from kbert.tasks.bert_task import BertTask
from kbert_core.answers import MAX_ANSWER_LENGTH, N_BEST
from kbert_core.windows import QA_SEQUENCE_LENGTH


@keras.saving.register_keras_serializable(package="kbert")
class BertQuestionAnswerer(BertTask):
    """Extractive QA (SQuAD): a Dense(2) head on `sequence_output` gives start and end logits.

    On raw inputs, `fit` takes `(questions, contexts)` and the answers (each a string found
    in its context, or SQuAD's `{"text", "answer_start"}`, whose values may be lists as a
    `datasets` SQuAD holds them: the first answer is trained on); `predict` takes
    `(questions, contexts)` and returns per question `{"text", "start", "end", "score",
    "probability", "alternatives"}`, the best span over all windows of its context (text ""
    and start -1 when no span fits) and the texts of the next four.

    With `allow_no_answer` (SQuAD 2.0), a question may have no answer in its context: `fit` takes
    one as "" (or `{"text": [], "answer_start": []}`, as a `datasets` SQuAD 2.0 holds it) and
    trains its windows on [CLS], and `predict` answers "" (start and end 0, as Hugging Face's
    pipeline with `handle_impossible_answer`) where the least of the windows' [CLS] scores
    (start + end logit) beats the best span's by more than `no_answer_threshold` (BERT's
    run_squad.py). Without it, such answers are refused before any step. On token ids
    (`[CLS] question [SEP] context [SEP]`) the model returns a dict of `start_logits` and
    `end_logits`, each (batch, length), in float32; padding positions get -1e9 so that they
    never win and weigh nothing in the softmax. Training targets are
    the answer's first and last token ([CLS], position 0, in windows that lack it). Nothing
    here reads the backbone's pooler, so it stays out of training (see `BertTask`).

    Args:
        backbone: `kbert.BertBackbone`.
        preprocessor: `BertQuestionAnswererPreprocessor` or None (token ids only).
        dropout: float. Dropout on the token vectors before the head (BERT uses none).
        n_best: int. Start and end candidates per window that `predict` pairs.
        max_answer_length: int. Longest answer `predict` gives, in tokens.
        allow_no_answer: bool. Questions may have no answer (SQuAD 2.0): trained on and predicted as "".
        no_answer_threshold: float. How much the no-answer score must beat the best span's by (0: any margin).

    Example:
    >>> model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=32)
    >>> answer = model.predict((["Who sings?"], ["Ann sings."]), verbose=0)[0]
    >>> sorted(answer)
    ['alternatives', 'end', 'probability', 'score', 'start', 'text']
    >>> model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=32, allow_no_answer=True)
    >>> _ = model.fit((["Who sings?", "Who plays?"], ["Ann sings.", "Ann sings."]), ["Ann", ""], verbose=0)
    """

    preprocessor_class = BertQuestionAnswererPreprocessor
    token_outputs = True
    default_sequence_length = QA_SEQUENCE_LENGTH
    input_names = ("questions", "contexts")
    decoding_settings = ("n_best", "max_answer_length", "allow_no_answer", "no_answer_threshold")

    def __init__(self, backbone, preprocessor=None, dropout=0.0, n_best=N_BEST, max_answer_length=MAX_ANSWER_LENGTH,
                 allow_no_answer=False, no_answer_threshold=0.0, **kwargs):
        inputs = backbone.input
        x = backbone(inputs)["sequence_output"]
        x = keras.layers.Dropout(dropout, name="head_dropout")(x)
        logits = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32", name="span_logits",
        )(x)
        real = ops.cast(inputs["padding_mask"], "bool")
        outputs = {
            "start_logits": ops.where(real, logits[..., 0], -1e9),
            "end_logits": ops.where(real, logits[..., 1], -1e9),
        }
        super().__init__(inputs, outputs, backbone, preprocessor, config={
            "dropout": dropout, "n_best": n_best, "max_answer_length": max_answer_length,
            "allow_no_answer": allow_no_answer, "no_answer_threshold": no_answer_threshold}, **kwargs)

    def default_compile_arguments(self):
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"loss": {"start_logits": loss, "end_logits": loss}}

    def check_labels(self, y):
        if not self.allow_no_answer:
            for i, answer in enumerate(y):
                if is_no_answer(answer):
                    raise ValueError(f"Example {i} has no answer (an unanswerable question, as SQuAD 2.0's): build "
                                     "the model with allow_no_answer=True to train on such questions and answer \"\" "
                                     "where the context holds none, or drop it.")
        return y

    def checked_labels(self, y):
        import tensorflow as tf

        if self.allow_no_answer:
            return y
        check = tf.debugging.assert_positive(
            tf.strings.length(y["text"]), "BertQuestionAnswerer: an answer is empty (an unanswerable question): "
            "build the model with allow_no_answer=True to train on such questions")
        with tf.control_dependencies([check]):
            return {key: tf.identity(value) for key, value in y.items()}

    def decode(self, outputs, prepared):
        return self.best_answers(self.ranked_answers(outputs, prepared))

    def ranked_answers(self, outputs, prepared):
        """Per question, its answers best first from the model's `outputs` on `prepared` (as
        `kbert_core.answers.best_answers` ranks them: up to `n_best` spans, and "no answer" where the
        model allows it); `best_answers` of them is what `predict` returns."""
        return prepared.windows.decode(outputs["start_logits"], outputs["end_logits"], self.n_best,
                                       self.max_answer_length, self.allow_no_answer, self.no_answer_threshold)

    @staticmethod
    def best_answers(ranked):
        """`predict`'s answer of each question from its `ranked_answers`: the first, with the next four spans' texts
        as `alternatives` (text "" and start -1 where no span fits)."""
        empty = {"text": "", "start": -1, "end": -1, "score": 0.0, "probability": 0.0}
        return [{**(best[0] if best else empty),
                 "alternatives": [answer["text"] for answer in best[1:] if answer["text"]][:4]}
                for best in ranked]
