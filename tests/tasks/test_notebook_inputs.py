"""Issue 55: every task's fit, evaluate and predict take what a notebook holds: a pandas DataFrame or Series, a
`datasets.Dataset` or column, a tuple of texts (kbert.tasks.table_inputs). Each is checked against the same call on
plain lists, the path the other task tests cover on every backend: the tables become those lists before anything
that depends on the backend, so one backend runs these."""

import keras
import numpy as np
import pytest

from kbert.tasks import BertClassifier, BertQuestionAnswerer, BertSentenceEncoder, BertTokenClassifier
from tests.conftest import ONCE_ON_TORCH
from tests.tasks import task_examples as examples

pandas = pytest.importorskip("pandas")
datasets = pytest.importorskip("datasets")

pytestmark = ONCE_ON_TORCH
TABLES = {"DataFrame": pandas.DataFrame, "Dataset": datasets.Dataset.from_dict}


def steps(model):
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))


def select(table, columns):
    """The table's `columns`, in that order: `df[columns]`, `dataset.select_columns(columns)`."""
    return table[columns] if isinstance(table, pandas.DataFrame) else table.select_columns(columns)


def test_a_tuple_of_texts_is_texts_not_texts_and_pairs():
    """Issue 55: fit(("good film", "bad film"), (1, 0)) failed with "got 9 examples but 2 labels"."""
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)
    model.fit(("good film", "bad film"), (1, 0), batch_size=1, verbose=0)
    assert steps(model) == 2
    np.testing.assert_allclose(model.predict(("good film", "bad film"), verbose=0),
                               model.predict(["good film", "bad film"], verbose=0), atol=1e-6)


@pytest.mark.parametrize("kind", TABLES)
def test_the_classifier_fits_a_table_of_texts_with_its_label_column_named(kind):
    texts, labels = examples.SENTIMENT
    table = TABLES[kind]({"review": texts, "sentiment": labels})
    model = BertClassifier.from_preset("bert_tiny", num_classes=2, sequence_length=16)
    model.fit(table, "sentiment", batch_size=2, verbose=0)
    assert steps(model) == 2 and model.label_names == ["neg", "pos"]  # names taken from the data
    model.fit(table["review"], table["sentiment"], batch_size=2, verbose=0)  # a Series, a datasets column
    assert steps(model) == 4
    expected = model.predict(texts, verbose=0)
    np.testing.assert_allclose(model.predict(select(table, ["review"]), verbose=0), expected, atol=1e-6)
    np.testing.assert_allclose(model.predict(table["review"], verbose=0), expected, atol=1e-6)
    assert model.evaluate(table, "sentiment", verbose=0) == pytest.approx(model.evaluate(texts, labels, verbose=0))


@pytest.mark.parametrize("kind", TABLES)
def test_the_classifier_reads_pairs_from_the_columns_selected_in_their_order(kind):
    (premises, hypotheses), labels = examples.NLI
    table = TABLES[kind]({"hypothesis": hypotheses, "idx": list(range(4)), "premise": premises, "label": labels})
    model = BertClassifier.from_preset("bert_tiny", num_classes=3, sequence_length=16)
    model.fit(select(table, ["premise", "hypothesis"]), table["label"], batch_size=2, verbose=0)
    assert steps(model) == 2
    np.testing.assert_allclose(model.predict(select(table, ["premise", "hypothesis"]), verbose=0),
                               model.predict((premises, hypotheses), verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match=r"reads a (DataFrame|datasets.Dataset)'s columns, in order, as \(texts, "
                                         r"pairs\): 1 to 2 of them; this one has 3 input columns \['hypothesis', "
                                         r"'idx', 'premise'\]"):
        model.fit(table, "label", verbose=0)
    with pytest.raises(ValueError, match=r"y='gold' names no column .*; its columns are \['hypothesis', 'idx', "
                                         r"'premise', 'label'\]"):
        model.fit(table, "gold", verbose=0)
    assert steps(model) == 2


@pytest.mark.parametrize("kind", TABLES)
def test_the_token_classifier_fits_a_table_of_word_lists_and_tag_ids(kind):
    words, tags = examples.NER
    label_names = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    table = TABLES[kind]({"tokens": words, "ner_tags": [[label_names.index(tag) for tag in row] for row in tags]})
    model = BertTokenClassifier.from_preset("bert_tiny", label_names=label_names, sequence_length=16)
    model.fit(table, "ner_tags", batch_size=2, verbose=0)
    assert steps(model) == 2
    model.fit(select(table, ["tokens"]), table["ner_tags"], batch_size=2, verbose=0)
    assert steps(model) == 4
    texts = TABLES[kind]({"text": examples.PREDICT["ner"]})
    assert model.predict(texts, verbose=0) == model.predict(examples.PREDICT["ner"], verbose=0)


@pytest.mark.parametrize("kind", TABLES)
def test_the_question_answerer_fits_a_squad_table_with_its_answers_as_datasets_holds_them(kind):
    (questions, contexts), answers = examples.QA
    texts = [answer["text"] if isinstance(answer, dict) else answer for answer in answers]
    squad = [{"text": [text], "answer_start": [context.find(text)]} for text, context in zip(texts, contexts)]
    table = TABLES[kind]({"id": ["a", "b", "c", "d"], "question": questions, "context": contexts, "answers": squad})
    model = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=24)
    model.fit(select(table, ["question", "context"]), table["answers"], batch_size=2, verbose=0)
    assert steps(model) > 0
    predict = TABLES[kind]({"question": examples.PREDICT["qa"][0], "context": examples.PREDICT["qa"][1]})
    assert model.predict(predict, verbose=0) == model.predict(examples.PREDICT["qa"], verbose=0)
    with pytest.raises(ValueError, match="Example 0 has no answer"):
        model.fit((["Who?"], ["Nobody."]), [{"text": [], "answer_start": []}], verbose=0)


@pytest.mark.parametrize("kind", TABLES)
def test_the_sentence_encoder_fits_a_table_of_scored_pairs_and_encodes_a_column(kind):
    table = TABLES[kind]({"sentence1": ["a cat sits", "a man sings"], "sentence2": ["a cat is sitting", "stocks fell"],
                          "score": [4.8, 0.2]})
    model = BertSentenceEncoder.from_preset("bert_tiny", score_range=(0, 5), sequence_length=16)
    model.fit(table, "score", batch_size=2, verbose=0)
    assert steps(model) == 1
    expected = model.predict(["a cat sits", "a man sings"], verbose=0)
    np.testing.assert_allclose(model.predict(table["sentence1"], verbose=0), expected, atol=1e-6)
    np.testing.assert_allclose(model.predict(("a cat sits", "a man sings"), verbose=0), expected, atol=1e-6)
    with pytest.raises(ValueError, match="for pairs of texts call similarity"):
        model.predict(select(table, ["sentence1", "sentence2"]), verbose=0)
