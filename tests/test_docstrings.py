"""Every example in the docstrings of kbert, kbert_core, kbert_edge and kbert_serving runs and prints what it claims,
on this backend."""

import doctest
import importlib
import pathlib

import pytest

import kbert

ROOT = pathlib.Path(kbert.__file__).parent.parent
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("kbert", "kbert_core", "kbert_edge", "kbert_serving") for path in (ROOT / package).rglob("*.py")
    if path.name != "__init__.py"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
