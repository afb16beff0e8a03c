import itertools
import json
import re

import keras
import pandas as pd
import pytest

from kbert.data.readers.conll import read_conll
from kbert.data.readers.tables import Layout
from kbert.data.readers.tagged_table import read_tagged_sentences
from kbert.data.readers.text_file import DataFormatError

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="reads files: one backend")

# Hugging Face's conll2003: its ner_tags ids, in its features' order
CONLL2003_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


def conll2003_dataset(sentences):
    """`sentences` (TaggedSentences) as Hugging Face's conll2003 holds them: tokens, and ner_tags ids of ClassLabel
    names."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=list(CONLL2003_TAGS)))})
    ids = [[CONLL2003_TAGS.index(tag) for tag in tags] for tags in sentences.tags]
    return datasets.Dataset.from_dict({"tokens": sentences.words, "ner_tags": ids}, features=features)


@pytest.fixture(scope="module")
def conll(data_dir, tmp_path_factory):
    """The first 40 sentences or so of the shared CoNLL-2003 training file (IOB1, as the original), and the file."""
    path = tmp_path_factory.mktemp("conll") / "train.txt"
    with open(data_dir / "conll2003" / "train.txt", encoding="utf-8") as file:
        lines = list(itertools.islice(file, 1000))
    path.write_text("".join(lines[: max(i for i, line in enumerate(lines) if not line.strip())]), encoding="utf-8")
    return read_conll(path), path


def test_hugging_face_conll2003_layouts_read_as_the_conll_file(conll, tmp_path):
    """conll2003 as `datasets` saves it (tokens and ner_tags ids; its ClassLabel names in the Parquet file) and
    as JSON Lines with the names given: the same words and BIO tags as the CoNLL text."""
    sentences, _ = conll
    dataset = conll2003_dataset(sentences)
    dataset.to_parquet(tmp_path / "conll.parquet")
    dataset.to_json(tmp_path / "conll.jsonl")
    for path, layout in [(tmp_path / "conll.parquet", None),
                         (tmp_path / "conll.jsonl", Layout(class_names=CONLL2003_TAGS))]:
        read = read_tagged_sentences(path, layout=layout)
        assert read.words == sentences.words and read.tags == sentences.tags, path.name
    assert len(sentences) >= 40


def test_tag_names_as_words_and_csv_cells(conll, tmp_path):
    sentences, path = conll
    assert read_tagged_sentences(path).tags == sentences.tags  # a .txt is CoNLL text
    frame = pd.DataFrame({"words": [json.dumps(words) for words in sentences.words],
                          "tags": [" ".join(tags) for tags in sentences.tags]})
    frame.to_csv(tmp_path / "conll.csv", index=False)
    read = read_tagged_sentences(tmp_path / "conll.csv")
    assert read.words == sentences.words and read.tags == sentences.tags


@pytest.mark.parametrize("row, layout, message", [
    ({"tokens": ["EU", "rejects"], "ner_tags": [3, 0]}, None,
     "{path}:1: column 'ner_tags' holds tag ids (3): give the tag names in id order"),
    ({"tokens": ["EU", "rejects"], "ner_tags": [3, 9]}, Layout(class_names=CONLL2003_TAGS),
     "{path}:1: tag id 9 is not an id of the 9 tag names"),
    ({"tokens": ["EU", "rejects"], "ner_tags": ["B-ORG"]}, None, "{path}:1: 2 words but 1 tags."),
    ({"tokens": ["EU"], "ner_tags": ["ORG"]}, None, "{path}:1: tag 'ORG' is not O, B-TYPE or I-TYPE"),
    ({"tokens": "EU", "ner_tags": ["B-ORG"]}, Layout(columns={"tags": "labels"}),
     "{path}: no column 'labels' (the tags column); its columns are ['tokens', 'ner_tags']"),
    ({"words": 7, "ner_tags": ["B-ORG"]}, Layout(columns={"tokens": "words"}),
     "{path}:1: column 'words' is not a list of words: 7"),
])
def test_bad_rows_are_one_clear_line(tmp_path, row, layout, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataFormatError, match=re.escape(message.format(path=path))):
        read_tagged_sentences(path, layout=layout)
