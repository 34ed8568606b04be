"""Every registered test kind can be diagnosed: each has a design, and each design says in
words what it simulates (shown in the report and in docs/kinds.md)."""

from __future__ import annotations

import sys

import pytest

from lie_stats import diagnosis as D
from lie_stats.spec import test_kinds


@pytest.mark.parametrize("name", sorted(test_kinds()))
def test_every_kind_has_a_design_that_says_what_it_simulates(name):
    design = D.design_for(test_kinds()[name])
    assert design is not None, (f"kind {name} has no design in its family folder's design.py "
                                f"(lie_stats/spec/kinds/<family>/design.py)")
    assert "null:" in design.what and "plant" in design.what, design.what
    assert callable(design.null) and callable(design.null_value)


def test_designs_are_collected_from_the_family_folders_and_a_kind_named_twice_is_an_error(
        tmp_path, monkeypatch):
    from lie_stats.spec import kinds

    for family, kind in (("one", "k1"), ("two", "k2"), ("three", "k1")):
        folder = tmp_path / "fams" / family
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / "design.py").write_text(f"DESIGNS = {{{kind!r}: {family!r}}}\n")
    (tmp_path / "fams" / "__init__.py").write_text("")
    (tmp_path / "fams" / "none").mkdir()  # a family without a design module
    (tmp_path / "fams" / "none" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        designs, homes = kinds._collect_designs(("fams.one", "fams.two", "fams.none"))
        assert designs == {"k1": "one", "k2": "two"}
        assert homes == {"k1": "fams.one.design", "k2": "fams.two.design"}
        with pytest.raises(RuntimeError, match=r"'k1' defined in both fams\.one\.design and "
                                               r"fams\.three\.design"):
            kinds._collect_designs(("fams.one", "fams.three"))
    finally:
        for name in [m for m in sys.modules if m == "fams" or m.startswith("fams.")]:
            del sys.modules[name]
    # the built-in ones: every design comes from its kind's own family folder
    assert all(home == f"{test_kinds()[k].fn.__module__}.design" for k, home in kinds.DESIGN_HOMES.items())
