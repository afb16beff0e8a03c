"""A run folder's record of its files' SHA-256 (`SHA256SUMS`): written in `sha256sum`'s format, checked file by file."""

import shutil
import subprocess

import keras
import pytest

from kbert.saving import CHECKSUMS_FILE, ChangedFileError, RunFolderError, check_checksums, record_checksums

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="files only: runs once")


def flip(path, offset, size=4096):
    """Inverts `size` bytes of the file `path` from `offset` on, in place."""
    with open(path, "r+b") as file:
        file.seek(offset)
        block = file.read(size)
        file.seek(offset)
        file.write(bytes(b ^ 0xFF for b in block))


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "model.keras").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "metrics.json").write_text("{}")
    (tmp_path / "logs" / "events").write_text("step 1")
    record_checksums(tmp_path)
    return tmp_path


def test_every_file_is_recorded_as_sha256sum_writes_and_checks_them(folder):
    names = [line.split("  ")[1] for line in (folder / CHECKSUMS_FILE).read_text().splitlines()]
    assert names == ["logs/events", "metrics.json", "model.keras"]
    if shutil.which("sha256sum"):
        checked = subprocess.run(["sha256sum", "-c", CHECKSUMS_FILE], cwd=folder, capture_output=True, text=True)
        assert checked.returncode == 0 and checked.stdout.count(": OK") == 3, checked.stdout + checked.stderr
    check_checksums(folder, ["model.keras", "metrics.json", "logs/events"])


def test_a_file_with_4_kb_flipped_is_named(folder):
    flip(folder / "model.keras", 8192)
    check_checksums(folder, ["metrics.json"])  # only the files asked for are read
    with pytest.raises(ChangedFileError, match=rf"^{folder / 'model.keras'}: its SHA-256 is not the one recorded in "
                                               rf"{folder / CHECKSUMS_FILE} .*verify=False"):
        check_checksums(folder, ["metrics.json", "model.keras"])


def test_a_folder_without_a_record_and_files_it_does_not_list_pass(folder):
    (folder / "eval_dev.json").write_text("{}")  # written later, by an evaluation
    check_checksums(folder, ["eval_dev.json", "vocab.txt"])  # not listed, or not there
    (folder / CHECKSUMS_FILE).unlink()  # a run folder written before kbert recorded them
    flip(folder / "model.keras", 0)
    check_checksums(folder, ["model.keras"])


def test_a_malformed_record_is_named_with_its_line(folder):
    (folder / CHECKSUMS_FILE).write_text((folder / CHECKSUMS_FILE).read_text() + "not a digest\n")
    with pytest.raises(RunFolderError, match=rf"^{folder / CHECKSUMS_FILE} line 4: expected 'SHA-256  file name'"):
        check_checksums(folder, ["model.keras"])
