import itertools
import re

import keras
import numpy as np
import pandas as pd
import pytest

from kbert.data import read_sentence_tsv
from kbert.data.readers.sentence_table import read_sentences
from kbert.data.readers.tables import Layout
from kbert.data.readers.text_file import DataFormatError

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="reads files: one backend")


def head_of(path, rows, tmp_path):
    """The header and first `rows` rows of a shared TSV, in a file of their own."""
    with open(path, encoding="utf-8") as file:
        lines = list(itertools.islice(file, rows + 1))
    part = tmp_path / path.name
    part.write_text("".join(lines), encoding="utf-8")
    return part


def same_examples(a, b):
    assert a.texts == b.texts and a.pairs == b.pairs and a.label_names == b.label_names
    np.testing.assert_array_equal(a.labels, b.labels)


@pytest.mark.parametrize("name, read", [
    ("sst2/train.tsv", dict(label_names=["negative", "positive"])),
    ("snli/train.tsv", dict(num_texts=2, label_names=["entailment", "neutral", "contradiction"])),
    ("stsb/train.tsv", dict(num_texts=2, regression=True)),
])
def test_csv_json_lines_and_parquet_read_as_the_tsv(tmp_path, data_dir, name, read):
    """The shared data sets, written by pandas as CSV (quoted where needed), JSON Lines, JSON and Parquet, read
    into the same examples as the TSV by the columns of their header (GLUE's names: no flag needed)."""
    tsv = head_of(data_dir / name, 300, tmp_path)
    expected = read_sentence_tsv(tsv, **read)
    frame = pd.read_csv(tsv, sep="\t", quoting=3, dtype=str, keep_default_na=False)  # 3: QUOTE_NONE
    assert frame.shape[0] == 300 and frame.iloc[:, -1].str.contains('"').sum() == 0  # the labels are plain
    for suffix, write in [("csv", lambda path: frame.to_csv(path, index=False)),
                          ("jsonl", lambda path: frame.to_json(path, orient="records", lines=True)),
                          ("json", lambda path: frame.to_json(path, orient="records")),
                          ("parquet", lambda path: frame.to_parquet(path))]:
        path = tmp_path / f"data.{suffix}"
        write(path)
        same_examples(read_sentences(path, **read), expected)
    same_examples(read_sentences(tsv, layout=Layout(columns={"text": frame.columns[0]}), **read), expected)


def test_hugging_face_layouts_with_ids_and_class_names(tmp_path):
    """GLUE's SST-2 as `datasets` saves it: int labels whose ClassLabel names the Parquet file keeps."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"sentence": datasets.Value("string"), "label": datasets.ClassLabel(
        names=["negative", "positive"]), "idx": datasets.Value("int32")})
    dataset = datasets.Dataset.from_dict({"sentence": ["a fine film", "dull"], "label": [1, 0], "idx": [0, 1]},
                                         features=features)
    dataset.to_parquet(tmp_path / "sst2.parquet")
    dataset.to_json(tmp_path / "sst2.jsonl")
    data = read_sentences(tmp_path / "sst2.parquet")
    assert data.label_names == ["negative", "positive"] and data.labels.tolist() == [1, 0]
    data = read_sentences(tmp_path / "sst2.jsonl")  # JSON Lines keeps no names: the ids are the classes
    assert data.label_names == ["0", "1"] and data.labels.tolist() == [1, 0]


def test_columns_by_name_and_multi_label_lists(tmp_path):
    pd.DataFrame({"review": ["great, fun", "dull"], "sentiment": ["pos", "neg"]}).to_csv(tmp_path / "r.csv",
                                                                                         index=False)
    data = read_sentences(tmp_path / "r.csv", layout=Layout(columns={"text": "review", "label": "sentiment"}))
    assert data.texts == ["great, fun", "dull"] and data.label_names == ["neg", "pos"]
    pd.DataFrame({"text": ["a", "b", "c"], "labels": [["sports", "politics"], [], ["sports"]]}).to_json(
        tmp_path / "topics.jsonl", orient="records", lines=True)
    data = read_sentences(tmp_path / "topics.jsonl", multi_label=True)
    assert data.label_names == ["politics", "sports"] and data.labels.tolist() == [[1, 1], [0, 0], [0, 1]]


@pytest.mark.parametrize("name, content, layout, message", [
    ("r.csv", "review,stars\nfun,5\n", None,
     "r.csv: no text column: none of ['sentence', 'text'] is a column; its columns are ['review', 'stars']"),
    ("r.csv", "review,stars\nfun,5\n", Layout(columns={"text": "body"}),
     "r.csv: no column 'body' (the text column); its columns are ['review', 'stars']"),
    ("r.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": "pos"}\n', None,
     "mixed label types: {path}:1 has a class id (1), {path}:2 a class name ('pos')"),
    ("r.jsonl", '{"text": "a", "label": 1}\n{"text": 7, "label": 0}\n', None,
     "{path}:2: column 'text' is not a text: 7"),
    ("r.jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n', None, "{path}:2: the label is missing"),
])
def test_bad_tables_are_one_clear_line(tmp_path, name, content, layout, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataFormatError, match=re.escape(message.format(path=path))):
        read_sentences(path, layout=layout)


def test_a_parquet_file_without_the_column_names_the_columns(tmp_path):
    pd.DataFrame({"premise": ["a"], "label": [0]}).to_parquet(tmp_path / "nli.parquet")
    with pytest.raises(DataFormatError, match=re.escape("nli.parquet: no pair column: none of ['sentence2', "
                                                        "'hypothesis', 'question2', 'sentence', 'text_pair'] is a "
                                                        "column; its columns are ['premise', 'label']")):
        read_sentences(tmp_path / "nli.parquet", num_texts=2)
