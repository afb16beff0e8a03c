"""A misspelt or unknown keyword is refused by every task constructor, `from_preset` and `BertBackbone`,
naming the closest known one (issue 43); Keras's own (name, trainable, dtype) pass."""

import pytest

from kbert import BertBackbone, BertClassifier, BertPretrainer, BertQuestionAnswerer, BertTokenClassifier
from tests.conftest import TINY


@pytest.mark.parametrize("make, keyword, hint", [
    (lambda **kw: BertClassifier.from_preset("bert_tiny", num_classes=2, **kw), "dropuot", "did you mean 'dropout'?"),
    (lambda **kw: BertClassifier.from_preset("bert_tiny", num_classes=2, **kw), "sequence_lenght",
     "did you mean 'sequence_length'?"),
    (lambda **kw: BertClassifier.from_preset("bert_tiny", num_classes=2, **kw), "foo", "it takes "),
    (lambda **kw: BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-X"], **kw), "label_name",
     "did you mean 'label_names'?"),
    (lambda **kw: BertQuestionAnswerer.from_preset("bert_tiny", **kw), "max_answer_lenght",
     "did you mean 'max_answer_length'?"),
    (lambda **kw: BertPretrainer(BertBackbone(**TINY), **kw), "next_sentense", "did you mean 'next_sentence'?"),
    (lambda **kw: BertBackbone(**TINY, **kw), "num_head", "did you mean 'num_heads'?"),
])
def test_an_unknown_keyword_is_refused_naming_the_closest(make, keyword, hint):
    with pytest.raises(TypeError, match=f"got an unexpected keyword argument '{keyword}'") as error:
        make(**{keyword: 1})
    assert hint in str(error.value)


def test_keras_keywords_pass():
    assert BertBackbone(**TINY, name="encoder", trainable=False).name == "encoder"
    assert BertClassifier(BertBackbone(**TINY), num_classes=2, name="head").name == "head"
