"""lie_stats.stats.replication: replication of a correlation against an original."""

from __future__ import annotations

import numpy as np
import pingouin
import pytest
import scipy.stats as sps
from scipy import integrate

from lie_stats.errors import StatsInputError
from lie_stats.stats import columns as C
from lie_stats.stats import correlation, power_correlation, r33, replicate_correlation

from ._sim import BAND, N_DATASETS, layered, rejections


@pytest.mark.parametrize("n", [20, 50, 96, 300])
def test_r33_and_power_match_pingouin(n):
    # pingouin.power_corr(n=n, power=1/3, alpha=0.05)  (a port of R's pwr.r.test)
    assert r33(n) == pytest.approx(pingouin.power_corr(n=n, power=1 / 3), abs=1e-4)
    # pingouin.power_corr(r=0.3, n=n)
    assert power_correlation(0.3, n) == pytest.approx(pingouin.power_corr(r=0.3, n=n), abs=1e-6)


def test_replication_columns_against_formulas():
    rng = np.random.default_rng(0)
    x = rng.normal(size=120)
    y = -0.25 * x + rng.normal(size=120)
    res = replicate_correlation(x, y, original_r=-0.274, original_n=96, strata=None,
                                n_perm=1999, n_boot=500, seed=3)
    assert list(res.columns) == list(C.REPLICATION_COLUMNS)
    r = sps.spearmanr(x, y).statistic  # scipy.stats.spearmanr(x, y)
    assert res["statistic"].iloc[0] == pytest.approx(r)
    se_n, se_o = np.sqrt(1.06 / 117), np.sqrt(1.06 / 93)  # Fieller et al. (1957)
    z = (np.arctanh(r) - np.arctanh(-0.274)) / np.hypot(se_n, se_o)
    assert res["z_difference"].iloc[0] == pytest.approx(z)
    assert res["p_difference"].iloc[0] == pytest.approx(2 * sps.norm.sf(abs(z)))
    r_33 = pingouin.power_corr(n=96, power=1 / 3)
    assert res["r33"].iloc[0] == pytest.approx(r_33, abs=1e-4)
    # original negative: small telescopes tests -r < r33
    assert res["p_small_telescopes"].iloc[0] == pytest.approx(
        sps.norm.cdf((np.arctanh(-r) - np.arctanh(res["r33"].iloc[0])) / se_n))
    # one-sided p in the original's direction: the same permutations as correlation(..., "less")
    ref = correlation(x, y, strata=None, alternative="less", n_perm=1999, n_boot=0, seed=3)
    assert res["p_original_direction"].iloc[0] == ref["p_value"].iloc[0]
    two = correlation(x, y, strata=None, n_perm=1999, n_boot=500, seed=3)
    assert res["p_value"].iloc[0] == two["p_value"].iloc[0]
    assert res["ci_low"].iloc[0] == two["ci_low"].iloc[0]


def test_replication_bayes_factor_by_numerical_integration():
    rng = np.random.default_rng(1)
    x = rng.normal(size=80)
    y = 0.3 * x + rng.normal(size=80)
    res = replicate_correlation(x, y, original_r=0.35, original_n=60, strata=None,
                                method="pearson", n_perm=99, n_boot=0)
    r = sps.pearsonr(x, y).statistic
    zn, se_n, zo, se_o = np.arctanh(r), 1 / np.sqrt(77), np.arctanh(0.35), 1 / np.sqrt(57)
    # BF = int N(zn; zeta, se_n) N(zeta; zo, se_o) dzeta / N(zn; 0, se_n)   (scipy.integrate.quad)
    num = integrate.quad(lambda t: sps.norm.pdf(zn, t, se_n) * sps.norm.pdf(t, zo, se_o), -5, 5)[0]
    assert res["bf_replication"].iloc[0] == pytest.approx(num / sps.norm.pdf(zn, 0, se_n), rel=1e-6)
    assert res["bf_replication"].iloc[0] > 3  # a replication near the original favours it


def test_failed_replication_signals():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=300), rng.normal(size=300)
    res = replicate_correlation(x, y, original_r=0.45, original_n=40, strata=None,
                                method="pearson", n_perm=999, n_boot=0)
    assert res["bf_replication"].iloc[0] < 1 / 10
    assert res["p_small_telescopes"].iloc[0] < 0.01
    assert res["p_difference"].iloc[0] < 0.01


def test_replication_errors():
    x, y = np.arange(10.0), np.array([2.0, 1, 4, 3, 6, 5, 8, 7, 10, 9])
    with pytest.raises(StatsInputError, match="original_r"):
        replicate_correlation(x, y, original_r=0.0, original_n=96, strata=None)
    with pytest.raises(StatsInputError, match="original_n"):
        replicate_correlation(x, y, original_r=0.3, original_n=3, strata=None)
    with pytest.raises(StatsInputError, match="Fisher"):
        replicate_correlation(x, x, original_r=0.3, original_n=30, strata=None, n_perm=9)
    with pytest.raises(TypeError):
        replicate_correlation(x, y, original_r=0.3, original_n=30)


# ------------------------------------------------------------------ calibration
@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_difference_test_calibrated_when_effects_are_equal(method, record_property):
    rng = np.random.default_rng(3)
    cov = [[1.0, 0.3], [0.3, 1.0]]
    ps = []
    for i in range(N_DATASETS):
        orig = rng.multivariate_normal([0, 0], cov, size=96)
        r0 = (sps.pearsonr if method == "pearson" else sps.spearmanr)(*orig.T).statistic
        new = rng.multivariate_normal([0, 0], cov, size=144)
        ps.append(replicate_correlation(new[:, 0], new[:, 1], original_r=float(r0), original_n=96,
                                        strata=None, method=method, n_perm=9, n_boot=0,
                                        seed=i)["p_difference"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_small_telescopes_calibrated_at_r33(record_property):
    rng = np.random.default_rng(4)
    rho = r33(40)
    cov = [[1.0, rho], [rho, 1.0]]
    ps = []
    for i in range(N_DATASETS):
        new = rng.multivariate_normal([0, 0], cov, size=200)
        ps.append(replicate_correlation(new[:, 0], new[:, 1], original_r=0.5, original_n=40,
                                        strata=None, method="pearson", n_perm=9, n_boot=0,
                                        seed=i)["p_small_telescopes"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_original_direction_test_calibrated_on_layer_null(record_property):
    ps = []
    for i in range(N_DATASETS):
        x, y, layer = layered(np.random.default_rng(50_000 + i))
        ps.append(replicate_correlation(x, y, original_r=-0.274, original_n=96, strata=layer,
                                        n_perm=199, n_boot=0, seed=i)["p_original_direction"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count
