"""BertQuestionAnswererPreprocessor: questions and contexts to strided windows, answers to token targets."""

import numpy as np
import pytest

from kbert.data.readers.squad_example import SquadExample
from kbert.tasks import BertQuestionAnswerer, BertQuestionAnswererPreprocessor
from kbert.tasks.bert_question_answerer_preprocessor import answer_start
from kbert.text import BertTokenizer

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "sings", "?", "ann", ".", "bob", "runs"]
#              0        1        2        3        4         5      6        7    8      9    10     11
QUESTION, CONTEXT = "Who sings?", "Bob runs. Ann sings."
# sequence_length=9 leaves 9 - 3 specials - 3 question tokens = 3 context tokens a window; with doc_stride=2
# the context's 6 tokens (bob runs . ann sings .) give windows at 0, 2 and 4. "Ann" (token 3) is in the second
# only, at position 5 + 1 there.
WINDOW_IDS = [[2, 5, 6, 7, 3, 10, 11, 9, 3],
              [2, 5, 6, 7, 3, 9, 8, 6, 3],
              [2, 5, 6, 7, 3, 6, 9, 3, 0]]
SEGMENTS = [[0] * 5 + [1] * 4, [0] * 5 + [1] * 4, [0] * 5 + [1] * 3 + [0]]
STARTS, ENDS = [0, 6, 0], [0, 6, 0]


def preprocessor(**kwargs):
    return BertQuestionAnswererPreprocessor(BertTokenizer(VOCABULARY), **{"sequence_length": 9, "doc_stride": 2,
                                                                          **kwargs})


def test_prepare_cuts_the_context_into_strided_windows_with_the_answer_in_one():
    prepared = preprocessor().prepare(([QUESTION], [CONTEXT]), ["Ann"])
    assert prepared.inputs["token_ids"].tolist() == WINDOW_IDS
    assert prepared.inputs["segment_ids"].tolist() == SEGMENTS
    assert prepared.inputs["padding_mask"].tolist() == [[1] * 9, [1] * 9, [1] * 8 + [0]]
    assert prepared.y["start_logits"].tolist() == STARTS and prepared.y["end_logits"].tolist() == ENDS
    assert len(prepared.windows) == 3


def test_a_two_token_answer_given_with_its_start():
    """ "sings." at character 14: tokens 4 and 5 of the context, both in the last window only (5 + 0, 5 + 1);
    the second window holds "sings" but not "." and gets [CLS]."""
    prepared = preprocessor().prepare(([QUESTION], [CONTEXT]), [{"text": "sings.", "answer_start": 14}])
    assert prepared.y["start_logits"].tolist() == [0, 0, 5] and prepared.y["end_logits"].tolist() == [0, 0, 6]


def test_questions_are_cut_to_max_question_length():
    prepared = preprocessor(sequence_length=16, max_question_length=1).prepare(([QUESTION], [CONTEXT]))
    assert prepared.inputs["token_ids"].tolist() == [[2, 5, 3, 10, 11, 9, 8, 6, 9, 3]]
    assert prepared.y is None


def test_answer_start_finds_the_answer_or_names_the_example():
    example = SquadExample("7", "Who?", CONTEXT)
    assert answer_start(example, "Ann") == 10
    assert answer_start(example, {"text": ".", "answer_start": 19}) == 19  # given: not the first "."
    assert answer_start(example, {"text": "."}) == 8
    with pytest.raises(ValueError, match="Example 7: the answer 'Ann' is not in its context at character 3"):
        answer_start(example, {"text": "Ann", "answer_start": 3})
    with pytest.raises(ValueError, match="Example 7: the answer 'Zoe' is not in its context.$"):
        answer_start(example, "Zoe")
    with pytest.raises(ValueError, match="Example 7: the answer must be a non-empty string; got ' '"):
        answer_start(example, " ")


def test_a_questions_sample_weight_is_each_of_its_windows_in_prepare_and_call():
    tf = pytest.importorskip("tensorflow")
    questions, contexts = [QUESTION, QUESTION], [CONTEXT, "Ann sings."]
    prepared = preprocessor().prepare((questions, contexts), ["Ann", "Ann"], [2.0, 0.5])
    rows_of = prepared.windows.window_examples
    assert len(rows_of) > 2 and prepared.sample_weight.tolist() == [[2.0, 0.5][i] for i in rows_of]
    *_, called = preprocessor()(
        (tf.constant(questions), tf.constant(contexts)),
        {"text": tf.constant(["Ann", "Ann"]), "answer_start": tf.constant([CONTEXT.index("Ann"), 0])},
        tf.constant([2.0, 0.5]))
    assert called.numpy().tolist() == prepared.sample_weight.tolist()


def test_prepare_refuses_a_wrong_number_of_answers():
    with pytest.raises(ValueError, match="Got 1 questions but 2 answers"):
        preprocessor().prepare(([QUESTION], [CONTEXT]), ["Ann", "Bob"])


def test_call_gives_the_same_windows_and_targets_in_tensorflow():
    tf = pytest.importorskip("tensorflow")
    x = (tf.constant([QUESTION, QUESTION]), tf.constant([CONTEXT, CONTEXT]))
    # The second answer, a space, covers no context token: its example is dropped.
    inputs, targets = preprocessor()(x, {"text": tf.constant(["Ann", " "]), "answer_start": tf.constant([10, 3])})
    assert inputs["token_ids"].numpy().tolist() == WINDOW_IDS  # a multiple of 8 would pass sequence_length
    assert inputs["segment_ids"].numpy().tolist() == SEGMENTS
    assert targets["start_logits"].numpy().tolist() == STARTS and targets["end_logits"].numpy().tolist() == ENDS
    only_inputs = preprocessor(sequence_length=16)(x)
    assert only_inputs["token_ids"].numpy().tolist() == [[2, 5, 6, 7, 3, 10, 11, 9, 8, 6, 9, 3, 0, 0, 0, 0]] * 2


def test_qa_reads_every_window_and_finds_answers_late_in_long_contexts():
    model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=16)
    context = "filler words here. " * 20 + "Ann sings."
    prepared = model.preprocessor.prepare((["Who sings?"], [context]), ["Ann"])
    assert len(prepared.windows) > 5 and prepared.y["start_logits"].max() > 0


def test_qa_tf_data_preprocessing_matches_the_windows_on_squad(data_dir):
    """`call` (tf.data) against `prepare` (SquadWindows): the same windows and answer positions."""
    tf = pytest.importorskip("tensorflow")
    from kbert.data.readers.squad import read_squad

    examples = [e for e in read_squad(data_dir / "squad" / "train-v1.1.json", articles=slice(0, 1),
                                      verbose=False) if e.answer_start is not None][:60]
    model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=96)
    model.preprocessor.doc_stride = 32
    x = ([e.question for e in examples], [e.context for e in examples])
    answers = [{"text": e.answers[0], "answer_start": e.answer_start} for e in examples]
    prepared = model.preprocessor.prepare(x, answers)
    assert len(prepared.windows) > 2 * len(examples)  # long contexts: several windows each
    data = tf.data.Dataset.from_tensor_slices((x, {"text": [a["text"] for a in answers],
                                                   "answer_start": [a["answer_start"] for a in answers]}))
    inputs, targets = model.preprocessor(*next(iter(data.batch(len(examples)))))
    width = prepared.inputs["token_ids"].shape[1]
    for key, value in prepared.inputs.items():
        np.testing.assert_array_equal(inputs[key].numpy()[:, :width], value)
    for key, value in prepared.y.items():
        np.testing.assert_array_equal(targets[key].numpy(), value)
