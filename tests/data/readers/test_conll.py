import keras
import pytest

from kbert.data.readers.conll import ConllFormatError, read_conll


def write(tmp_path, text):
    path = tmp_path / "ner.txt"
    path.write_text(text)
    return path


def test_blank_lines_anywhere_and_no_final_blank(tmp_path):
    path = write(tmp_path, "\n\n-DOCSTART- O\n\nEU B-ORG\nrejects O\n  \n\n\nPeter B-PER\nBlackburn I-PER")
    data = read_conll(path)
    assert data.words == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert data.tags == [["B-ORG", "O"], ["B-PER", "I-PER"]]
    assert data.lines == [5, 10]


def test_iob1_and_four_columns_become_bio(tmp_path):
    path = write(tmp_path, "U.N. NNP I-NP I-ORG\nofficial NN I-NP O\nEkeus NNP I-NP I-PER\n"
                           "heads VBZ I-VP O\nBonn NNP I-NP I-LOC\nParis NNP I-NP B-LOC\n")
    assert read_conll(path).tags == [["B-ORG", "O", "B-PER", "O", "B-LOC", "B-LOC"]]
    assert read_conll(write(tmp_path, "a I-PER\nb I-LOC\n")).tags == [["B-PER", "B-LOC"]]


def test_errors_name_file_and_line(tmp_path):
    with pytest.raises(ConllFormatError, match=r"ner.txt:2: expected 'token TAG'"):
        read_conll(write(tmp_path, "a O\nlonely\n"))
    with pytest.raises(ConllFormatError, match=r"ner.txt:3: tag 'E-PER' is not O, B-TYPE or I-TYPE"):
        read_conll(write(tmp_path, "a O\n\nb E-PER\n"))
    with pytest.raises(ConllFormatError, match=r"ner.txt:1: tag 'B-FOO' is not among the model's labels"):
        read_conll(write(tmp_path, "a B-FOO\n"), label_names=["O", "B-PER", "I-PER"])
    with pytest.raises(ConllFormatError, match="no sentences"):
        read_conll(write(tmp_path, "\n\n"))


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "ner.txt"
    path.write_bytes(b"EU B-ORG\n\nPar\xeds B-LOC\n")
    with pytest.raises(ConllFormatError, match="ner.txt:3: invalid UTF-8: byte 0xed at column 4"):
        read_conll(path)


def test_unlabeled_and_label_names(tmp_path):
    path = write(tmp_path, "a B-PER\nb I-PER\n\nc B-LOC\n")
    assert read_conll(path, labeled=False).tags is None
    assert read_conll(path).label_names() == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_real_conll_counts(data_dir):
    data = read_conll(data_dir / "conll2003" / "valid.txt")
    assert len(data) == 3250 and sum(map(len, data.words)) == 51362
