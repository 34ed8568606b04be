"""Equivalence kinds (lie_stats.spec.kinds.equivalence): tost_relative and
correlation_equivalence on the planted ``pair`` and ``synth`` data, and tost_paired between
compressions of one cube."""

from __future__ import annotations

import pytest

from lie_stats.spec import Prediction, Select, evaluate_cube
from tests._spec_cubes import COMPRESSION_LAYERS as L, evaluate_one, planted_spec, tost_spec


def test_equivalence_supported_and_refuted(planted_root):
    def pair(metric, dims):
        kw = dict(family="Q", projection="none") if dims else {}
        return {"base": Select(metric, models=("base",), **kw), "tuned": Select(metric, models=("tuned",), **kw)}

    ok = planted_spec(test="tost_relative", datasets=("pair",), selection=pair("killing_self", True),
                      prediction=Prediction("equivalent", bound=1e-3), params={})
    r = evaluate_one(ok, planted_root)
    assert r.verdict == "supported" and r.p_value < 0.05 and abs(r.effect) < 1e-3
    moved = planted_spec(test="tost_relative", datasets=("pair",), selection=pair("commutator_var", True),
                         prediction=Prediction("equivalent", bound=1e-3), params={})
    r = evaluate_one(moved, planted_root)
    assert r.verdict == "refuted" and r.ci_low > 1e-3
    eq = planted_spec(test="correlation_equivalence",
                      selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
                      prediction=Prediction("equivalent", bound=0.3))
    assert evaluate_one(eq, planted_root).verdict == "supported"


def test_tost_paired_equivalent_compressions_supported(compressed):
    res = evaluate_cube(tost_spec("abelian_fraction", "none", "adaptive"), compressed)
    assert res.verdict == "supported" and res.n == 2 * L
    assert abs(res.effect) < 0.01 and -0.025 < res.ci_low < res.ci_high < 0.025


def test_tost_paired_compression_artifact_refuted(compressed):
    res = evaluate_cube(tost_spec("abelian_fraction", "none", "fixed:8"), compressed)
    assert res.verdict == "refuted" and res.effect == pytest.approx(0.3, abs=0.01)


def test_tost_paired_identical_differences_are_undecided(compressed):
    # tau moves from 0 to 1 in every layer: no spread, so the t test is undefined (R's t.test
    # stops: "data are essentially constant"); this used to refute on the limit p = 1
    res = evaluate_cube(tost_spec("abelian_fraction_tau", "none", "fixed:8", step="first"), compressed)
    assert res.verdict == "inconclusive" and "standard error 0" in res.reason
    assert res.effect == 1.0 and res.ci_low == res.ci_high == 1.0


def test_tost_paired_wide_bound_and_missing_units(compressed):
    # a bound wider than the artifact accepts it: the bound is what decides
    assert evaluate_cube(tost_spec("abelian_fraction", "none", "fixed:8", bound=0.5),
                         compressed).verdict == "supported"
    # m1 has no fixed:8 value: only m0's layers pair up
    assert evaluate_cube(tost_spec("commutator_z_mean", "none", "fixed:8", bound=0.5), compressed).n == L
