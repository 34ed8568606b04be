"""The ``correlation`` kind's VERDICT on nulls with co-varying layer means.

Head data are nested in layers, and layer means of two metrics often co-vary (both larger
in deep layers). The within-layer permutation p is calibrated there; the verdict's sign
must be too: it is taken from ``effect - null_center`` (the correlation beyond what the
within-layer null expects), not from the pooled correlation, whose sign is the
between-layer one. Each case: 300 simulated cubes of 12 layers x 8 heads, layer effects of
SD 1.5 in both metrics correlated 0.9 across layers, n_perm 999. The cases at the end add
few layers (5), unequal layers (4-16 heads) and ``partial_correlation`` (null and power).
"""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube

from ._design import binomial_band, head_cube, layered_pair

N_SIMS = 300
ALPHA = 0.05


def _spec(direction: str) -> HypothesisSpec:
    return HypothesisSpec(
        id="X-corr", claim="c", source="s", datasets=("sim",), test="correlation",
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        params={"n_perm": 999, "n_boot": 0, "alpha": ALPHA}, prediction=Prediction(direction),
        gate="report")


def _verdicts(within_rho: float, direction: str, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    spec = _spec(direction)
    counts = {"supported": 0, "refuted": 0, "inconclusive": 0}
    for _ in range(N_SIMS):
        x, y = layered_pair(rng, within_rho=within_rho)
        counts[evaluate_cube(spec, head_cube(x, y), dataset="sim").verdict] += 1
    return counts


@pytest.mark.slow
def test_null_verdicts_hold_alpha_over_two_in_each_direction():
    counts = _verdicts(0.0, "positive", seed=1)
    lo, hi = binomial_band(N_SIMS, ALPHA / 2)  # (2, 15): a two-sided test, one direction each
    assert lo <= counts["supported"] <= hi, counts
    assert lo <= counts["refuted"] <= hi, counts


@pytest.mark.slow
def test_a_negative_within_layer_correlation_never_supports_a_positive_prediction():
    # the pooled rho is positive here (layer means co-vary); the heads' correlation is -0.274.
    # Judged on the pooled sign, a positive prediction was "supported" in 242/400 such cubes.
    counts = _verdicts(-0.274, "positive", seed=2)
    assert counts["supported"] <= binomial_band(N_SIMS, ALPHA / 2)[1], counts
    assert counts["refuted"] >= 0.5 * N_SIMS, counts  # and power to call it: refuted in most


@pytest.mark.slow
def test_power_for_the_within_layer_effect():
    counts = _verdicts(-0.274, "negative", seed=3)
    assert counts["supported"] >= 0.5 * N_SIMS, counts
    assert counts["refuted"] <= binomial_band(N_SIMS, ALPHA / 2)[1], counts


# ------------------------------------------------------------------ few and unequal layers
# Cases of ``_design_corr.CASES``: the table path (the kind's binding and rule on the table
# a per-head selection gives; checked against evaluate_cube in test_replication.py and
# test_equivalence.py), n_perm 199; full-size figures in benchmarks/calibration_correlation.md.

from ._design_corr import CASES, run_case  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("case", ["correlation: null, 5 layers", "correlation: null, unequal layers",
                                  "partial_correlation: null"])
def test_null_verdicts_hold_alpha_over_two_with_few_or_unequal_layers(case):
    # 5 layers of 8 heads, or 8 layers of 4-16 heads, co-varying layer means; partial: a
    # covariate shared by x and y at the head level and by the layers
    r = run_case(CASES[case], 150, seed=31)
    hi = binomial_band(150, ALPHA / 2)[1]
    assert r["supported"] <= hi and r["refuted"] <= hi, r
    lo2, hi2 = binomial_band(150, ALPHA)
    assert lo2 <= r["p_below"] <= hi2, r


@pytest.mark.slow
@pytest.mark.parametrize("case", ["correlation: power, 5 layers", "partial_correlation: power"])
def test_power_with_few_layers_and_for_the_partial_correlation(case):
    # rho_w = +0.4 on 5 layers of 8 (predicted positive); partial rho_w = -0.3 (predicted negative)
    r = run_case(CASES[case], 80, seed=32)
    assert r["supported"] >= 0.4 * 80 and r["refuted"] == 0, r
