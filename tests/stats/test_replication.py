"""lie_stats.stats.replication: replication of a correlation against an original."""

from __future__ import annotations

import numpy as np
import pingouin
import pytest
import scipy.stats as sps
from scipy import integrate

from lie_stats.errors import StatsInputError
from lie_stats import columns as C
from lie_stats.stats import correlation, power_correlation, r33, replicate_correlation
from lie_stats.stats.correlation import within_correlation
from lie_stats.stats.meta import meta_replication
from lie_stats.stats.replication import check_original

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
    assert res["effect"].iloc[0] == pytest.approx(r)  # one stratum: within = pooled
    # se_new: the permutation null's SD on Fisher's scale (under free permutation
    # var(r) = 1 / (n - 1) exactly), times Bonett & Wright's sqrt(1 + r^2 / 2) for Spearman
    w = within_correlation(x, y, strata=None, n_perm=1999, seed=3)
    assert w.se_z == pytest.approx(1 / np.sqrt(119), rel=0.05)
    se_n = w.se_z * np.sqrt(1 + r ** 2 / 2)
    se_o = np.sqrt(1.06 / 93)  # the original's, independent pairs: Fieller et al. (1957)
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
    assert res["ci_low"].iloc[0] == pytest.approx(two["ci_low"].iloc[0])


def test_replication_estimate_is_the_within_layer_correlation():
    # layer means co-vary (pooled rho strongly positive); the heads' correlation is negative
    rng = np.random.default_rng(5)
    layer = np.repeat(np.arange(8), [6, 9, 12, 7, 8, 10, 5, 11])  # unequal layers
    u = 2.0 * rng.normal(size=8)
    ex = rng.normal(size=layer.size)
    x, y = u[layer] + ex, u[layer] - 0.4 * ex + rng.normal(size=layer.size)
    res = replicate_correlation(x, y, original_r=-0.274, original_n=96, strata=layer,
                                n_perm=999, n_boot=0).iloc[0]
    rx, ry = sps.rankdata(x), sps.rankdata(y)  # scipy.stats.rankdata
    cx = rx - (np.bincount(layer, rx) / np.bincount(layer))[layer]
    cy = ry - (np.bincount(layer, ry) / np.bincount(layer))[layer]
    assert res[C.STATISTIC] == pytest.approx(sps.spearmanr(x, y).statistic) and res[C.STATISTIC] > 0.5
    assert res[C.EFFECT] == pytest.approx(np.corrcoef(cx, cy)[0, 1]) and res[C.EFFECT] < -0.2
    assert res[C.P_ORIGINAL_DIRECTION] < 0.01 and res[C.P_SMALL_TELESCOPES] > 0.5
    # the same permutations' two-sided p as correlation(): the estimate is a rescaling
    two = correlation(x, y, strata=layer, n_perm=999, n_boot=0)
    assert res[C.P_VALUE] == two["p_value"].iloc[0]


def test_kendall_replication_stays_on_the_tau_scale():
    rng = np.random.default_rng(6)
    layer = np.repeat(np.arange(6), 10)
    x = rng.normal(size=60)
    y = 0.3 * x + rng.normal(size=60)
    res = replicate_correlation(x, y, original_r=0.2, original_n=50, strata=layer,
                                method="kendall", n_perm=499, n_boot=0).iloc[0]
    same = layer[:, None] == layer[None, :]
    sx, sy = np.sign(x[:, None] - x[None, :]) * same, np.sign(y[:, None] - y[None, :]) * same
    tau_w = (sx * sy).sum() / np.sqrt(np.abs(sx).sum() * np.abs(sy).sum())  # stratified tau-b
    # one stratum of tau-b: scipy.stats.kendalltau(x[:10], y[:10]) equals its own formula
    assert tau_w == pytest.approx(res[C.EFFECT])
    w = within_correlation(x, y, strata=layer, method="kendall", n_perm=499)
    c33 = 2 / np.pi * np.arcsin(r33(50))  # Greiner: tau = (2 / pi) arcsin(r)
    assert res[C.P_SMALL_TELESCOPES] == pytest.approx(
        sps.norm.cdf((np.arctanh(tau_w) - np.arctanh(c33)) / w.se_z))


def test_replication_bayes_factor_by_numerical_integration():
    rng = np.random.default_rng(1)
    x = rng.normal(size=80)
    y = 0.3 * x + rng.normal(size=80)
    res = replicate_correlation(x, y, original_r=0.35, original_n=60, strata=None,
                                method="pearson", n_perm=999, n_boot=0)
    r = sps.pearsonr(x, y).statistic
    se_n = within_correlation(x, y, strata=None, method="pearson", n_perm=999).se_z
    assert se_n == pytest.approx(1 / np.sqrt(79), rel=0.1)  # the permutation SE, about 1/sqrt(n-1)
    zn, zo, se_o = np.arctanh(r), np.arctanh(0.35), 1 / np.sqrt(57)
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


@pytest.mark.parametrize("r, n, field", [(0.0, 96, "original_r"), (1.0, 96, "original_r"),
                                         ("strong", 96, "original_r"), (None, 96, "original_r"),
                                         (0.3, 4, "original_n"), (0.3, True, "original_n"),
                                         (0.3, 96.0, "original_n")])
def test_check_original_names_the_caller_and_the_field(r, n, field):
    """One check of the original study serves replication and meta-analysis alike."""
    with pytest.raises(StatsInputError, match=rf"^caller: {field} must"):
        check_original(r, n, "caller")
    x, y = np.arange(10.0), np.array([2.0, 1, 4, 3, 6, 5, 8, 7, 10, 9])
    with pytest.raises(StatsInputError, match=rf"^meta_replication: {field} must"):
        meta_replication(np.tile(x, 2), np.tile(y, 2), np.repeat(["a", "b"], 10), original_r=r, original_n=n)
    with pytest.raises(StatsInputError, match=rf"^replicate_correlation: {field} must"):
        replicate_correlation(x, y, original_r=r, original_n=n, strata=None)


def test_check_original_returns_the_correlation_as_float():
    assert check_original(np.float32(-0.25), np.int64(5), "caller") == -0.25


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
                                        strata=None, method=method, n_perm=199, n_boot=0,
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
                                        strata=None, method="pearson", n_perm=199, n_boot=0,
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
