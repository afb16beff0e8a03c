import re

import keras
import numpy as np
import pytest

from kbert.data import TsvFormatError, read_sentence_tsv


def write(tmp_path, text, name="data.tsv"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_header_bom_and_crlf(tmp_path):
    path = write(tmp_path, "\ufeffsentence\tlabel\r\nnice\t1\r\nawful\t0\r\n")
    data = read_sentence_tsv(path, label_names=["negative", "positive"])
    assert data.texts == ["nice", "awful"]
    assert data.labels.tolist() == [1, 0]
    assert data.pairs is None


def test_pairs_with_word_labels_in_the_given_order(tmp_path):
    path = write(tmp_path, "sentence1\tsentence2\tlabel\na\tb\tneutral\nc\td\tentailment\n")
    data = read_sentence_tsv(path, num_texts=2, label_names=["entailment", "neutral", "contradiction"])
    assert (data.texts, data.pairs, data.labels.tolist()) == (["a", "c"], ["b", "d"], [1, 0])


def test_labels_inferred_from_the_data(tmp_path):
    assert read_sentence_tsv(write(tmp_path, "a\t2\nb\t0\n")).label_names == ["0", "1", "2"]
    assert read_sentence_tsv(write(tmp_path, "a\tpos\nb\tneg\n")).labels.tolist() == [1, 0]


def test_a_huge_class_id_is_refused_naming_the_row_not_made_a_class(tmp_path):
    """Issue 43: 99999999999 made a list of 10^11 classes."""
    path = write(tmp_path, "sentence\tlabel\na\t1\nb\t99999999999\nc\t0\n")
    with pytest.raises(TsvFormatError, match=re.escape("data.tsv:3: label 99999999999 is a class id of 1,000 or "
                                                       "more: classes learned from the data are ids below 1,000")):
        read_sentence_tsv(path)
    data = read_sentence_tsv(path, skip_bad_rows=True)
    assert data.label_names == ["0", "1"] and data.labels.tolist() == [1, 0]
    assert read_sentence_tsv(write(tmp_path, "a\t999\nb\t0\n")).labels.tolist() == [999, 0]  # below: a class


@pytest.mark.parametrize("text, line, message", [
    ("sentence\tlabel\nfine\t1\nno label here\n", 3, "expected 2 tab-separated columns, found 1"),
    ("sentence\tlabel\nfine\t1\nextra\ttab\t1\n", 3, "expected 2 tab-separated columns, found 3"),
    ("sentence\tlabel\n \t1\n", 2, "column 1 (a text) is empty"),
    ("sentence\tlabel\nfine\t\n", 2, "the label is empty"),
    ("sentence\tlabel\nfine\t1\n\nok\t0\n", 3, "blank line"),
    ("sentence\tlabel\nfine\t1\nok\tmaybe\n", 3, "unknown label 'maybe'"),
    ("sentence\tlabel\nfine\t1\nok\t2\n", 3, "unknown label '2'"),
])
def test_bad_rows_name_the_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(TsvFormatError, match=re.escape(f"data.tsv:{line}: {message}")):
        read_sentence_tsv(path, label_names=["negative", "positive"])


def test_bad_rows_skipped_and_counted(tmp_path, capsys):
    path = write(tmp_path, "sentence\tlabel\nfine\t1\nextra\ttab\t1\nok\tmaybe\nbad\t0\n")
    data = read_sentence_tsv(path, label_names=["negative", "positive"], skip_bad_rows=True)
    assert data.texts == ["fine", "bad"] and data.labels.tolist() == [1, 0]
    assert "skipped 2 bad row(s); the first, line 3" in capsys.readouterr().out


def test_regression_scores(tmp_path):
    path = write(tmp_path, "sentence1\tsentence2\tlabel\na\tb\t4.200\nc\td\t0\n")
    data = read_sentence_tsv(path, num_texts=2, regression=True)
    np.testing.assert_allclose(data.labels, [4.2, 0.0])
    with pytest.raises(TsvFormatError, match="bad.tsv:1: the score 'high' is not a number"):
        read_sentence_tsv(write(tmp_path, "a\tb\thigh\n", "bad.tsv"), num_texts=2, regression=True)


once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
@pytest.mark.parametrize("score, reason", [
    ("nan", "the score 'nan' is not finite"),
    ("-inf", "the score '-inf' is not finite"),
    ("1e30", "the score '1e30' is too large"),  # its squared error overflows float32
])
def test_scores_a_model_cannot_train_on_are_bad_rows(tmp_path, score, reason):
    path = write(tmp_path, f"sentence1\tsentence2\tscore\na\tb\t4.2\nc\td\t{score}\ne\tf\t1e3\n")
    with pytest.raises(TsvFormatError, match=re.escape(f"data.tsv:3: {reason}")):
        read_sentence_tsv(path, num_texts=2, regression=True)
    data = read_sentence_tsv(path, num_texts=2, regression=True, skip_bad_rows=True)
    assert data.texts == ["a", "e"] and data.labels.tolist() == pytest.approx([4.2, 1000])


@once
def test_invalid_utf8_names_the_line_or_is_skipped(tmp_path, capsys):
    path = tmp_path / "data.tsv"
    path.write_bytes(b"sentence\tlabel\nfine\t1\ncaf\xe9 noir\t0\nok\t0\n")
    with pytest.raises(TsvFormatError, match=re.escape("data.tsv:3: invalid UTF-8: byte 0xe9 at column 4")):
        read_sentence_tsv(path, label_names=["negative", "positive"])
    data = read_sentence_tsv(path, label_names=["negative", "positive"], skip_bad_rows=True)
    assert data.texts == ["fine", "ok"] and "skipped 1 bad row(s)" in capsys.readouterr().out


def test_unlabeled_and_empty_files(tmp_path):
    assert read_sentence_tsv(write(tmp_path, "a b\nc\n"), labeled=False).texts == ["a b", "c"]
    with pytest.raises(TsvFormatError, match="no examples"):
        read_sentence_tsv(write(tmp_path, "sentence\tlabel\n"))


@pytest.mark.parametrize("header, rows, read", [
    ("text\tlabels", ["a\tsports", "b\tsports,politics", "c\tpolitics"], dict(multi_label=True)),  # by its names
    ("comment\ttopics", ["a\tsports", "b\tsports,politics", "c\tpolitics"], dict(multi_label=True)),  # its own name
    ("pair a\tpair b\trating", ["a\tb\t4.2", "c\td\t1"], dict(num_texts=2, regression=True)),  # a word above scores
    ("comment\tverdict", ["a\t1", "b\t0", "c\t1"], {}),  # a word above class ids
    ("comment\tverdict", ["a\tpositive", "b\tnegative"], dict(label_names=["negative", "positive"])),
])
def test_a_header_is_read_by_what_it_is(tmp_path, capsys, header, rows, read):
    """Issue 55: a multi-label TSV whose header said `labels` (or any name outside a short list) was read as a data
    row, and `labels` became a class."""
    data = read_sentence_tsv(write(tmp_path, "\n".join([header, *rows]) + "\n"), **read)
    assert len(data) == len(rows) and "labels" not in (data.label_names or [])
    said = capsys.readouterr().out
    assert ("read line 1 as the header" in said) == (header.split("\t")[-1] not in ("labels",)), said


def test_a_first_row_like_the_others_is_data(tmp_path, capsys):
    assert len(read_sentence_tsv(write(tmp_path, "a\tpos\nb\tneg\n"))) == 2  # each class once: no header to see
    assert len(read_sentence_tsv(write(tmp_path, "a\tb\t4.2\nc\td\t1\n"), num_texts=2, regression=True)) == 2
    assert capsys.readouterr().out == ""


def test_ids_and_names_mixed_without_names_are_refused(tmp_path):
    path = write(tmp_path, "sentence\tlabel\na\t1\nb\tpos\nc\t0\n")
    with pytest.raises(ValueError, match=re.escape(f"mixed label types: {path}:2 has a class id (1), {path}:3 a "
                                                   "class name ('pos')")):
        read_sentence_tsv(path)
