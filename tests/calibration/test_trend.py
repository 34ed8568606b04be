"""VERDICTS of ``trend`` on AR(1) trajectories and of ``depth_crossover`` on pure-noise depth
slopes, and their power.

``trend`` used to permute the checkpoints of one trajectory freely: an AR(1) curve with
phi 0.7 gave p < 0.05 in 9.8 % of series. It now tests each run's correlation with step by
sign flips over runs, which holds alpha whatever the autocorrelation within a run.
``depth_crossover`` had no null test (a noise slope "crossed" in about half of null cubes);
it now needs the declared sign early and the other sign at the end, each tested by layer
permutation. Simulations: ``tests/calibration/_design_cal_trend.py``; full sizes in
benchmarks/calibration_cal_trend.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats.stats import trend

from ._design import binomial_band
from ._design_cal_trend import ALPHA, ar1, crossover_verdicts, trend_verdicts

N = 300
HALF = binomial_band(N, ALPHA / 2)  # (2, 15)


@pytest.mark.slow
def test_trend_over_ar1_runs_holds_alpha_over_two_in_each_direction():
    counts = trend_verdicts(N, 201, n_runs=8, n_steps=17, phi=0.7)
    assert HALF[0] <= counts["supported"] <= HALF[1], counts
    assert HALF[0] <= counts["refuted"] <= HALF[1], counts
    assert counts["p<alpha"] <= binomial_band(N, ALPHA)[1], counts


@pytest.mark.slow
def test_free_permutation_of_one_ar1_trajectory_is_not_calibrated():
    # why the kind no longer uses it: the same AR(1) null, one trajectory, free permutation
    rng = np.random.default_rng(202)
    y = ar1(rng, 17, 200, 0.7)
    steps = np.arange(17) * 32.0
    hits = sum(float(trend(y[:, i], steps, n_perm=199, seed=i)["p_value"].iloc[0]) < ALPHA for i in range(200))
    assert hits > binomial_band(200, ALPHA)[1], hits  # far above 5 % (9.8 % in the audit)


@pytest.mark.slow
def test_trend_power_and_too_few_runs():
    counts = trend_verdicts(200, 203, slope=0.1)  # 1.6 SD rise over 17 checkpoints, 8 runs
    assert counts["supported"] >= 0.5 * 200 and counts["refuted"] == 0, counts
    # 4 runs: 16 sign patterns, p >= 1/16 > alpha / 2: never decides, even for a steep rise
    few = trend_verdicts(60, 204, n_runs=4, slope=0.3)
    assert few["inconclusive"] == 60, few


@pytest.mark.slow
def test_crossover_null_of_pure_noise_slopes():
    counts = crossover_verdicts(N, 205)
    # supported needs both ends significant: at most alpha / 2 (here about (alpha / 2)^2)
    assert counts["supported"] <= HALF[1], counts
    # refuted: either end significant the wrong way at alpha / 4 each: alpha / 2 in all
    assert HALF[0] <= counts["refuted"] <= HALF[1], counts


@pytest.mark.slow
def test_crossover_power_and_direction():
    # gradient +3 per unit depth after warm-up falling to -3 at the end, ICC 0.5 layer noise
    counts = crossover_verdicts(200, 206, gradient=3.0)
    assert counts["supported"] >= 0.5 * 200 and counts["refuted"] == 0, counts
    # the same reversal the other way (- to +) is not support: it refutes
    other = crossover_verdicts(200, 207, gradient=-3.0)
    assert other["supported"] == 0 and other["refuted"] >= 0.5 * 200, other
