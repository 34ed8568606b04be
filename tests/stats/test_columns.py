"""lie_stats.columns and the package surface: fixed, unique, numeric result columns,
named in one module only."""

from __future__ import annotations

import ast
from pathlib import Path

import lie_stats
import lie_stats.stats as stats
from lie_stats.columns import STAT_COLUMNS
from lie_stats import columns as C

FAMILIES = [name for name in C.__all__ if name.endswith("_COLUMNS")]


def test_every_family_starts_with_stat_columns_and_has_unique_names():
    assert len(FAMILIES) == 30  # STAT_COLUMNS and the 29 families' tuples
    for name in FAMILIES:
        cols = getattr(C, name)
        assert cols[: len(STAT_COLUMNS)] == STAT_COLUMNS, name
        assert len(set(cols)) == len(cols), name


def test_public_api_is_exported():
    for name in stats.__all__:
        assert hasattr(stats, name), name
    for name in ("permutation_indices", "permutation_pvalue", "cluster_bootstrap_indices",
                 "correlation", "partial_correlation", "group_difference", "tost_relative",
                 "tost_correlation", "replicate_correlation", "trend", "enrichment",
                 "depth_gradient", "depth_crossover", "boundary_ratio", "compare_models",
                 "mixed_model", "adjust_pvalues"):
        assert name in stats.__all__, name


PACKAGE = Path(lie_stats.__file__).parent
COLUMNS_FILE = PACKAGE / "columns.py"
#: Every string columns.py names (result columns, p-values, verdicts, gates).
NAMES = {name for name in C.__all__ if isinstance(getattr(C, name), str)}
VALUES = {getattr(C, name) for name in NAMES}


def _module_assignments(path: Path) -> list[tuple[int, str, object]]:
    """``(line, name, value)`` of each module-level assignment of ``path`` (tuple unpacking
    included; ``value`` the literal string, or None when it is not one)."""
    out = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                pairs = [(target, value)]
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                pairs = list(zip(target.elts, value.elts))
            else:
                pairs = [(t, None) for t in ast.walk(target) if isinstance(t, ast.Name)]
            for t, v in pairs:
                if isinstance(t, ast.Name):
                    literal = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                    out.append((node.lineno, t.id, literal))
    return out


def _violations(paths, root: Path = PACKAGE.parent) -> list[str]:
    """The module-level definitions of a result name in ``paths``: a ``*_COLUMNS`` tuple, a
    name columns.py defines, or an upper-case constant holding one of its strings."""
    bad = []
    for path in paths:
        for line, name, literal in _module_assignments(path):
            where = f"{path.relative_to(root)}:{line}: {name}"
            if name.endswith("_COLUMNS"):
                bad.append(f"{where} (a tuple of result columns)")
            elif name in NAMES:
                bad.append(f"{where} (a name of lie_stats.columns)")
            elif literal in VALUES and name.isupper():
                bad.append(f"{where} = {literal!r} (a column of lie_stats.columns)")
    return bad


def test_no_module_but_columns_names_a_result_column():
    others = [p for p in sorted(PACKAGE.rglob("*.py")) if p != COLUMNS_FILE]
    assert len(others) > 50
    assert _violations(others) == []


def test_the_check_finds_a_column_defined_elsewhere(tmp_path):
    # the check above cannot pass by reading nothing: each way of defining a name is caught,
    # and importing a name from columns is not a definition
    probe = tmp_path / "probe.py"
    probe.write_text('P_OPPOSITE = "p_opposite"\nMY_COLUMNS = ("n",)\nOTHER_P = "p_greater"\n'
                     'A, B = "x", "p_less"\nfrom lie_stats.columns import N_STRATA\n')
    assert _violations([probe], root=tmp_path) == [
        "probe.py:1: P_OPPOSITE (a name of lie_stats.columns)",
        "probe.py:2: MY_COLUMNS (a tuple of result columns)",
        "probe.py:3: OTHER_P = 'p_greater' (a column of lie_stats.columns)",
        "probe.py:4: B = 'p_less' (a column of lie_stats.columns)",
    ]


def test_every_p_column_is_read_in_the_docstring_and_pairs_are_columns():
    p_names = sorted(v for v in VALUES if v.startswith("p_"))
    assert len(p_names) > 20
    missing = [v for v in p_names if f"``{v}``" not in C.__doc__]
    assert missing == []
    for pair in C.ONE_SIDED_PAIRS:
        assert {pair.toward, pair.against} <= VALUES and pair.toward != pair.against
        assert f"``{pair.toward}``" in C.__doc__ and f"``{pair.against}``" in C.__doc__


def test_verdicts_and_gates_are_named_once():
    assert C.VERDICTS == (C.SUPPORTED, C.REFUTED, C.INCONCLUSIVE, C.SKIPPED)
    assert C.GATES == (C.GATE_REPLICATION, C.GATE_PINNED, C.GATE_REPORT)
    assert (C.N, C.STATISTIC, C.P_VALUE, C.EFFECT, C.CI_LOW, C.CI_HIGH) == C.STAT_COLUMNS
