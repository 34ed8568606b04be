"""lie_stats.stats.correlation: correlation and partial correlation with nested inference."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pingouin
import pytest
import scipy.stats as sps
from hypothesis import given, settings
from hypothesis import strategies as st

from lie_stats.errors import StatsInputError
from lie_stats.columns import STAT_COLUMNS
from lie_stats.stats import correlation, partial_correlation
from lie_stats import columns as C

from ._sim import BAND, N_DATASETS, layered, rejections

SCIPY_STAT = {"spearman": lambda x, y: sps.spearmanr(x, y).statistic,
              "pearson": lambda x, y: sps.pearsonr(x, y).statistic,
              "kendall": lambda x, y: sps.kendalltau(x, y).statistic}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    x = rng.normal(size=96)
    y = 0.3 * x + rng.normal(size=96)
    return x, y


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
def test_statistic_matches_scipy(data, method):
    x, y = data
    res = correlation(x, y, strata=None, method=method, n_perm=99, n_boot=0)
    assert list(res.columns) == list(C.CORRELATION_COLUMNS)
    assert list(res.columns[:6]) == list(STAT_COLUMNS)
    assert all(pd.api.types.is_numeric_dtype(t) for t in res.dtypes)
    # scipy.stats.spearmanr(x, y) / pearsonr / kendalltau (tau-b)
    assert res["statistic"].iloc[0] == pytest.approx(SCIPY_STAT[method](x, y), abs=1e-12)
    assert res["effect"].iloc[0] == res["statistic"].iloc[0]


def test_kendall_with_ties_is_tau_b():
    x = np.array([1, 2, 2, 3, 3, 3, 4, 5, 5, 6.0])
    y = np.array([2, 1, 2, 4, 3, 3, 5, 5, 6, 6.0])
    res = correlation(x, y, strata=None, method="kendall", n_perm=99, n_boot=0)
    # scipy.stats.kendalltau(x, y, variant="b")
    assert res["statistic"].iloc[0] == pytest.approx(sps.kendalltau(x, y, variant="b").statistic)


def _unit_rows(a):
    a = a - a.mean(axis=-1, keepdims=True)
    return a / np.sqrt((a * a).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_monte_carlo_p_agrees_with_scipy_permutation_test(data, method):
    x, y = data
    rank = (lambda a: sps.rankdata(a, axis=-1)) if method == "spearman" else (lambda a: a)

    def stat(a, axis=-1):  # the same correlation, vectorized for scipy
        return _unit_rows(rank(np.moveaxis(a, axis, -1))) @ _unit_rows(rank(y))

    assert stat(x) == pytest.approx(SCIPY_STAT[method](x, y))
    # scipy.stats.permutation_test((x,), stat, permutation_type="pairings",
    #                              n_resamples=9999, alternative="greater", vectorized=True)
    ref = sps.permutation_test((x,), stat, permutation_type="pairings", vectorized=True,
                               n_resamples=9999, alternative="greater", rng=2).pvalue
    p = correlation(x, y, strata=None, method=method, n_perm=9999, n_boot=0, seed=1)["p_value"].iloc[0]
    p_greater = correlation(x, y, strata=None, method=method, n_perm=9999, n_boot=0,
                            seed=1, alternative="greater")["p_value"].iloc[0]
    mc_se = np.sqrt(2 * ref * (1 - ref) / 10000)  # difference of two Monte Carlo estimates
    assert abs(p_greater - ref) < 4 * mc_se + 1e-4
    # the null is symmetric for free permutation: two-sided ~ 2 x one-sided
    assert abs(p - 2 * min(p_greater, 1 - p_greater)) < 8 * mc_se + 2e-4


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_exact_p_equals_scipy_full_enumeration(method, alternative):
    x = np.array([0.3, 1.2, -0.5, 2.2, 0.9, 1.7])
    y = np.array([0.1, 0.8, 0.2, 1.9, 0.4, 1.1])
    res = correlation(x, y, strata=None, method=method, alternative=alternative,
                      n_perm=9999, n_boot=0)
    assert res["exact"].iloc[0] == 1 and res["n_perm"].iloc[0] == 719
    f = SCIPY_STAT[method]
    # scipy.stats.permutation_test((x,), lambda a: f(a, y), permutation_type="pairings",
    #                              n_resamples=np.inf, alternative=alternative)  (exact)
    ref = sps.permutation_test((x,), lambda a: f(a, y), permutation_type="pairings",
                               n_resamples=np.inf, alternative=alternative).pvalue
    assert res["p_value"].iloc[0] == pytest.approx(ref, abs=1e-12)


def _enumerate_within(x, y, strata, f):
    """All within-strata permutations of y (itertools), statistic on each."""
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    out = []
    for combo in itertools.product(*[itertools.permutations(g) for g in groups]):
        perm = np.arange(y.size)
        for g, pg in zip(groups, combo):
            perm[g] = pg
        out.append(f(x, y[perm]))
    return np.array(out)


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
def test_within_strata_exact_p_and_centre_match_full_enumeration(method):
    rng = np.random.default_rng(5)
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2])
    x = rng.normal(size=9) + 2 * strata
    y = rng.normal(size=9) + 1.5 * strata
    res = correlation(x, y, strata=strata, method=method, n_perm=9999, n_boot=0)
    assert res["exact"].iloc[0] == 1 and res["n_perm"].iloc[0] == 24 * 6 * 2 - 1
    f = SCIPY_STAT[method]
    allt = _enumerate_within(x, y, strata, f)  # includes the identity
    center = allt.mean()
    t = f(x, y)
    assert res["null_center"].iloc[0] == pytest.approx(center, abs=1e-10)
    assert center > 0.3  # layer effects in both: the null is far from 0
    p_ref = np.mean(np.abs(allt - center) >= np.abs(t - center) - 1e-12)
    assert res["p_value"].iloc[0] == pytest.approx(p_ref, abs=1e-12)
    p_greater = correlation(x, y, strata=strata, method=method, alternative="greater",
                            n_perm=9999, n_boot=0)["p_value"].iloc[0]
    assert p_greater == pytest.approx(np.mean(allt >= t - 1e-12), abs=1e-12)


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
def test_bootstrap_ci_agrees_with_scipy_bootstrap(data, method):
    x, y = data
    res = correlation(x, y, strata=None, method=method, n_perm=99, n_boot=3000, seed=3)
    # scipy.stats.bootstrap((x, y), f, paired=True, method="percentile", n_resamples=2000)
    # with f = spearmanr / pearsonr / kendalltau statistic
    ref = sps.bootstrap((x, y), SCIPY_STAT[method], paired=True,
                        vectorized=False, method="percentile", n_resamples=2000, rng=4)
    assert res["ci_low"].iloc[0] == pytest.approx(ref.confidence_interval.low, abs=0.03)
    assert res["ci_high"].iloc[0] == pytest.approx(ref.confidence_interval.high, abs=0.03)


def test_cluster_bootstrap_ci_is_wider_with_layer_structure():
    rng = np.random.default_rng(8)
    x, y, layer = layered(rng)
    free = correlation(x, y, strata=None, n_perm=99, n_boot=2000)
    nested = correlation(x, y, strata=layer, n_perm=99, n_boot=2000)
    assert nested["ci_high"].iloc[0] - nested["ci_low"].iloc[0] > \
        1.3 * (free["ci_high"].iloc[0] - free["ci_low"].iloc[0])


def test_nan_rows_dropped_and_invalid_input():
    x = np.array([1.0, 2, np.nan, 4, 5, 6])
    y = np.array([2.0, 1, 3, np.nan, 6, 5])
    res = correlation(x, y, strata=None, n_perm=99, n_boot=0)
    assert res["n"].iloc[0] == 4
    # scipy.stats.spearmanr([1, 2, 5, 6], [2, 1, 6, 5])
    assert res["statistic"].iloc[0] == pytest.approx(sps.spearmanr([1, 2, 5, 6], [2, 1, 6, 5]).statistic)
    with pytest.raises(StatsInputError, match="y is constant"):
        correlation([1.0, 2, 3, 4], [5.0, 5, 5, 5], strata=None)
    with pytest.raises(StatsInputError, match="at least 3"):
        correlation([1.0, np.nan, 3], [1.0, 2, np.nan], strata=None)
    with pytest.raises(StatsInputError, match="at least 3"):
        correlation([np.nan] * 5, [np.nan] * 5, strata=None)
    with pytest.raises(StatsInputError, match="same length"):
        correlation([1.0, 2, 3], [1.0, 2], strata=None)
    with pytest.raises(StatsInputError, match="Did you mean 'spearman'"):
        correlation([1.0, 2, 3], [1.0, 3, 2], strata=None, method="spearmen")
    with pytest.raises(StatsInputError, match="ci"):
        correlation([1.0, 2, 3], [1.0, 3, 2], strata=None, ci=95)
    with pytest.raises(StatsInputError, match="infinite"):
        correlation([1.0, 2, np.inf], [1.0, 3, 2], strata=None)
    with pytest.raises(TypeError):
        correlation([1.0, 2, 3], [1.0, 3, 2])  # strata is required: no silent free permutation


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
def test_heavy_ties_give_defined_results(method):
    rng = np.random.default_rng(9)
    x = rng.integers(0, 3, size=40).astype(float)  # three distinct values
    y = (x + rng.integers(0, 2, size=40)).astype(float)
    layer = np.repeat(np.arange(5), 8)
    res = correlation(x, y, strata=layer, method=method, n_perm=499, n_boot=300)
    # scipy.stats.spearmanr / pearsonr / kendalltau on the tied data
    assert res["statistic"].iloc[0] == pytest.approx(SCIPY_STAT[method](x, y))
    assert 0 < res["p_value"].iloc[0] <= 1 and res["ci_low"].iloc[0] <= res["ci_high"].iloc[0]
    # binary x, all but one value tied
    b = np.zeros(40)
    b[7] = 1.0
    res = correlation(b, y, strata=None, method=method, n_perm=499, n_boot=100)
    assert res["statistic"].iloc[0] == pytest.approx(SCIPY_STAT[method](b, y))
    assert 0 < res["p_value"].iloc[0] <= 1


def test_strata_of_singletons_give_p_one():
    # every stratum has one unit: no within-strata permutation exists; p = 1 by the rule
    res = correlation([1.0, 2, 3, 4], [1.0, 3, 2, 4], strata=[0, 1, 2, 3], n_perm=99, n_boot=0)
    assert res["p_value"].iloc[0] == 1.0 and res["n_perm"].iloc[0] == 0


# ------------------------------------------------------------------ partial correlation
@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_partial_correlation_matches_pingouin(method):
    rng = np.random.default_rng(2)
    z = rng.normal(size=(60, 2))
    x = z @ [1.0, 0.5] + rng.normal(size=60)
    y = z @ [0.7, -0.4] + 0.3 * x + rng.normal(size=60)
    res = partial_correlation(x, y, z, strata=None, method=method, n_perm=999, n_boot=0)
    df = pd.DataFrame({"x": x, "y": y, "z1": z[:, 0], "z2": z[:, 1]})
    # pingouin.partial_corr(df, x="x", y="y", covar=["z1", "z2"], method=method)["r"]
    ref = pingouin.partial_corr(df, x="x", y="y", covar=["z1", "z2"], method=method)
    assert res["statistic"].iloc[0] == pytest.approx(ref["r"].iloc[0], abs=1e-10)
    assert list(res.columns) == list(C.PARTIAL_CORRELATION_COLUMNS)
    assert res["n_covariates"].iloc[0] == 2
    # the permutation p agrees with pingouin's parametric p to Monte Carlo / model error
    assert abs(res["p_value"].iloc[0] - ref["p_val"].iloc[0]) < 0.03


def test_partial_correlation_with_strata_partials_out_layers():
    rng = np.random.default_rng(6)
    layer = np.repeat(np.arange(6), 8)
    z = rng.normal(size=6)[layer] + rng.normal(size=48)
    x = 2 * rng.normal(size=6)[layer] + z + rng.normal(size=48)
    y = 2 * rng.normal(size=6)[layer] + z + 0.4 * x + rng.normal(size=48)
    df = pd.DataFrame({"x": x, "y": y, "z": z})
    dummies = [f"d{k}" for k in range(1, 6)]
    for k, name in enumerate(dummies, start=1):
        df[name] = (layer == k).astype(float)
    for method in ("pearson", "spearman"):
        res = partial_correlation(x, y, z, strata=layer, method=method, n_perm=999, n_boot=200)
        # pingouin.partial_corr(df, x="x", y="y", covar=["z", "d1", ..., "d5"], method=method)
        ref = pingouin.partial_corr(df, x="x", y="y", covar=["z", *dummies], method=method)
        assert res["statistic"].iloc[0] == pytest.approx(ref["r"].iloc[0], abs=1e-10)
        assert res["null_center"].iloc[0] == pytest.approx(0.0, abs=1e-12)
        assert res["ci_low"].iloc[0] < res["statistic"].iloc[0] < res["ci_high"].iloc[0]
    with pytest.raises(StatsInputError, match="constant within every stratum"):
        partial_correlation(x, y, rng.normal(size=6)[layer], strata=layer)


def test_partial_correlation_refuses_bad_covariates():
    x, y = np.arange(10.0), np.array([2.0, 1, 4, 3, 6, 5, 8, 7, 10, 9])
    with pytest.raises(StatsInputError, match="constant or its columns are collinear"):
        partial_correlation(x, y, np.ones(10), strata=None)
    with pytest.raises(StatsInputError, match="fully explained"):
        partial_correlation(x, y, x, strata=None, method="pearson")
    with pytest.raises(StatsInputError, match="method"):
        partial_correlation(x, y, y, strata=None, method="kendall")


# ------------------------------------------------------------------ calibration
def _rate(fn, n=N_DATASETS, seed0=0):
    return rejections([fn(np.random.default_rng(seed0 + i), i) for i in range(n)])


@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_calibrated_on_layer_structured_null(method, record_property):
    def one(rng, i):
        x, y, layer = layered(rng)
        return correlation(x, y, strata=layer, method=method, n_perm=199, n_boot=0,
                           seed=i)["p_value"].iloc[0]
    count = _rate(one)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


@pytest.mark.slow
def test_kendall_calibrated_on_layer_structured_null(record_property):
    def one(rng, i):
        x, y, layer = layered(rng, n_layers=6, heads=6)
        return correlation(x, y, strata=layer, method="kendall", n_perm=199, n_boot=0,
                           seed=i)["p_value"].iloc[0]
    count = _rate(one)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_calibrated_on_iid_null_free_permutation(record_property):
    def one(rng, i):
        return correlation(rng.normal(size=40), rng.exponential(size=40), strata=None,
                           n_perm=199, n_boot=0, seed=i)["p_value"].iloc[0]
    count = _rate(one)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_free_permutation_is_anticalibrated_on_layer_structured_null(record_property):
    """Why within-layer permutation is the default: free permutation of heads that share layer
    effects rejects a true null far more often than alpha."""
    def one(rng, i):
        x, y, _ = layered(rng)
        return correlation(x, y, strata=None, n_perm=199, n_boot=0, seed=i)["p_value"].iloc[0]
    count = _rate(one, n=1000)
    record_property("rejections", count)
    assert count / 1000 > 0.25, count / 1000  # measured 0.36 (alpha 0.05)


def test_partial_correlation_calibrated_on_layer_structured_null(record_property):
    def one(rng, i):
        x, y, layer = layered(rng)
        z = 1.5 * rng.normal(size=12)[layer] + rng.normal(size=96)
        return partial_correlation(x + 0.5 * z, y + 0.5 * z, z, strata=layer, n_perm=199,
                                   n_boot=0, seed=i)["p_value"].iloc[0]
    count = _rate(one)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_power_on_planted_within_layer_effect(record_property):
    def one(rng, i):
        x, y, layer = layered(rng)
        y = y + 0.5 * (x - np.bincount(layer, x)[layer] / 8)  # within-layer association
        return correlation(x, y, strata=layer, n_perm=199, n_boot=0, seed=i)["p_value"].iloc[0]
    count = _rate(one, n=200)
    record_property("rejections", count)
    assert count / 200 > 0.8, count / 200


# ------------------------------------------------------------------ properties
ints = st.lists(st.integers(-1000, 1000), min_size=8, max_size=30)


@settings(max_examples=30, deadline=None)
@given(ints, st.data())
def test_p_in_unit_interval_and_stat_in_range(xs, data):
    ys = data.draw(st.lists(st.integers(-1000, 1000), min_size=len(xs), max_size=len(xs)))
    x, y = np.array(xs, float), np.array(ys, float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        with pytest.raises(StatsInputError):
            correlation(x, y, strata=None)
        return
    strata = np.arange(x.size) % 3
    for method in ("spearman", "pearson", "kendall"):
        res = correlation(x, y, strata=strata, method=method, n_perm=99, n_boot=50)
        assert 0.0 < res["p_value"].iloc[0] <= 1.0
        assert -1.0 <= res["statistic"].iloc[0] <= 1.0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=8, max_size=30, unique=True), st.data())
def test_rank_test_invariant_to_monotone_transforms(xs, data):
    ys = data.draw(st.lists(st.integers(-1000, 1000), min_size=len(xs), max_size=len(xs)))
    x, y = np.array(xs, float), np.array(ys, float)
    if np.ptp(y) == 0:
        return
    strata = np.arange(x.size) % 2
    for method in ("spearman", "kendall"):
        a = correlation(x, y, strata=strata, method=method, n_perm=199, n_boot=100, seed=3)
        b = correlation(x ** 3 + x, np.exp(y / 100.0), strata=strata, method=method,
                        n_perm=199, n_boot=100, seed=3)
        pd.testing.assert_frame_equal(a, b, rtol=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=8, max_size=30), st.data(),
       st.integers(-10**6, 10**6))
def test_adding_a_constant_changes_nothing(xs, data, c):
    ys = data.draw(st.lists(st.integers(-1000, 1000), min_size=len(xs), max_size=len(xs)))
    x, y = np.array(xs, float), np.array(ys, float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return
    strata = np.arange(x.size) % 3
    for method in ("spearman", "pearson", "kendall"):
        a = correlation(x, y, strata=strata, method=method, n_perm=99, n_boot=0, seed=1)
        b = correlation(x + c, y, strata=strata, method=method, n_perm=99, n_boot=0, seed=1)
        assert b["statistic"].iloc[0] == pytest.approx(a["statistic"].iloc[0], abs=1e-9)
        assert b["p_value"].iloc[0] == a["p_value"].iloc[0]
