"""Every registered test kind can be diagnosed: each has a design, and each design says in
words what it simulates (shown in the report and in docs/kinds.md)."""

from __future__ import annotations

import pytest

from lie_stats import diagnosis as D
from lie_stats.spec import test_kinds


@pytest.mark.parametrize("name", sorted(test_kinds()))
def test_every_kind_has_a_design_that_says_what_it_simulates(name):
    design = D.design_for(test_kinds()[name])
    assert design is not None, f"kind {name} has no design in its family folder's design.py (lie_stats/spec/kinds/<family>/design.py)"
    assert "null:" in design.what and "plant" in design.what, design.what
    assert callable(design.null) and callable(design.null_value)
