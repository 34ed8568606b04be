"""lie_stats.stats.equivalence: TOST with relative and absolute bounds and TOST for a correlation."""

from __future__ import annotations

import numpy as np
import pingouin
import pytest
import scipy.stats as sps
from statsmodels.stats.weightstats import ttost_paired
from hypothesis import given, settings
from hypothesis import strategies as st

from lie_stats.errors import StatsInputError
from lie_stats import columns as C
from lie_stats.stats import fisher_z_se, tost_correlation, tost_relative
from lie_stats.stats.equivalence import tost_paired
from lie_stats.columns import TOST_PAIRED_COLUMNS

from ._sim import BAND, N_DATASETS, rejections


@pytest.mark.parametrize("shift", [0.0, 4e-4, 9e-4, 2e-3])
def test_tost_relative_matches_pingouin(shift):
    rng = np.random.default_rng(0)
    base = rng.uniform(1.0, 3.0, size=40)
    tuned = base * np.exp(shift + rng.normal(0, 1e-3, size=40))
    res = tost_relative(base, tuned, bound=1e-3)
    assert list(res.columns) == list(C.TOST_RELATIVE_COLUMNS)
    d = np.log(tuned) - np.log(base)
    # pingouin.tost(np.log(tuned), np.log(base), bound=np.log1p(1e-3), paired=True)["pval"]
    ref = pingouin.tost(np.log(tuned), np.log(base), bound=float(np.log1p(1e-3)), paired=True)
    assert res["p_value"].iloc[0] == pytest.approx(ref["pval"].iloc[0], rel=1e-6)
    assert res["effect"].iloc[0] == pytest.approx(np.expm1(d.mean()))
    # the 90 % interval: scipy.stats.t.interval(0.90, 39, loc=mean(d), scale=sem(d))
    lo, hi = sps.t.interval(0.90, 39, loc=d.mean(), scale=sps.sem(d))
    assert res["ci_low"].iloc[0] == pytest.approx(np.expm1(lo))
    assert res["ci_high"].iloc[0] == pytest.approx(np.expm1(hi))
    inside = (np.expm1(lo) > 1 / 1.001 - 1) and (np.expm1(hi) < 1e-3)
    assert (res["p_value"].iloc[0] < 0.05) == inside


def test_tost_relative_zero_variance_is_undefined():
    # R: t.test(rep(0, 3)) stops with "data are essentially constant" (TOSTER::t_TOST and
    # equivalence::tost call t.test): no p-value, where this used to return the limit 0
    base = np.array([1.0, 2.0, 3.0])
    res = tost_relative(base, base.copy(), bound=1e-3)
    assert np.isnan(res["p_value"].iloc[0]) and res["effect"].iloc[0] == 0.0
    res = tost_relative(base, base * 1.01, bound=1e-3)  # every change exactly +1 %
    assert np.isnan(res["p_value"].iloc[0]) and np.isnan(res["t_lower"].iloc[0])
    assert res["ci_low"].iloc[0] == pytest.approx(0.01) == res["ci_high"].iloc[0]


