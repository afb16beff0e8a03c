"""kbert.data.readers.squad_example: the answer's character span, by hand."""

import keras
import pytest

from kbert.data.readers.squad_example import SquadExample

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
def test_answer_span_is_the_first_answer_from_its_start():
    context = "The Seine flows through Paris."
    example = SquadExample("q", "Which river?", context, ["Seine", "the Seine"], 4)
    assert example.answer_span == (4, 9) and context[4:9] == "Seine"  # the first answer's length, not the second's
    assert example.title == ""


@once
def test_no_span_without_a_located_answer():
    assert SquadExample("q", "Where?", "In Paris.").answer_span is None  # dev-style: nothing given
    assert SquadExample("q", "Where?", "In Paris.", ["Lyon"]).answer_span is None  # not located
    assert SquadExample("q", "Where?", "In Paris.", [], 3).answer_span is None
    assert SquadExample("q", "Where?", "In Paris.", ["In"], 0).answer_span == (0, 2)  # 0 is a start, not "none"
