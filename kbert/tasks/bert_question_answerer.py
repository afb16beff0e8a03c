import keras
from keras import ops

from kbert.tasks.bert_question_answerer_preprocessor import BertQuestionAnswererPreprocessor
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
    and start -1 when no span fits) and the texts of the next four. On token ids
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

    Example:
    >>> model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=32)
    >>> answer = model.predict((["Who sings?"], ["Ann sings."]), verbose=0)[0]
    >>> sorted(answer)
    ['alternatives', 'end', 'probability', 'score', 'start', 'text']
    """

    preprocessor_class = BertQuestionAnswererPreprocessor
    token_outputs = True
    default_sequence_length = QA_SEQUENCE_LENGTH
    input_names = ("questions", "contexts")

    def __init__(self, backbone, preprocessor=None, dropout=0.0, n_best=N_BEST, max_answer_length=MAX_ANSWER_LENGTH,
                 **kwargs):
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
            "dropout": dropout, "n_best": n_best, "max_answer_length": max_answer_length}, **kwargs)

    def default_compile_arguments(self):
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"loss": {"start_logits": loss, "end_logits": loss}}

    def decode(self, outputs, prepared):
        answers = prepared.windows.decode(outputs["start_logits"], outputs["end_logits"], self.n_best,
                                          self.max_answer_length)
        empty = {"text": "", "start": -1, "end": -1, "score": 0.0, "probability": 0.0}
        return [{**(best[0] if best else empty), "alternatives": [answer["text"] for answer in best[1:5]]}
                for best in answers]
