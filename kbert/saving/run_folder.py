"""Run folders on disk: their file names, keeping two runs out of one folder, and writing them atomically.

A task run folder (`kbert.training`'s `write_run_folder`) holds `model.keras`, the tokenizer
and `metrics.json`; a pretraining run folder `backbone.keras` and `settings.json`. What
sits beside a run folder is hidden and named after it (`hidden_beside`): its lock, its
training backups, and what a killed write left behind.
"""

import contextlib
import errno
import fcntl
import glob
import json
import os
import pathlib
import shutil
import tempfile
import zipfile

BACKBONE_FILE = "backbone.keras"  # a backbone folder's model (`kbert.saving.save_backbone`)
MODEL_FILE = "model.keras"  # a task run folder's model (`kbert.training.write_run_folder`)
METRICS_FILE = "metrics.json"
SETTINGS_FILE = "settings.json"  # the settings a pretraining run started with (kbert.recipes.pretrain)


def hidden_beside(path, kind):
    """The hidden path `.NAME.KIND` beside the file or folder `path`: its lock, its backup, a partial write.

    Example:
    >>> hidden_beside("runs/sst2", "lock")
    PosixPath('runs/.sst2.lock')
    """
    path = pathlib.Path(path)
    return path.parent / f".{path.name}.{kind}"


def temporary_beside(path, kind):
    """A new empty folder `.NAME.KIND-XXXXXXXX` beside `path` (`tempfile.mkdtemp`), found again by `all_beside`."""
    path = pathlib.Path(path)
    return pathlib.Path(tempfile.mkdtemp(prefix=hidden_beside(path, kind).name + "-", dir=path.parent))


def all_beside(path, kind):
    """The folders `temporary_beside(path, kind)` made, sorted by name."""
    path = pathlib.Path(path)
    return sorted(path.parent.glob(glob.escape(hidden_beside(path, kind).name) + "-*"))


class RunFolderError(ValueError):
    """A run folder that cannot be used as asked: not writable, in use, of another task, other settings."""


class SettingsChangedError(RunFolderError):
    """A run resumed with settings other than those it started with (`changed_settings`), which it refuses.

    Args:
        where: str or path. What records the settings the run started with (a settings file, a backup).
        changes: list of `(name, started, now)`, as `changed_settings` returns them.

    Its message names each setting by its name; an app words them as its flags (`.where`, `.changes`).

    Example:
    >>> raise SettingsChangedError("runs/.sst2.backup", [("epochs", 3, 2)])
    Traceback (most recent call last):
    kbert.saving.run_folder.SettingsChangedError: runs/.sst2.backup: this run started with epochs 3, not 2. Repeat its
    settings to resume it, or start it over (restart), which discards what it trained.
    """

    def __init__(self, where, changes):
        self.where, self.changes = str(where), list(changes)
        said = "; ".join(f"{name} {started!r}, not {now!r}" for name, started, now in self.changes)
        super().__init__(f"{self.where}: this run started with {said}. Repeat its settings to resume it, or start it "
                         f"over (restart), which discards what it trained.")


class DamagedBackupError(RunFolderError):
    """A training backup that cannot be read back (a write cut short, a damaged disk), with no intact one left to
    resume from.

    Args:
        file: str or path. The backup's file that could not be read.
        reason: str. Why, as the reader said it.
        restart: str. How the caller starts the run over, in its words (an app names its flag).

    Example:
    >>> raise DamagedBackupError("runs/.sst2.backup/step-40.weights.h5", "truncated file")
    Traceback (most recent call last):
    kbert.saving.run_folder.DamagedBackupError: runs/.sst2.backup/step-40.weights.h5: this backup cannot be read
    (truncated file), and no intact backup is left to resume from: start the run over with restart=True, which
    discards what it trained.
    """

    def __init__(self, file, reason, restart="restart=True"):
        self.file, self.reason = str(file), reason
        super().__init__(f"{self.file}: this backup cannot be read ({reason}), and no intact backup is left to resume "
                         f"from: start the run over with {restart}, which discards what it trained.")