def test_tost_relative_errors():
    with pytest.raises(StatsInputError, match="non-positive"):
        tost_relative([1.0, 0.0, 2.0], [1.0, 1.0, 2.0])
    with pytest.raises(StatsInputError, match="at least 2"):
        tost_relative([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(StatsInputError, match="bound"):
        tost_relative([1.0, 2.0], [1.0, 2.0], bound=-0.1)
    with pytest.raises(StatsInputError, match="same length"):
        tost_relative([1.0, 2.0, 3.0], [1.0, 2.0])


def test_tost_correlation_formula():
    res = tost_correlation(0.12, 71, bound=0.24)
    assert list(res.columns) == list(C.TOST_CORRELATION_COLUMNS)
    se = 1 / np.sqrt(68)
    # scipy.stats.norm.cdf((atanh(0.12) - atanh(0.24)) / se): the binding upper test
    p_hi = sps.norm.cdf((np.arctanh(0.12) - np.arctanh(0.24)) / se)
    p_lo = sps.norm.sf((np.arctanh(0.12) + np.arctanh(0.24)) / se)
    assert res["p_value"].iloc[0] == pytest.approx(max(p_lo, p_hi))
    assert 0.1 < res["p_value"].iloc[0] < 0.2  # not equivalent: the upper test binds
    assert res["ci_low"].iloc[0] == pytest.approx(np.tanh(np.arctanh(0.12) - 1.6448536 * se))
    assert fisher_z_se(71, "spearman") == pytest.approx(np.sqrt(1.06 / 68))
    assert fisher_z_se(71, "kendall") == pytest.approx(np.sqrt(0.437 / 67))


def test_tost_correlation_errors():
    with pytest.raises(StatsInputError, match="r must lie"):
        tost_correlation(1.0, 50, bound=0.2)
    with pytest.raises(StatsInputError, match="n must be"):
        tost_correlation(0.1, 3, bound=0.2)
    with pytest.raises(StatsInputError, match="bound"):
        tost_correlation(0.1, 50, bound=1.5)


@settings(max_examples=50, deadline=None)
@given(st.floats(-0.99, 0.99), st.integers(5, 10_000), st.floats(0.01, 0.9))
def test_tost_correlation_p_in_unit_interval_and_ci_rule(r, n, bound):
    res = tost_correlation(r, n, bound=bound)
    p = res["p_value"].iloc[0]
    assert 0.0 < p <= 1.0 or p == pytest.approx(0.0, abs=1e-300)
    inside = -bound < res["ci_low"].iloc[0] and res["ci_high"].iloc[0] < bound
    if abs(p - 0.05) > 1e-9:
        assert (p < 0.05) == inside


# ------------------------------------------------------------------ calibration
def test_tost_relative_calibrated_at_the_bound(record_property):
    # true change exactly at the upper bound: the test should reject 5 % of the time
    rng = np.random.default_rng(0)
    ps = []
    for _ in range(N_DATASETS):
        base = rng.uniform(1, 2, size=30)
        tuned = base * (1 + 1e-3) * np.exp(rng.normal(0, 2e-4, size=30))
        ps.append(tost_relative(base, tuned, bound=1e-3)["p_value"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_tost_correlation_calibrated_at_the_bound(record_property):
    rng = np.random.default_rng(1)
    cov = [[1.0, 0.2], [0.2, 1.0]]
    ps = []
    for _ in range(N_DATASETS):
        xy = rng.multivariate_normal([0, 0], cov, size=150)
        r = np.corrcoef(xy.T)[0, 1]
        ps.append(tost_correlation(r, 150, bound=0.2)["p_value"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_tost_power_when_truly_equivalent(record_property):
    rng = np.random.default_rng(2)
    ps = [tost_relative(b := rng.uniform(1, 2, 30), b * np.exp(rng.normal(0, 5e-4, 30)))["p_value"].iloc[0]
          for _ in range(200)]
    record_property("rejection_rate", rejections(ps) / 200)
    assert rejections(ps) / 200 > 0.95


# ------------------------------------------------------------------------------ tost_paired


@pytest.mark.parametrize("shift", [0.0, 0.01, 0.02, 0.04])
def test_tost_paired_matches_statsmodels_and_pingouin(shift):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.0, 0.3, size=24)
    b = a + shift + rng.normal(0, 0.02, size=24)
    res = tost_paired(a, b, bound=0.025)
    assert list(res.columns) == list(TOST_PAIRED_COLUMNS)
    row = res.iloc[0]
    # statsmodels.stats.weightstats.ttost_paired(b, a, -0.025, 0.025) -> (p, (t1, p1, df1), (t2, p2, df2))
    p, (t1, p1, df1), (t2, p2, df2) = ttost_paired(b, a, -0.025, 0.025)
    assert row[C.P_VALUE] == pytest.approx(p, rel=1e-9)
    assert row[C.T_LOWER] == pytest.approx(t1, rel=1e-9) and row[C.P_LOWER] == pytest.approx(p1, rel=1e-9)
    assert row[C.T_UPPER] == pytest.approx(t2, rel=1e-9) and row[C.P_UPPER] == pytest.approx(p2, rel=1e-9)
    assert row[C.DF] == df1 == 23
    # pingouin.tost(b, a, bound=0.025, paired=True)["pval"]
    assert row[C.P_VALUE] == pytest.approx(pingouin.tost(b, a, bound=0.025, paired=True)["pval"].iloc[0], rel=1e-6)
    d = b - a
    assert row[C.EFFECT] == pytest.approx(d.mean())
    # the 90 % interval: scipy.stats.t.interval(0.90, 23, loc=mean(d), scale=sem(d))
    lo, hi = sps.t.interval(0.90, 23, loc=d.mean(), scale=sps.sem(d))
    assert row[C.CI_LOW] == pytest.approx(lo) and row[C.CI_HIGH] == pytest.approx(hi)
    assert (row[C.P_VALUE] < 0.05) == (lo > -0.025 and hi < 0.025)


def test_tost_paired_zero_variance_undefined_and_nan_pairs():
    # identical differences: the t test is undefined (R's t.test stops), the interval a point
    a = np.array([0.0, 0.0, 0.0, np.nan])
    res = tost_paired(a, a + 1.0, bound=0.025).iloc[0]  # every layer moves by exactly 1
    assert np.isnan(res[C.P_VALUE]) and res[C.CI_LOW] == res[C.CI_HIGH] == 1.0 and res[C.N] == 3
    res = tost_paired(a, a.copy(), bound=0.025).iloc[0]
    assert np.isnan(res[C.P_VALUE]) and res[C.EFFECT] == 0.0
    # a spread at rounding level of the mean counts as none (R: stderr < 10 eps |mean|)
    res = tost_paired(np.zeros(3), np.array([0.1, 0.1 + 1e-17, 0.1]), bound=0.025).iloc[0]
    assert np.isnan(res[C.P_VALUE])


def test_tost_on_cluster_means():
    # per-head pairs in 3 layers: the test runs on the 3 layer means of the differences
    a = np.zeros(7)
    b = np.array([0.01, 0.03, 0.0, 0.002, 0.004, -0.01, -0.02])
    layer = [0, 0, 1, 1, 1, 2, 2]
    m = np.array([0.02, 0.002, -0.015])
    res = tost_paired(a, b, bound=0.05, clusters=layer).iloc[0]
    ref = tost_paired(np.zeros(3), m, bound=0.05).iloc[0]
    assert res[C.N] == 3 and res[C.DF] == 2 and res[C.EFFECT] == pytest.approx(m.mean())
    assert res[C.P_VALUE] == pytest.approx(ref[C.P_VALUE])
    # scipy.stats.ttest_1samp(m, -0.05, alternative="greater").pvalue
    assert res[C.P_LOWER] == pytest.approx(sps.ttest_1samp(m, -0.05, alternative="greater").pvalue)
    rel = tost_relative(np.ones(7), np.exp(b), bound=0.06, clusters=layer).iloc[0]
    assert rel[C.N] == 3 and rel[C.EFFECT] == pytest.approx(np.expm1(m.mean()))
    with pytest.raises(StatsInputError, match="clusters"):
        tost_paired(a, b, bound=0.05, clusters=[0, 1])


def test_tost_paired_errors():
    with pytest.raises(StatsInputError, match="bound"):
        tost_paired([1.0, 2.0], [1.0, 2.0], bound=0.0)
    with pytest.raises(StatsInputError, match="same length"):
        tost_paired([1.0, 2.0, 3.0], [1.0, 2.0], bound=0.1)
    with pytest.raises(StatsInputError, match="at least 2"):
        tost_paired([1.0, np.nan], [1.0, 2.0], bound=0.1)


def test_tost_paired_size_at_the_bound():
    """True mean difference exactly at the bound: equivalence is declared at most alpha of
    the time (the TOST's size; here the test is exact, so about alpha)."""
    rng = np.random.default_rng(3)
    d = 0.025 + rng.normal(0, 0.03, size=(N_DATASETS, 20))
    p = [tost_paired(np.zeros(20), row, bound=0.025)[C.P_VALUE].iloc[0] for row in d]
    assert BAND[0] <= rejections(p) <= BAND[1]
