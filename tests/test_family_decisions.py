"""Multiplicity decides: a family's results other than its declared primary are decided at
Holm's level within the family, across the run's datasets, whatever a -k selection runs.

Checked on the planted datasets with a module of four specs in one family: the declared
primary is decided on its raw p (``decided_by == "primary"``), the others at the Holm level
(``"holm"``, ``level == alpha * p / p_holm``), no supported result has an adjusted p at or
above alpha unless it is the primary, and a pytest run of one member (``-k``) gives the same
verdict and level as the whole run. Two primaries on one dataset are an error of both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import lie_stats as ls
from tests._spec_cubes import make_datasets

MODULE = '''
from lie_stats.spec import HypothesisSpec, Prediction, Select

FAST = {"n_perm": 999, "n_boot": 100}
XY = {"x": Select("head_contribution", step="first"), "y": Select("change_from_init")}
MAIN = HypothesisSpec(id="F1", claim="contribution predicts change", source="t", datasets=("synth",),
                      test="correlation", selection=XY, params=FAST, prediction=Prediction("negative"),
                      gate="report", primary=True)
PEARSON = HypothesisSpec(id="F1-pearson", claim="the same, linear", source="t", datasets=("synth",),
                         test="correlation", selection=XY, params={**FAST, "method": "pearson"},
                         prediction=Prediction("negative"), gate="report")
NULL = HypothesisSpec(id="F1-ov", claim="ov_norm predicts change", source="t", datasets=("synth",),
                      test="correlation", selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
                      params=FAST, prediction=Prediction("negative"), gate="report")
VALUES = HypothesisSpec(id="F1-values", claim="value norm predicts change", source="t", datasets=("synth",),
                        test="correlation", selection={"x": Select("value_norm"), "y": Select("change_from_init")},
                        params=FAST, prediction=Prediction("positive"), gate="report")
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("family")
    make_datasets(root / "datasets")
    (root / "fam").mkdir()
    (root / "fam" / "family_claims.py").write_text(textwrap.dedent(MODULE))
    return root


def test_non_primary_members_are_decided_at_holm_s_level(project):
    table = ls.run([project / "fam"], datasets_dir=project / "datasets")
    rows = {r.id: r for r in table}
    assert {r.multiplicity["family_size"] for r in table} == {4}
    main = rows["F1"]
    assert main.multiplicity["primary"] is True and main.multiplicity["level"] == 0.05
    assert main.multiplicity["decided_by"] in ("primary", "none")
    adjusted = {r["id"]: r["multiplicity"]["p_adjusted"] for r in table.records()}
    for ident in ("F1-pearson", "F1-ov", "F1-values"):
        r = rows[ident]
        assert r.multiplicity["primary"] is False
        assert r.multiplicity["decided_by"] in ("holm", "none")
        assert r.multiplicity["level"] == pytest.approx(0.05 * r.p_value / adjusted[ident])
        if r.verdict == "supported":
            assert adjusted[ident] < 0.05
    assert any(r.multiplicity["decided_by"] == "holm" for r in table)  # a p decided at the family's level
    assert "Holm level" in rows["F1-values"].reason


def test_a_selection_does_not_change_a_family(project, tmp_path):
    whole = {r.id: r for r in ls.run([project / "fam"], datasets_dir=project / "datasets")}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    got = subprocess.run([sys.executable, "-m", "pytest", "fam", "-p", "no:cacheprovider", "-q", "-k", "F1-values",
                          "--lie-datasets", "datasets", "--lie-reports", str(tmp_path / "r")],
                         cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    (row,) = json.loads((tmp_path / "r" / "results.json").read_text())
    assert row["id"] == "F1-values"
    assert row["verdict"] == whole["F1-values"].verdict
    assert row["multiplicity"]["family_size"] == 4
    assert row["multiplicity"]["level"] == pytest.approx(whole["F1-values"].multiplicity["level"])


def test_two_primaries_on_one_dataset_are_an_error_of_both(project, tmp_path):
    (tmp_path / "two").mkdir()
    text = textwrap.dedent(MODULE).replace('gate="report")\nNULL', 'gate="report", primary=True)\nNULL')
    (tmp_path / "two" / "two_primaries.py").write_text(text)
    table = ls.run([tmp_path / "two"], datasets_dir=project / "datasets")
    errors = "\n".join(table.errors)
    assert "F1::synth" in errors and "F1-pearson::synth" in errors
    assert "at most one primary per dataset" in errors
    assert sorted(r.id for r in table) == ["F1-ov", "F1-values"]
