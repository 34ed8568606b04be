"""The public API: ``import lie_stats as ls`` gives the documented names, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import lie_stats as ls

DOCUMENTED = ("HypothesisSpec", "Select", "Prediction", "OutOfScope", "evaluate", "evaluate_cube",
              "open_cube", "load_dataset", "extract", "delta_cube", "test_kinds")


def test_all_holds_the_documented_names_and_the_errors():
    assert set(DOCUMENTED) <= set(ls.__all__)
    for name in ls.__all__:
        value = getattr(ls, name)
        if name.endswith("Error"):
            assert issubclass(value, ls.LieStatsError), name
    assert ls.extract.__module__ == "lie_stats.extraction.api" and callable(ls.extract)
    assert ls.delta_cube.__module__ == "lie_stats.extraction.delta"
    assert ls.open_cube.__module__ == "lie_stats.cube"
    assert ls.HypothesisSpec.__module__ == "lie_stats.spec.declaration"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_each_public_name_has_a_docstring_example(name):
    # the examples run in tests/test_doctests.py with their modules
    assert ">>>" in (getattr(ls, name).__doc__ or ""), f"lie_stats.{name} has no example"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'opn_cube'"):
        ls.opn_cube  # noqa: B018


def test_import_is_light():
    # the pytest plugin imports the package in every pytest run of the environment: no torch,
    # no statistics, no xarray until a name is used
    code = ("import sys, lie_stats; heavy = [m for m in ('torch', 'xarray', 'scipy', 'lie_stats.spec') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
