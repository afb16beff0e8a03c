"""kbert.data.readers.text_file: UTF-8 reading that names the line and column of a byte that is not UTF-8."""

import keras
import pytest

from kbert.data.readers.text_file import DataFormatError, check_utf8, open_text, read_text, utf8_error

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def write(tmp_path, data):
    path = tmp_path / "data.txt"
    path.write_bytes(data)
    return path


@once
def test_utf8_error_names_the_first_bad_byte_by_character_column():
    decode = lambda data: data.decode("utf-8", "surrogateescape")  # noqa: E731, as open_text reads
    assert utf8_error(decode(b"ok")) is None and utf8_error("caf\u00e9 \u4e2d \U0001f600") is None
    assert utf8_error(decode(b"\xff")) == "invalid UTF-8: byte 0xff at column 1"
    # "é" is 2 bytes and "中" 3 but one column each; the second bad byte is not reported.
    assert utf8_error(decode("é中".encode() + b"\x80x\xfe")) == "invalid UTF-8: byte 0x80 at column 3"
    assert utf8_error(decode(b"ab\xc3")) == "invalid UTF-8: byte 0xc3 at column 3"  # a cut 2-byte character


@once
def test_open_text_drops_the_bom_and_reads_any_line_end(tmp_path):
    path = write(tmp_path, b"\xef\xbb\xbfone\r\ntwo\rthree\nbad \xff\n")
    with open_text(path) as lines:
        assert [line.rstrip("\n") for line in lines][:3] == ["one", "two", "three"]
    assert read_text(write(tmp_path, b"\xef\xbb\xbfa\r\nb\rc")) == "a\nb\nc"


@once
def test_read_text_and_check_utf8_name_the_line(tmp_path):
    path = write(tmp_path, b"fine\r\nstill fine\nno\xe9 good\nand \xff\n")
    with pytest.raises(DataFormatError, match="data.txt:3: invalid UTF-8: byte 0xe9 at column 3$"):
        read_text(path)
    with pytest.raises(DataFormatError, match="data.txt:3: invalid UTF-8: byte 0xe9 at column 3$"):
        check_utf8(path)
    first_line = write(tmp_path, b"\xef\xbb\xbf\xff\n")
    with pytest.raises(DataFormatError, match="data.txt:1: invalid UTF-8: byte 0xff at column 1$"):
        read_text(first_line)
    assert check_utf8(write(tmp_path, "ok \u00e9\n".encode())) is None
    assert issubclass(DataFormatError, ValueError)  # callers that catch ValueError still catch it