def changed_settings(started, settings, may_change=(), renamed=None):
    """The settings of `settings` that differ from `started` (what a run started with): `[(name, started, now)]`,
    sorted by name; a name in `may_change` may differ, and `renamed` maps a setting's former name to its name
    now, so that a run started before a rename compares alike.

    Example:
    >>> changed_settings({"lr": 0.1, "steps": 10, "task": "nsp"}, {"lr": 0.2, "steps": 20, "objective": "nsp"},
    ...                  may_change=["steps"], renamed={"task": "objective"})
    [('lr', 0.1, 0.2)]
    """
    started = {(renamed or {}).get(name, name): value for name, value in started.items()}
    return [(name, started.get(name), settings.get(name)) for name in sorted(set(started) | set(settings))
            if name not in may_change and started.get(name) != settings.get(name)]


def check_writable(path, what="the output folder"):
    """Raises `RunFolderError` now, before any work, when the file or folder `path` could not be written.

    That is: a file stands where a folder of its path should be, or the nearest existing
    folder does not take new entries (read-only, no permission). Tries by creating and
    removing an empty folder there, so a read-only file system is caught too. `what`
    names the argument in the message.

    Example:
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "taken"), "w").close()
    >>> check_writable(os.path.join(folder, "taken", "run"))
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: the output folder .../taken/run: .../taken is a file, not a folder.
    """
    path = pathlib.Path(path)
    base = path.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    for folder in [*reversed(path.parents), path]:  # a file in the way, wherever it is
        if folder.exists() and not folder.is_dir() and folder != path:
            raise RunFolderError(f"{what} {path}: {folder} is a file, not a folder.")
        if not folder.exists():
            break
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=base))
    except OSError as error:
        raise RunFolderError(f"{what} {path}: cannot write in {base} ({error.strerror or error}).") from None


def check_replaceable(path, kind, is_kind, what="the output folder"):
    """Raises `RunFolderError` when `path` exists and `is_kind(path)` does not find in it a `kind` that
    kbert wrote: a new path is made whole, an old output of the same kind is replaced, and nothing
    else a user owns (a folder of their files, a run folder, a model file, metrics) is.

    Example:
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "notes.txt").write_text("mine")
    >>> is_export = lambda path: (path / "export.json").is_file()
    >>> check_replaceable(folder / "new", "an export folder", is_export)
    >>> check_replaceable(folder, "an export folder", is_export)
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: the output folder ...: it exists and is not an export folder ...
    """
    path = pathlib.Path(path)
    if (path.exists() or path.is_symlink()) and not is_kind(path):
        names = sorted(p.name for p in path.iterdir())[:5] if path.is_dir() else None
        held = "" if names is None else f" (it holds {', '.join(names) or 'nothing'})"
        raise RunFolderError(f"{what} {path}: it exists and is not {kind} that kbert wrote: not replaced{held}. "
                             "Choose a new path, or remove it first.")


@contextlib.contextmanager
def claim_run_folder(path, what="the output folder", replaces=True):
    """Checks that the run folder `path` can be written, and keeps other runs out of it while the block runs.

    The lock is `.NAME.lock` beside the folder, holding this process's id, taken with
    `fcntl.flock`: the system releases it when the process ends, even by `kill -9`, so a
    lock file left behind blocks nobody. A second run on the same folder is refused at once.

    Args:
        path: the run folder.
        what: str. What named it, for messages (an app passes the argument that named it).
        replaces: bool. The run writes the folder anew (`write_run_folder`): an existing
            folder that is not a run folder (files, but no model.keras) is refused rather
            than replaced. False for a run that resumes in its folder.

    Example:
    >>> folder = os.path.join(tempfile.mkdtemp(), "run")
    >>> with claim_run_folder(folder):
    ...     with claim_run_folder(folder):
    ...         pass
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: the output folder .../run is in use by another run (process ...)...
    """
    path = pathlib.Path(path)
    check_writable(path, what)
    if path.exists() and not path.is_dir():
        raise RunFolderError(f"{what} {path} is a file, not a run folder.")
    if replaces and path.is_dir() and any(path.iterdir()) and not (path / MODEL_FILE).is_file():
        raise RunFolderError(f"{what} {path} holds files but no {MODEL_FILE}: not a run folder, which "
                             f"training would replace whole. Choose another {what}, or empty it.")
    created = [folder for folder in path.parents if not folder.exists()]  # removed again if the run fails
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = hidden_beside(path, "lock")
    try:
        descriptor = _lock(lock, f"{what} {path}", what)
    except BaseException:
        _remove_empty(created)
        raise
    try:
        yield path
    finally:
        lock.unlink(missing_ok=True)
        os.close(descriptor)
        if not path.exists():
            _remove_empty(created)


