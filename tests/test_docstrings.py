"""Every example in the docstrings of kbert and kbert_edge runs and prints what it claims, on this backend."""

import doctest
import importlib
import pathlib

import pytest

import kbert

ROOT = pathlib.Path(kbert.__file__).parent.parent
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("kbert", "kbert_edge") for path in (ROOT / package).rglob("*.py")
    if path.name != "__init__.py"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
