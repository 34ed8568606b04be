"""The ``replication`` kind's VERDICT on head data whose layer means co-vary.

The one-sided test in the original's direction is the within-layer permutation p. Small
telescopes (refuted when the effect is smaller than r33, the one the original had 33 %
power to detect) compares the within-layer correlation with r33 using the within-layer
permutation null's standard error. Judged on the pooled rho with an independent-heads
standard error, as before, these nulls were falsely "refuted" 500/500 (co-varying layer
means, no head effect) and 113/200 with the original's effect planted.

Cases (``_design_corr.CASES``): B5's original (rho = -0.274 on 96 heads, r33 = 0.1565),
heads in 12 layers of 8 unless stated, layer effects of intra-class correlation 0.5,
correlated 0.9 between the two variables (the pooled rho is about +0.45 under the null),
n_perm 199. Full-size figures: ``benchmarks/calibration_correlation.md``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lie_stats.spec import Select, evaluate_cube

from ._design import binomial_band, head_cube
from ._design_corr import ALPHA, CASES, GRID, head_table, layered_values, run_case, verdict_of_table


@pytest.mark.slow
def test_null_supports_at_most_alpha_and_the_p_holds_alpha():
    # no within-layer effect: "supported" needs the one-sided p < alpha, so at most alpha
    r = run_case(CASES["replication: null, co-varying layers"], 200, seed=11)
    lo, hi = binomial_band(200, ALPHA)  # (3, 19)
    assert lo <= r["p_below"] <= hi, r
    assert r["supported"] <= hi, r


@pytest.mark.slow
@pytest.mark.parametrize(("case", "n"), [("at r33, co-varying layers", 200),
                                         ("at r33, unequal layers", 120),
                                         ("at tau33, Kendall", 80)])
def test_an_effect_of_exactly_r33_is_refuted_at_most_alpha(case, n):
    # the true within-layer effect is r33 (tau33 for Kendall): small telescopes' null
    r = run_case(CASES[f"replication: {case}"], n, seed=12)
    assert r["refuted"] <= binomial_band(n, ALPHA)[1], r
    assert r["refuted"] == r["p_below"], r  # refuted exactly when p_small_telescopes < alpha


@pytest.mark.slow
def test_power_for_the_original_effect_against_co_varying_layers():
    # the original's rho (-0.274) within layers, a positive pooled rho: mostly supported
    r = run_case(CASES["replication: power, co-varying layers"], 100, seed=13)
    assert r["supported"] >= 60 and r["refuted"] <= binomial_band(100, ALPHA)[1], r


def test_the_table_path_is_evaluate_cube():
    case = CASES["replication: null, co-varying layers"]
    spec = dataclasses.replace(case.spec, selection={
        "x": Select("head_contribution", step="first"), "y": Select("change_from_init", step="last")})
    rng = np.random.default_rng(14)
    for _ in range(4):
        x, y = layered_values(rng, GRID, within_rho=-0.3)
        via_cube = evaluate_cube(spec, head_cube(x.reshape(12, 8), y.reshape(12, 8)), dataset="sim")
        verdict, row = verdict_of_table(spec, head_table({"x": x, "y": y}, GRID))
        assert (via_cube.verdict, via_cube.p_value, via_cube.effect) == (
            verdict, row["p_value"], row["effect"])