@contextlib.contextmanager
def reading_run_folder(path, what="the run folder"):
    """Keeps training runs out of the run folder `path` while the block reads it (evaluate, predict).

    A shared `flock` on the folder's lock (`claim_run_folder`'s): readers do not block each other,
    a training run that writes the folder is refused while one reads, and a read is refused while
    a training run writes (it could read a half-replaced folder), naming the process. The lock file
    is removed by the last one out.

    Example:
    >>> folder = os.path.join(tempfile.mkdtemp(), "run")
    >>> with reading_run_folder(folder), reading_run_folder(folder):  # two readers
    ...     with claim_run_folder(folder):
    ...         pass
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: the output folder .../run is in use by another run (process ...)...
    """
    path = pathlib.Path(path)
    if not path.parent.is_dir():
        yield path
        return
    lock = hidden_beside(path, "lock")
    try:
        descriptor = _locked(lock, fcntl.LOCK_SH)
    except _Held as held:
        raise RunFolderError(f"{what} {path} is being written by a training run (process {held}, lock {lock}): "
                             "wait for it to end.") from None
    except OSError:  # a folder we may read but not write beside: no lock to take
        yield path
        return
    try:
        yield path
    finally:
        try:  # the last one out removes the lock file
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink(missing_ok=True)
        except BlockingIOError:
            pass
        os.close(descriptor)


class _Held(Exception):
    """The lock is held the other way; the message is the holder's process id (or "unknown")."""


def _locked(lock, operation):
    """An open descriptor of the file `lock` (created if absent), `flock`ed with `operation` (LOCK_SH or LOCK_EX)
    without waiting; `_Held` when another holds it the other way."""
    while True:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, operation | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(descriptor, 32).decode(errors="replace").strip() or "unknown"
            os.close(descriptor)
            raise _Held(holder) from None
        if lock.exists() and os.stat(lock).st_ino == os.fstat(descriptor).st_ino:
            return descriptor
        os.close(descriptor)  # its last holder removed it between our open and our lock: take a new one


def _lock(lock, name, what):
    """An open descriptor of the file `lock`, exclusively `flock`ed, holding this process's id."""
    try:
        descriptor = _locked(lock, fcntl.LOCK_EX)
    except _Held as held:
        raise RunFolderError(f"{name} is in use by another run (process {held}, lock {lock}): "
                             f"wait for it to end, or choose another {what}.") from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    return descriptor


