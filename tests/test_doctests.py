"""Every public docstring example of the library runs (examples are doctests)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import lie_stats

MODULES = ["lie_stats"] + sorted(
    m.name for m in pkgutil.walk_packages(lie_stats.__path__, prefix="lie_stats.")
    if m.name not in ("lie_stats.__main__",)
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
