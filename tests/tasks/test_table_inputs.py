"""kbert.tasks.table_inputs: what a notebook holds (pandas, `datasets`, tuples of texts) as the lists the tasks read,
and kbert without pandas or `datasets`. Through the tasks' fit, evaluate and predict: test_notebook_inputs.py."""

import types

import keras
import numpy as np
import pytest

from kbert.tasks.table_inputs import as_list, raw_inputs
from tests.conftest import run_python

pandas = pytest.importorskip("pandas")
datasets = pytest.importorskip("datasets")

CLASSIFIER = types.SimpleNamespace(input_names=("texts", "pairs"))
QA = types.SimpleNamespace(input_names=("questions", "contexts"))


def test_a_tuple_of_strings_is_texts_and_a_tuple_of_columns_stays_columns():
    assert raw_inputs(CLASSIFIER, ("good film", "bad film"))[0] == ["good film", "bad film"]
    texts = pandas.Series(["a", "b"])
    assert raw_inputs(CLASSIFIER, (texts, ["c", "d"]))[0] == (["a", "b"], ["c", "d"])
    assert raw_inputs(CLASSIFIER, (["a", "b"], ["c", "d"]))[0] == (["a", "b"], ["c", "d"])


def test_series_and_dataset_columns_are_lists_and_arrays_stay():
    x, y, weights = raw_inputs(CLASSIFIER, pandas.Series(["a", "b"]), pandas.Series(["pos", "neg"]),
                               pandas.Series([1.0, 2.0]))
    assert (x, y, weights) == (["a", "b"], ["pos", "neg"], [1.0, 2.0])
    data = datasets.Dataset.from_dict({"text": ["a", "b"], "label": [1, 0]})
    assert raw_inputs(CLASSIFIER, data["text"], data["label"])[:2] == (["a", "b"], [1, 0])
    labels = np.array([1, 0])
    assert raw_inputs(CLASSIFIER, np.array(["a", "b"]), labels)[1] is labels
    assert as_list(range(2)) == [0, 1]


@pytest.mark.parametrize("make_table", [pandas.DataFrame, datasets.Dataset.from_dict], ids=["DataFrame", "Dataset"])
def test_a_tables_columns_are_the_inputs_in_order_and_y_may_name_the_label_column(make_table):
    table = make_table({"hypothesis": ["c", "d"], "premise": ["a", "b"], "label": [0, 2]})
    x, y, _ = raw_inputs(CLASSIFIER, table, "label")
    assert (x, list(y)) == ((["c", "d"], ["a", "b"]), [0, 2])
    x, y, _ = raw_inputs(QA, make_table({"question": ["Who?"], "context": ["Ann."]}))
    assert (x, y) == ((["Who?"], ["Ann."]), None)
    single = make_table({"text": ["a", "b"]})
    assert raw_inputs(CLASSIFIER, single, make_table({"label": [1, 0]}))[:2] == (["a", "b"], [1, 0])


def test_a_dataframes_chosen_columns_come_in_the_order_chosen():
    frame = pandas.DataFrame({"hypothesis": ["c"], "premise": ["a"], "idx": [7]})
    assert raw_inputs(CLASSIFIER, frame[["premise", "hypothesis"]])[0] == (["a"], ["c"])
    data = datasets.Dataset.from_pandas(frame, preserve_index=False)
    assert raw_inputs(CLASSIFIER, data.select_columns(["premise", "hypothesis"]))[0] == (["a"], ["c"])


@pytest.mark.parametrize("x, y, message", [
    (pandas.DataFrame({"text": ["a"], "label": [1]}), "labl",
     r"BertTask.fit: y='labl' names no column of the DataFrame; its columns are \['text', 'label'\]\."),
    (datasets.Dataset.from_dict({"text": ["a"], "label": [1]}), "labl",
     r"names no column of the datasets.Dataset; its columns are \['text', 'label'\]"),
    (pandas.DataFrame({"sentence": ["a"], "label": [1], "idx": [0]}), None,
     r"reads a DataFrame's columns, in order, as \(texts, pairs\): 1 to 2 of them; this one has 3 input columns "
     r"\['sentence', 'label', 'idx'\]. Select the input columns"),
    (["a"], "label", "y='label' names a label column: give x as a pandas DataFrame or a datasets.Dataset"),
    (datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["a"]})}), None,
     r"a datasets.DatasetDict of the splits \['train'\]: give one split, e.g. data\['train'\]"),
    (pandas.DataFrame([["a", "b"]], columns=["text", "text"]), None, r"columns of the same name \['text'\]"),
])
def test_bad_tables_are_refused_naming_what_is_there(x, y, message):
    task = type("BertTask", (), {"input_names": ("texts", "pairs")})()
    with pytest.raises(ValueError, match=message):
        raw_inputs(task, x, y)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="what kbert imports: one backend")
def test_kbert_imports_and_trains_without_pandas_or_datasets(tmp_path):
    script = tmp_path / "without.py"
    script.write_text(
        "import sys\n"
        "sys.modules['pandas'] = sys.modules['datasets'] = None  # an import of either fails\n"
        "import kbert\n"
        "model = kbert.BertClassifier.from_preset('bert_tiny', num_classes=2, sequence_length=16)\n"
        "model.fit(('good film', 'bad film'), ['pos', 'neg'], verbose=0)\n"
        "assert model.label_names == ['neg', 'pos'] and model.predict(['fine'], verbose=0).shape == (1, 2)\n")
    run_python(script)
