"""The tests mirror the library: kbert/<part>/<module>.py is tested in tests/<part>/test_<module>.py,
kbert_core/<module>.py in tests/core/, kbert_edge/<module>.py in tests/edge/, kbert_serving/<module>.py in
tests/serving/, and a module at kbert's top in a test_<module>.py of any folder (tests/models/test_config.py)."""

import pathlib

import keras
import pytest

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="reads file names: one backend")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def missing_test_files(root):
    """The library modules under `root` (a checkout) whose mirrored test file does not exist."""
    tests = root / "tests"
    missing = []
    for package, mirror in (("kbert", None), ("kbert_core", "core"), ("kbert_edge", "edge"),
                            ("kbert_serving", "serving")):
        for module in sorted((root / package).rglob("*.py")):
            if module.name == "__init__.py":
                continue
            parts = module.relative_to(root / package).parts
            test_name = f"test_{module.stem}.py"
            if mirror:
                found = (tests / mirror / test_name).is_file()
            elif len(parts) == 1:  # a module at kbert's top
                found = any(tests.rglob(test_name))
            else:
                found = (tests.joinpath(*parts[:-1]) / test_name).is_file()
            if not found:
                missing.append(module.relative_to(root).as_posix())
    return missing


def test_every_library_module_has_its_test_file():
    assert missing_test_files(ROOT) == []


def test_a_module_without_its_test_file_is_named(tmp_path):
    for path in ("kbert/data/reader.py", "kbert/config.py", "kbert_core/windows.py", "kbert_edge/runner.py",
                 "tests/data/test_other.py",
                 "tests/models/test_config.py", "tests/test_windows.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert missing_test_files(tmp_path) == ["kbert/data/reader.py", "kbert_core/windows.py", "kbert_edge/runner.py"]
