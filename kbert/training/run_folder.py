import contextlib
import json
import os
import pathlib
import shutil
import tempfile


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
    temporary = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.partial-", dir=path.parent))
    try:
        yield temporary
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if path.exists():
        old = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
        path.rename(old / path.name)
        temporary.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        temporary.rename(path)


def write_json_atomic(path, content):
    """Writes `content` as JSON to `path` through a temporary file and a rename: never half-written.

    Example:
    >>> import json, os
    >>> path = os.path.join(tempfile.mkdtemp(), "metrics.json")
    >>> write_json_atomic(path, {"f1": 0.9})
    >>> json.load(open(path))
    {'f1': 0.9}
    """
    path = pathlib.Path(path)
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_text(json.dumps(content, indent=2))
    os.replace(temporary, path)
