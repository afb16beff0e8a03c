"""The SHA-256 of a run folder's files, recorded when it is written and checked when it is loaded.

`record_checksums` writes `SHA256SUMS` in `sha256sum`'s format (so `sha256sum -c SHA256SUMS`
in the folder checks it too); `check_checksums` refuses a file that no longer has the recorded
digest (flipped bits on a disk, a copy cut short, an edit), naming it. A folder written before
kbert recorded them has no `SHA256SUMS`, and nothing of it is checked.
"""

import hashlib
import pathlib

from kbert.saving.run_folder import RunFolderError

CHECKSUMS_FILE = "SHA256SUMS"


class ChangedFileError(RunFolderError):
    """A file of a run folder whose SHA-256 is not the one recorded when the folder was written."""


def sha256(path, chunk=1 << 20):
    """The SHA-256 of the file `path`, in hex, read a MiB at a time.

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> _ = path.write_text("abc")
    >>> sha256(path)[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def record_checksums(folder):
    """Writes `SHA256SUMS` in `folder`: the SHA-256 of every file in it and its subfolders, one
    `DIGEST  NAME` line each (`sha256sum`'s format), sorted by name.

    Example:
    >>> import tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "metrics.json").write_text("{}")
    >>> record_checksums(folder)
    >>> print((folder / CHECKSUMS_FILE).read_text(), end="")
    44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a  metrics.json
    """
    folder = pathlib.Path(folder)
    files = sorted(path for path in folder.rglob("*") if path.is_file() and path.name != CHECKSUMS_FILE)
    (folder / CHECKSUMS_FILE).write_text("".join(f"{sha256(path)}  {path.relative_to(folder).as_posix()}\n"
                                                 for path in files))


def recorded_checksums(folder):
    """`{name: SHA-256}` of `folder`'s `SHA256SUMS`; {} when it has none (a folder written before kbert recorded
    them). A line that is not `DIGEST  NAME` raises `RunFolderError` naming the file and the line."""
    record = pathlib.Path(folder) / CHECKSUMS_FILE
    if not record.is_file():
        return {}
    digests = {}
    for number, line in enumerate(record.read_text("utf-8").splitlines(), 1):
        digest, _, name = line.partition(" ")
        name = name[1:] if name[:1] in (" ", "*") else ""  # "  NAME" (text) or " *NAME" (binary), as sha256sum writes
        if len(digest) != 64 or not name or any(c not in "0123456789abcdef" for c in digest.lower()):
            raise RunFolderError(f"{record} line {number}: expected 'SHA-256  file name', got {line[:80]!r}.")
        digests[name] = digest.lower()
    return digests


def check_checksums(folder, names):
    """Raises `ChangedFileError`, naming the file, when one of the files `names` of `folder` does not have the
    SHA-256 its `SHA256SUMS` recorded. A file the record does not list (or that is not there), and every file of
    a folder without a record, pass unchecked.

    Example:
    >>> import tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "model.keras").write_bytes(b"weights")
    >>> record_checksums(folder)
    >>> check_checksums(folder, ["model.keras", "vocab.txt"])
    >>> _ = (folder / "model.keras").write_bytes(b"weighty")
    >>> check_checksums(folder, ["model.keras"])
    Traceback (most recent call last):
    kbert.saving.checksums.ChangedFileError: .../model.keras: its SHA-256 is not the one recorded in .../SHA256SUMS
    when the run folder was written: the file was changed or damaged since. Restore it, or load it anyway (verify=False
    in Python; or delete SHA256SUMS).
    """
    folder = pathlib.Path(folder)
    recorded = recorded_checksums(folder)
    for name in names:
        path = folder / name
        if name in recorded and path.is_file() and sha256(path) != recorded[name]:
            raise ChangedFileError(f"{path}: its SHA-256 is not the one recorded in {folder / CHECKSUMS_FILE} when the "
                                   f"run folder was written: the file was changed or damaged since. Restore it, or "
                                   f"load it anyway (verify=False in Python; or delete {CHECKSUMS_FILE}).")
