"""kbert.data.readers.tagged_sentences: joined texts, word spans, label names and aligned splits, by hand."""

import keras
import pytest

from kbert.data.readers.tagged_sentences import TaggedSentences, joined_word_spans

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
def test_texts_and_word_spans():
    data = TaggedSentences([["Née", "à", "São", "Paulo", "."], ["x"], []])
    assert data.texts() == ["Née à São Paulo .", "x", ""]
    spans = data.word_spans()
    assert spans[0].tolist() == [[0, 3], [4, 5], [6, 9], [10, 15], [16, 17]]  # characters, not bytes
    assert spans[1].tolist() == [[0, 1]] and spans[2].shape == (0, 2)
    for text, words, span in zip(data.texts(), data.words, spans):
        assert [text[a:b] for a, b in span] == words
    assert joined_word_spans(["", "ab"]).tolist() == [[0, 0], [1, 3]]


@once
def test_label_names_are_o_then_b_and_i_of_each_sorted_type():
    data = TaggedSentences([["a", "b", "c"], ["d"]], [["I-PER", "O", "B-LOC"], ["B-MISC"]])
    assert data.label_names() == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-PER", "I-PER"]
    assert TaggedSentences([["a"]], [["O"]]).label_names() == ["O"]


@once
def test_take_shuffle_and_split_keep_words_tags_and_lines_together():
    data = TaggedSentences([[f"w{i}"] for i in range(10)], [[f"B-T{i}"] for i in range(10)], list(range(1, 11)),
                           "train.conll")
    taken = data.take([3, 0])
    assert (taken.words, taken.tags, taken.lines, taken.source) == ([["w3"], ["w0"]], [["B-T3"], ["B-T0"]], [4, 1],
                                                                     "train.conll")
    assert TaggedSentences([["a"], ["b"]]).take([1]).tags is None
    shuffled = data.shuffled(seed=0, limit=4)
    assert len(shuffled) == 4 and shuffled.words != data.words[:4]
    train, valid = data.split(0.3, seed=0)
    assert len(train) == 7 and len(valid) == 3
    assert sorted(w for part in (train, valid) for [w] in part.words) == sorted(w for [w] in data.words)
    for part in (shuffled, train, valid):
        assert all(tag == f"B-T{word[1:]}" and line == int(word[1:]) + 1
                   for [word], [tag], line in zip(part.words, part.tags, part.lines))
    with pytest.raises(ValueError, match="train.conll: 1 examples are too few"):
        data.take([0]).split(0.5, seed=0)
