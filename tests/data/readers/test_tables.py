import json
import re

import keras
import pandas as pd
import pytest

from kbert.data.readers.tables import Layout, Table, read_table, table_format
from kbert.data.readers.text_file import DataFormatError

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="reads files: one backend")

ROWS = [{"review": 'Long, slow and "fun"', "stars": "5"}, {"review": "two\nlines; no", "stars": "1"}]


def test_every_format_gives_the_same_rows(tmp_path):
    """pandas writes each format (its own writers, not kbert's): the rows read back are the same."""
    frame = pd.DataFrame(ROWS)
    frame.to_csv(tmp_path / "r.csv", index=False)
    frame.to_csv(tmp_path / "semicolons.csv", index=False, sep=";")
    frame.to_json(tmp_path / "r.jsonl", orient="records", lines=True)
    frame.to_json(tmp_path / "r.json", orient="records")
    frame.to_parquet(tmp_path / "r.parquet")
    assert read_table(tmp_path / "r.csv").rows == ROWS
    assert read_table(tmp_path / "semicolons.csv", delimiter=";").rows == ROWS
    for name in ("r.jsonl", "r.json", "r.parquet"):
        table = read_table(tmp_path / name)
        assert table.rows == ROWS and table.columns == ["review", "stars"], name
    (tmp_path / "lines.json").write_text((tmp_path / "r.jsonl").read_text())  # datasets' to_json writes JSON Lines
    assert read_table(tmp_path / "lines.json").rows == ROWS


def test_places_name_the_line_or_row(tmp_path):
    (tmp_path / "r.csv").write_text('review,stars\n"a\nb",1\nc,2\n')
    table = read_table(tmp_path / "r.csv")
    assert [table.where(i) for i in range(2)] == [f"{tmp_path / 'r.csv'}:2", f"{tmp_path / 'r.csv'}:4"]
    pd.DataFrame(ROWS).to_parquet(tmp_path / "r.parquet")
    assert read_table(tmp_path / "r.parquet").where(1) == f"{tmp_path / 'r.parquet'}, row 2"


@pytest.mark.parametrize("name, text, message", [
    ("broken.csv", 'review,stars\nfine,1\n"not closed,2\nmore,3\n', "broken.csv:3: cannot read this row"),
    ("fields.csv", "review,stars\nfine,1\ntoo,many,3\n", "fields.csv:3: expected 2 fields (the header's "
                                                          "['review', 'stars']), found 3"),
    ("bad.jsonl", '{"review": "fine"}\n{"review": \n', "bad.jsonl:2: not a JSON object"),
    ("list.jsonl", '{"review": "fine"}\n[1, 2]\n', "list.jsonl:2: expected an object of named fields, found list"),
    ("empty.csv", "\n", "empty.csv: empty: expected a header row"),
])
def test_bad_files_are_named_with_their_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(DataFormatError, match=re.escape(message)):
        read_table(tmp_path / name)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path):
    (tmp_path / "r.csv").write_bytes(b"review,stars\nfine,1\ncaf\xe9,2\n")
    with pytest.raises(DataFormatError, match=re.escape("r.csv:3: invalid UTF-8: byte 0xe9")):
        read_table(tmp_path / "r.csv")


def test_an_unknown_format_or_a_missing_column_is_one_clear_line(tmp_path):
    with pytest.raises(DataFormatError, match=r"r\.xlsx: unknown format '\.xlsx': name the file \.csv"):
        table_format(tmp_path / "r.xlsx")
    with pytest.raises(DataFormatError, match="unknown format 'excel'; kbert reads csv, tsv, jsonl, json, parquet"):
        table_format(tmp_path / "r.csv", "excel")
    table = Table(["review", "stars"], [{"review": "fun", "stars": 5}], ["row 1"], "reviews")
    with pytest.raises(DataFormatError, match=re.escape("reviews: no column 'text' (the texts); its columns are "
                                                        "['review', 'stars']")):
        table.column("text", "the texts")
    (tmp_path / "not.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(DataFormatError, match="not.parquet: not a Parquet file pyarrow can read"):
        read_table(tmp_path / "not.parquet")


def test_a_squad_file_is_not_taken_for_a_table(tmp_path):
    (tmp_path / "squad.json").write_text(json.dumps({"version": "1.1", "data": []}))
    with pytest.raises(DataFormatError, match="SQuAD's layout: a question answerer reads it"):
        read_table(tmp_path / "squad.json")


def test_datasets_class_names_come_with_the_table(tmp_path):
    """A Parquet file written by `datasets` keeps its ClassLabel names."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"text": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["neg", "pos"]),
                                  "tags": datasets.Sequence(datasets.ClassLabel(names=["O", "B-PER"]))})
    dataset = datasets.Dataset.from_dict({"text": ["fun"], "label": [1], "tags": [[1]]}, features=features)
    dataset.to_parquet(tmp_path / "d.parquet")
    table = read_table(tmp_path / "d.parquet")
    assert table.class_names == {"label": ["neg", "pos"], "tags": ["O", "B-PER"]}
    assert table.rows == [{"text": "fun", "label": 1, "tags": [1]}]


def test_a_layout_is_recorded_as_the_apps_flags_name_it():
    layout = Layout("csv", ";", {"text": "review", "label": "stars"}, ("neg", "pos"))
    settings = layout.settings()
    assert settings == {"format": "csv", "delimiter": ";", "text_column": "review", "label_column": "stars",
                        "class_names": ["neg", "pos"]}
    assert Layout.from_settings({**settings, "epochs": 3}) == layout
    assert Layout().settings() == {}
