"""A bad declaration fails alone: the declarations beside it in its module are collected and run.

Real files and processes: a module with one malformed spec and one good spec, under plain
``pytest`` and under ``lie-stats run``, gives one failed item (named by the bad spec's id, the
message naming the file and the field) and one passed item; :func:`lie_stats.collect.collect`
gives the good declaration and one error for the bad one. Outside collection a bad spec
still raises as it is built.
"""

from __future__ import annotations

import json

import pytest

from lie_stats import collect
from lie_stats.errors import SpecError
from tests._own_project import own_project, run

MODULE = '''
import lie_stats as ls

BAD = ls.HypothesisSpec(
    id="K9-bad", claim="a typo in a family", source="my notes",
    datasets=("runs/mine.nc",), test="correlation",
    selection={"x": ls.Select("head_contribution", step="first"),
               "y": ls.Select("commutator_raw", family="q", projection="none")},
    params={"n_perm": 199, "n_boot": 50}, prediction=ls.Prediction("negative"), gate="report")

ALSO_BAD = ls.HypothesisSpec(
    id="K9-param", claim="an unknown parameter", source="my notes",
    datasets=("runs/mine.nc",), test="correlation",
    selection={"x": ls.Select("head_contribution", step="first"), "y": ls.Select("change_from_init")},
    params={"n_prem": 199}, prediction=ls.Prediction("negative"), gate="report")

GOOD = ls.HypothesisSpec(
    id="K9-good", claim="initial contribution predicts change", source="my notes",
    datasets=("runs/mine.nc",), test="correlation",
    selection={"x": ls.Select("head_contribution", step="first"), "y": ls.Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=ls.Prediction("negative"), gate="report")
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return own_project(tmp_path_factory.mktemp("bad_declaration"), "K9_mixed", MODULE)


def _check_output(out: str) -> None:
    assert "2 failed, 1 passed" in out, out[-4000:]
    # each bad spec is its own failing item, named by its id, its message naming file and field
    assert "K9_mixed.py::K9-bad" in out and "K9_mixed.py::K9-param" in out, out[-4000:]
    assert "HypothesisSpec 'K9-bad', field \"selection['y'].family\": unknown family 'q'" in out, out[-4000:]
    assert "HypothesisSpec 'K9-param', field \"params['n_prem']\"" in out, out[-4000:]
    assert "K9_mixed.py: HypothesisSpec 'K9-bad'" in out, out[-4000:]


def test_plain_pytest_runs_the_good_spec_beside_a_bad_one(project):
    got = run("-m", "pytest", "myhyp/", "-p", "no:cacheprovider", "-rf", "--lie-reports", "by_pytest",
              cwd=project)
    assert got.returncode == 1, got.stdout[-3000:] + got.stderr[-3000:]
    _check_output(got.stdout)
    rows = json.loads((project / "by_pytest" / "results.json").read_text())
    assert [(r["id"], r["dataset"]) for r in rows] == [("K9-good", "runs/mine.nc")]
    assert rows[0]["verdict"] != "skipped"


def test_lie_stats_run_runs_the_good_spec_beside_a_bad_one(project):
    got = run("-m", "lie_stats", "run", "myhyp/", "--reports", "by_cli", cwd=project)
    assert got.returncode == 1, got.stdout[-3000:] + got.stderr[-3000:]
    _check_output(got.stdout)
    rows = json.loads((project / "by_cli" / "results.json").read_text())
    assert [(r["id"], r["dataset"]) for r in rows] == [("K9-good", "runs/mine.nc")]


def test_collect_gives_the_good_declaration_and_one_error_per_bad_one(project):
    found = collect.collect([project / "myhyp"], dirs=None)
    assert [d.obj.id for d in found.declarations] == ["K9-good"]
    assert [(e.name, e.declaration) for e in found.errors] == [("K9-bad", True), ("K9-param", True)]
    assert all(str(e.path).endswith("K9_mixed.py") for e in found.errors)
    assert "field \"params['n_prem']\"" in found.errors[1].text


def test_a_bad_spec_built_outside_collection_still_raises():
    import lie_stats as ls

    with pytest.raises(SpecError, match="n_prem"):
        ls.HypothesisSpec(id="K9", claim="c", source="s", datasets=("toy",), test="correlation",
                          selection={"x": ls.Select("head_contribution", step="first"),
                                     "y": ls.Select("change_from_init")},
                          params={"n_prem": 1}, prediction=ls.Prediction("negative"), gate="report")
