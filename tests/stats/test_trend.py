"""lie_stats.stats.trend: trend, enrichment, depth gradient, crossover, boundary ratio."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import boundary_ratio, depth_crossover, depth_gradient, enrichment, trend
from lie_stats import columns as C
from lie_stats.columns import (BOUNDARY_RATIO_TEST_COLUMNS, CROSSOVER_TEST_COLUMNS,
                                     ENRICHMENT_TEST_COLUMNS)

from ._sim import BAND, N_DATASETS, rejections


# ------------------------------------------------------------------ trend
def test_trend_exact_matches_scipy():
    steps = np.array([0, 100, 200, 400, 800, 1600])
    vals = np.array([0.0, 0.03, 0.02, 0.09, 0.15, 0.2])
    res = trend(vals, steps, n_perm=9999, alternative="greater")
    assert list(res.columns) == list(C.TREND_COLUMNS)
    assert res["exact"].iloc[0] == 1 and np.isnan(res["ci_low"].iloc[0])
    # scipy.stats.spearmanr(vals, steps)
    assert res["statistic"].iloc[0] == pytest.approx(sps.spearmanr(vals, steps).statistic)
    # scipy.stats.permutation_test((vals,), spearman, permutation_type="pairings",
    #                              n_resamples=np.inf, alternative="greater")
    ref = sps.permutation_test((vals,), lambda a: sps.spearmanr(a, steps).statistic,
                               permutation_type="pairings", n_resamples=np.inf,
                               alternative="greater").pvalue
    assert res["p_value"].iloc[0] == pytest.approx(ref)  # = 2 / 720


def test_trend_calibrated_and_errors(record_property):
    steps = np.arange(12) * 1000
    ps = [trend(np.random.default_rng(i).normal(size=12), steps, n_perm=199, seed=i)["p_value"].iloc[0]
          for i in range(N_DATASETS)]
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count
    with pytest.raises(StatsInputError, match="constant"):
        trend([1.0, 1.0, 1.0], [0, 1, 2])
    with pytest.raises(StatsInputError, match="at least 3"):
        trend([1.0, 2.0], [0, 1])


# ------------------------------------------------------------------ enrichment
def test_enrichment_exact_swap_test_matches_scipy():
    first = np.array([1.0, 2.0, 1.5, 0.5, 1.2, 0.8])
    last = np.array([2.1, 3.0, 2.2, 1.5, 1.1, 1.9])
    res = enrichment(first, last, n_boot=0, alternative="greater")
    assert list(res.columns) == list(ENRICHMENT_TEST_COLUMNS)
    assert res["effect"].iloc[0] == pytest.approx(last.mean() / first.mean())
    assert res["statistic"].iloc[0] == pytest.approx(np.log(last.mean() / first.mean()))
    assert res["exact"].iloc[0] == 1 and res["n_perm"].iloc[0] == 63

    def stat(a, b, axis=-1):
        return np.log(np.mean(b, axis=axis) / np.mean(a, axis=axis))

    # scipy.stats.permutation_test((first, last), stat, permutation_type="samples",
    #                              n_resamples=np.inf, alternative="greater")  (exact swaps)
    ref = sps.permutation_test((first, last), stat, permutation_type="samples", vectorized=True,
                               n_resamples=np.inf, alternative="greater").pvalue
    assert res["p_value"].iloc[0] == pytest.approx(ref)


def test_enrichment_cluster_flips_and_bootstrap():
    rng = np.random.default_rng(0)
    layer = np.repeat(np.arange(5), 4)
    first = rng.uniform(1, 2, size=20)
    last = first * 1.5 * rng.uniform(0.9, 1.1, size=20)
    res = enrichment(first, last, clusters=layer, n_boot=2000, seed=1)
    assert res["n_perm"].iloc[0] == 2 ** 5 - 1 and res["exact"].iloc[0] == 1
    # all 5 clusters enriched: only "no swap" and "swap all" reach |T|: p = 2 / 32
    assert res["p_value"].iloc[0] == pytest.approx(2 / 32)
    assert res["ci_low"].iloc[0] < 1.5 < res["ci_high"].iloc[0] or \
        abs(res["effect"].iloc[0] - 1.5) < 0.05
    assert res["ci_low"].iloc[0] > 1.3


def test_enrichment_unpaired_and_errors():
    res = enrichment([1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0], n_boot=500)
    assert res["paired"].iloc[0] == 0 and np.isnan(res["p_value"].iloc[0])
    assert res["effect"].iloc[0] == pytest.approx(2.5)
    assert res["ci_low"].iloc[0] < 2.5 < res["ci_high"].iloc[0]
    with pytest.raises(StatsInputError, match="negative"):
        enrichment([1.0, -1.0], [1.0, 2.0])
    with pytest.raises(StatsInputError, match="mean\\(first\\) is 0"):
        enrichment([0.0, 0.0], [1.0, 2.0])
    with pytest.raises(StatsInputError, match="clusters apply to paired"):
        enrichment([1.0, 2.0, 3.0], [1.0, 2.0], clusters=[0, 1, 1])
    with pytest.raises(StatsInputError, match="at least 2"):
        enrichment([np.nan, 1.0], [1.0, np.nan])


def test_enrichment_calibrated_with_layer_effects(record_property):
    # exchangeable (first, last) within pairs, layer effects in level and in the change
    ps_unit, ps_cluster = [], []
    layer = np.repeat(np.arange(12), 8)
    for i in range(N_DATASETS):
        rng = np.random.default_rng(i)
        a, d = rng.normal(size=12)[layer], 0.4 * rng.normal(size=12)[layer]
        first = np.exp(a - d / 2 + 0.3 * rng.normal(size=96))
        last = np.exp(a + d / 2 + 0.3 * rng.normal(size=96))
        ps_cluster.append(enrichment(first, last, clusters=layer, n_boot=0, n_perm=4095)["p_value"].iloc[0])
        if i < 300:
            ps_unit.append(enrichment(first, last, n_boot=0, n_perm=199, seed=i)["p_value"].iloc[0])
    count = rejections(ps_cluster)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count
    # flipping heads one by one ignores the layer-level change: anti-calibrated
    record_property("rejection_rate", rejections(ps_unit) / 300)
    assert rejections(ps_unit) / 300 > 0.2


# ------------------------------------------------------------------ depth gradient
def test_depth_gradient_matches_linregress():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(4, 3, 7))
    slopes = depth_gradient(y)
    assert slopes.shape == (4, 3)
    d = np.arange(7) / 6
    for idx in np.ndindex(4, 3):
        # scipy.stats.linregress(l / (L - 1), y).slope
        assert slopes[idx] == pytest.approx(sps.linregress(d, y[idx]).slope)


def test_depth_gradient_padding_and_explicit_depth():
    y = np.array([[1.0, 2.0, 4.0, np.nan, np.nan], [0.0, 1.0, 2.0, 3.0, 5.0]])
    s = depth_gradient(y)
    assert s[0] == pytest.approx(sps.linregress([0, 0.5, 1.0], [1, 2, 4]).slope)
    assert s[1] == pytest.approx(sps.linregress(np.arange(5) / 4, y[1]).slope)
    d = np.array([0.0, 1, 2, 3, 4])
    assert depth_gradient(y[1], depth=d) == pytest.approx(sps.linregress(d, y[1]).slope)
    assert np.isnan(depth_gradient([np.nan, 1.0, np.nan]))
    with pytest.raises(StatsInputError, match="length >= 2"):
        depth_gradient([1.0])


# ------------------------------------------------------------------ crossover
def _synthetic(steps, slope_of_step, n_layers=6, heads=4, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    layer = np.repeat(np.arange(n_layers), heads)
    depth = layer / (n_layers - 1)
    vals = slope_of_step(np.asarray(steps, float))[:, None] * depth[None, :]
    return vals + noise * rng.normal(size=vals.shape), layer


def test_crossover_interpolates_in_log_step():
    steps = np.array([10, 100, 1000, 10000, 100000])
    # slope = log10(step) - 2.5: crosses zero at step 10^2.5
    vals, layer = _synthetic(steps, lambda s: np.log10(s) - 2.5)
    res = depth_crossover(vals, steps, layer_of_head=layer, n_boot=0)
    assert list(res.columns) == list(CROSSOVER_TEST_COLUMNS)
    assert res["statistic"].iloc[0] == pytest.approx(10 ** 2.5)
    assert res["fraction_of_training"].iloc[0] == pytest.approx(10 ** 2.5 / 1e5)
    assert res["n_crossings"].iloc[0] == 1 and np.isnan(res["p_value"].iloc[0])
    assert res["first_slope"].iloc[0] == pytest.approx(-1.5)


def test_crossover_from_step_zero_is_linear_in_step():
    steps = np.array([0, 1000, 5000])
    vals, layer = _synthetic(steps, lambda s: np.array([-1.0, 3.0, 4.0]))
    res = depth_crossover(vals, steps, layer_of_head=layer, n_boot=0)
    assert res["statistic"].iloc[0] == pytest.approx(250.0)  # -1 + 4 t = 0 at t = 1/4


def test_no_and_several_crossings():
    steps = np.array([1, 10, 100, 1000])
    vals, layer = _synthetic(steps, lambda s: np.ones_like(s))
    res = depth_crossover(vals, steps, layer_of_head=layer, n_boot=200)
    assert np.isnan(res["statistic"].iloc[0]) and res["n_crossings"].iloc[0] == 0
    assert res["boot_fraction_no_crossing"].iloc[0] == 1.0 and np.isnan(res["ci_low"].iloc[0])
    vals, layer = _synthetic(steps, lambda s: np.array([1.0, -1.0, 1.0, -1.0]))
    res = depth_crossover(vals, steps, layer_of_head=layer, n_boot=0)
    assert res["n_crossings"].iloc[0] == 3
    assert res["statistic"].iloc[0] == pytest.approx(10 ** 0.5)  # the first, midway in log


def test_crossover_bootstrap_covers_truth():
    steps = np.geomspace(10, 1e5, 9)
    vals, layer = _synthetic(steps, lambda s: 0.5 * (np.log10(s) - 3.0), n_layers=12, heads=8,
                             noise=0.3, seed=2)
    res = depth_crossover(vals, steps, layer_of_head=layer, n_boot=1000, seed=3)
    assert res["ci_low"].iloc[0] < 1000.0 < res["ci_high"].iloc[0]
    assert res["ci_high"].iloc[0] / res["ci_low"].iloc[0] < 10  # informative
    assert res["boot_fraction_no_crossing"].iloc[0] == 0.0


def test_crossover_errors():
    vals, layer = _synthetic([1, 10], lambda s: s)
    with pytest.raises(StatsInputError, match="strictly increasing"):
        depth_crossover(vals, [10, 1], layer_of_head=layer)
    with pytest.raises(StatsInputError, match="NaN or inf"):
        depth_crossover(np.where(vals == vals[0, 0], np.nan, vals), [1, 10], layer_of_head=layer)
    with pytest.raises(StatsInputError, match="at least 2 layers"):
        depth_crossover(vals, [1, 10], layer_of_head=np.zeros(layer.size))
    with pytest.raises(StatsInputError, match="steps has 3"):
        depth_crossover(vals, [1, 10, 100], layer_of_head=layer)


# ------------------------------------------------------------------ boundary ratio
def test_boundary_ratio_and_exact_layer_permutation():
    rng = np.random.default_rng(0)
    layer = np.repeat(np.arange(8), 6)
    level = np.array([3.0, 1.0, 1.1, 0.9, 1.0, 1.2, 0.95, 2.8])
    vals = level[layer] * rng.uniform(0.9, 1.1, size=48)
    res = boundary_ratio(vals, clusters=layer, n_boot=1000)
    assert list(res.columns) == list(BOUNDARY_RATIO_TEST_COLUMNS)
    means = np.array([vals[layer == k].mean() for k in range(8)])
    ratio = (means[0] + means[-1]) / 2 / means[1:-1].mean()
    assert res["effect"].iloc[0] == pytest.approx(ratio)
    # every pair of layers as "boundary" (itertools.combinations): the real pair is the most extreme
    t = []
    for a, b in itertools.combinations(range(8), 2):
        rest = np.delete(means, [a, b])
        t.append(np.log((means[a] + means[b]) / 2 / rest.mean()))
    t = np.array(t)
    assert res["null_center"].iloc[0] == pytest.approx(t.mean())
    assert res["p_value"].iloc[0] == pytest.approx(np.mean(np.abs(t - t.mean()) >= abs(np.log(ratio) - t.mean()) - 1e-12))
    assert res["p_value"].iloc[0] == pytest.approx(1 / 28)
    assert res["ci_low"].iloc[0] < ratio < res["ci_high"].iloc[0]


def test_boundary_ratio_cv_summary():
    layer = np.repeat(np.arange(4), 3)
    vals = np.array([1, 2, 3, 2, 2, 2.1, 2, 2.2, 2, 1, 3, 5.0])
    res = boundary_ratio(vals, clusters=layer, summary="cv", n_boot=0)
    cv = [np.std(vals[layer == k]) / np.mean(vals[layer == k]) for k in range(4)]  # population std
    assert res["effect"].iloc[0] == pytest.approx((cv[0] + cv[3]) / 2 / np.mean(cv[1:3]))
    with pytest.raises(StatsInputError, match="3 layers"):
        boundary_ratio([1.0, 2.0], clusters=[0, 1])
    with pytest.raises(StatsInputError, match="Did you mean 'mean'"):
        boundary_ratio(vals, clusters=layer, summary="maen")


def test_boundary_ratio_calibrated(record_property):
    layer = np.repeat(np.arange(12), 8)
    ps = [boundary_ratio(np.exp(0.3 * np.random.default_rng(i).normal(size=12)[layer]
                                + 0.2 * np.random.default_rng(10**6 + i).normal(size=96)),
                         clusters=layer, n_boot=0)["p_value"].iloc[0] for i in range(N_DATASETS)]
    # C(12, 2) = 66 choices: P(p <= 0.05) = 3 / 66 = 0.045 exactly -> expected 91 of 2000
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


# ------------------------------------------------------------------ trend over runs, directed crossing
def test_trend_over_runs_is_the_sign_flip_of_run_correlations():
    from lie_stats.stats.signflip import sign_flip_test
    from lie_stats.stats.trend import trend_over_runs
    from lie_stats.columns import TREND_RUNS_COLUMNS

    rng = np.random.default_rng(4)
    steps = np.array([0, 10, 20, 40, 80, 160, 320])
    y = rng.normal(size=(7, 6)) + 0.2 * np.arange(7)[:, None]
    y[:, 5] = 1.0  # a constant run counts 0
    res = trend_over_runs(y, steps)
    assert list(res.columns) == list(TREND_RUNS_COLUMNS)
    rho = [sps.spearmanr(steps, y[:, r])[0] for r in range(5)] + [0.0]
    assert res["effect"].iloc[0] == pytest.approx(np.mean(rho))
    ref = sign_flip_test(rho)
    assert res["p_greater"].iloc[0] == ref["p_greater"] and res["p_min"].iloc[0] == 2.0 ** -6
    with pytest.raises(StatsInputError, match="n_steps"):
        trend_over_runs(y[:5], steps)


def test_directed_crossing_and_honest_interval():
    steps = np.array([10, 100, 1000, 10000, 100000])
    vals, layer = _synthetic(steps, lambda s: np.log10(s) - 2.5, heads=6)
    up = depth_crossover(vals, steps, layer_of_head=layer, n_boot=0, from_sign="negative", n_perm=999)
    assert up["statistic"].iloc[0] == pytest.approx(10 ** 2.5)
    assert up["p_early"].iloc[0] < 0.01 and up["p_late"].iloc[0] < 0.01
    assert up["p_value"].iloc[0] == max(up["p_early"].iloc[0], up["p_late"].iloc[0])
    down = depth_crossover(vals, steps, layer_of_head=layer, n_boot=0, from_sign="positive", n_perm=999)
    assert np.isnan(down["statistic"].iloc[0]) and down["n_crossings"].iloc[0] == 1  # - to + only
    assert down["p_early_against"].iloc[0] < 0.01
    # early_fraction 0.05 of 1e5 = 5000: the early checkpoint is 10000, after the change
    late = depth_crossover(vals, steps, layer_of_head=layer, n_boot=0, from_sign="negative",
                           early_fraction=0.05, n_perm=999)
    assert late["early_step"].iloc[0] == 10000 and late["n_crossings"].iloc[0] == 0
    # resamples that never cross count as crossing after training, not as missing
    from lie_stats.stats.trend import _crossing_interval

    boot = np.arange(1.0, 101.0)
    boot[90:] = np.nan  # 10 % never cross: the 97.5 % limit lies among them
    lo, hi = _crossing_interval(boot, 0.95)
    assert lo == 3.0 and np.isnan(hi)
    boot[90:] = np.arange(91.0, 101.0)
    boot[99] = np.nan  # 1 % never cross: both limits are crossings
    assert _crossing_interval(boot, 0.95) == (3.0, 98.0)
    with pytest.raises(StatsInputError, match="early_fraction"):
        depth_crossover(vals, steps, layer_of_head=layer, from_sign="negative", early_fraction=1.0)