def _remove_empty(folders):
    """Removes the folders in `folders` (deepest first) that are empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


_REQUIRED = object()


def read_json(path, missing=_REQUIRED):
    """The JSON value in the file `path` (a run folder's metrics.json or settings.json, a backup's
    metadata): the one way kbert reads them.

    Args:
        path: str or path.
        missing: what to return when there is no such file; without it, FileNotFoundError.

    Raises `RunFolderError` (a ValueError) naming the file when it does not hold JSON.

    Example:
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> read_json(folder / METRICS_FILE, missing={})
    {}
    >>> _ = (folder / METRICS_FILE).write_text('{"max_length": 128')
    >>> read_json(folder / METRICS_FILE)
    Traceback (most recent call last):
    kbert.saving.run_folder.RunFolderError: .../metrics.json: not a JSON file (Expecting ',' delimiter: ...).
    """
    path = pathlib.Path(path)
    if missing is not _REQUIRED and not path.is_file():
        return missing
    try:
        return json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise RunFolderError(f"{path}: not a JSON file ({error}).") from None


@contextlib.contextmanager
def atomic_output_folder(path):
    """Yields a temporary folder that replaces `path` only if the block finishes.

    An error or an interrupt (Ctrl-C, a kill) leaves `path` as it was: never
    half-written. The temporary folder sits beside `path`, so the final rename is
    atomic on one file system.

    Example:
    >>> import os
    >>> root = tempfile.mkdtemp()
    >>> with atomic_output_folder(os.path.join(root, "run")) as folder:
    ...     _ = (folder / "metrics.json").write_text("{}")
    >>> sorted(os.listdir(os.path.join(root, "run")))
    ['metrics.json']
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_beside(path, "partial")
    temporary.chmod(0o777 & ~_umask())  # mkdtemp makes it private; a run folder is an ordinary one
    try:
        yield temporary
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if path.exists():
        old = temporary_beside(path, "old")
        path.rename(old / path.name)
        temporary.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        temporary.rename(path)


def remove_leftovers(out):
    """Removes what a killed write of the run folder `out` left beside it (see
    `atomic_output_folder`, `delete_folder`): `.NAME.partial-*` and `.NAME.deleted-*` folders, and
    `.NAME.old-*` ones, after putting back the previous run folder a kill between two renames left there."""
    out = pathlib.Path(out)
    for old in all_beside(out, "old"):
        if (old / out.name).is_dir() and not out.exists():
            (old / out.name).rename(out)
        shutil.rmtree(old, ignore_errors=True)
    for partial in [*all_beside(out, "partial"), *all_beside(out, "deleted")]:
        shutil.rmtree(partial, ignore_errors=True)


def delete_folder(path):
    """Deletes the folder `path` at once: renamed into a `.NAME.deleted-*` folder beside it, then removed, so a
    kill during the deletion leaves no half folder at `path` (`remove_leftovers` removes the rest).

    Example:
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> (folder / "logs").mkdir(parents=True)
    >>> delete_folder(folder)
    >>> list(folder.parent.iterdir())
    []
    """
    path = pathlib.Path(path)
    if not path.exists():
        return
    trash = temporary_beside(path, "deleted")
    path.rename(trash / path.name)
    shutil.rmtree(trash)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path):
    """Yields a new hidden path `.NAME.partial-XXXXXXXX` beside the file `path`, to write (one per call, so that
    processes writing the same file never share one); a rename puts it in `path`'s place if the block finishes
    (never half-written), else it is removed.

    Example:
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.tsv"
    >>> with atomic_file(path) as partial:
    ...     _ = partial.write_text("sentence\\tlabel\\n")
    >>> path.read_text(), [p.name for p in path.parent.iterdir()]
    ('sentence\\tlabel\\n', ['labels.tsv'])
    """
    path = pathlib.Path(path)
    if path.is_dir():  # checked first: the rename at the end would fail, after all the work
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file: give the file's name", str(path))
    descriptor, name = tempfile.mkstemp(prefix=hidden_beside(path, "partial").name + "-", dir=path.parent)
    os.close(descriptor)
    temporary = pathlib.Path(name)
    try:
        temporary.chmod(0o666 & ~_umask())  # mkstemp makes it private; the file is an ordinary one
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json_atomic(path, content):
    """Writes `content` as JSON to `path` through `atomic_file`: never half-written.

    Example:
    >>> import json, os
    >>> path = os.path.join(tempfile.mkdtemp(), "metrics.json")
    >>> write_json_atomic(path, {"f1": 0.9})
    >>> json.load(open(path))
    {'f1': 0.9}
    """
    with atomic_file(path) as temporary:
        temporary.write_text(json.dumps(content, indent=2))
