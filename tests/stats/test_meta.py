"""lie_stats.stats.meta: random-effects pooling of per-run correlations, checked against R's metafor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats import columns as C
from lie_stats.stats import meta as M
from lie_stats.stats.meta import meta_replication, random_effects, run_correlations
from lie_stats.stats.replication import r33

#: Four studies with a clear between-study variance.
YI, VI = [0.1, 0.3, 0.35, -0.05], [0.01, 0.02, 0.015, 0.01]


def _runs() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Six runs of 96, 96, 16, 32, 64 and 8 units, each with its own correlation
    (N(-0.25, 0.15) across runs), and a covariate ``c`` that moves y."""
    rng = np.random.default_rng(11)
    sizes = [96, 96, 16, 32, 64, 8]
    runs = np.repeat([f"r{i}" for i in range(len(sizes))], sizes)
    rho_run = rng.normal(-0.25, 0.15, len(sizes))
    x, c = rng.normal(size=runs.size), np.empty(runs.size)
    y = np.empty(runs.size)
    c[:] = rng.normal(size=runs.size)
    start = 0
    for s, rr in zip(sizes, rho_run):
        part = slice(start, start + s)
        y[part] = rr * x[part] + np.sqrt(1 - rr ** 2) * rng.normal(size=s) + 0.3 * c[part]
        start += s
    return x, y, c, runs


# R 4.2.2, metafor 3.8-1, with control = list(threshold = 1e-12, maxiter = 10000) on both fits:
#   m  <- rma(yi, vi, method = M)                      # tau2, I2, H2, beta, se, zval, pval, ci, QE, QEp
#   mt <- rma(yi, vi, method = M, test = "t"); predict(mt, pi.type = "riley")   # pi.lb, pi.ub:
#   mu -/+ qt(.975, k - 2) * sqrt(se^2 + tau2) (Higgins et al. 2009), checked by hand in R
R_FITS = {
    # yi <- c(0.1, 0.3, 0.35, -0.05); vi <- c(0.01, 0.02, 0.015, 0.01)
    ("four", "DL"): dict(tau2=0.0215340909091, i2=62.4382207578, h2=2.66228070175, mu=0.16007995837,
                         se=0.0933025313858, z=1.71570863076, p=0.0862153843121, ci_low=-0.0227896428121,
                         ci_high=0.342949559553, q=7.98684210526, p_q=0.0462844238543,
                         pi_low=-0.588129618441, pi_high=0.908289535182),
    ("four", "REML"): dict(tau2=0.0217682120664, i2=62.6914842615, h2=2.68035321214, mu=0.16017771667,
                           se=0.0936195515145, z=1.71094300367, p=0.0870916349908, ci_low=-0.0233132325472,
                           ci_high=0.343668665887, q=7.98684210526, p_q=0.0462844238543,
                           pi_low=-0.591652615037, pi_high=0.912008048377),
    # the six runs of _runs(): yi, vi from run_correlations (R: escalc(measure = "ZCOR",
    # ri = cor(x, y, method = "spearman") per run, ni) gives the same yi and vi)
    ("runs", "DL"): dict(tau2=0.0576345405967, i2=71.6250561549, h2=3.52423604946, mu=-0.256435022648,
                         se=0.12410866442, z=-2.06621369947, p=0.0388083058702, ci_low=-0.49968353508,
                         ci_high=-0.0131865102155, q=17.6211802473, p_q=0.00346063163651,
                         pi_low=-1.00678183926, pi_high=0.493911793964),
    ("runs", "REML"): dict(tau2=0.0668308383396, i2=74.5353261488, h2=3.92700886665, mu=-0.264315367037,
                           se=0.130890993098, z=-2.01935489052, p=0.0434503465185, ci_low=-0.52085699941,
                           ci_high=-0.00777373466532, q=17.6211802473, p_q=0.00346063163651,
                           pi_low=-1.0688297561, pi_high=0.540199022023),
    # the partial correlations given c (R: cor(resid(lm(rank(x) ~ rank(c))), resid(lm(rank(y) ~
    # rank(c)))) per run, the same yi; vi = 1 / (n - 4) given to rma as it is)
    ("partial", "DL"): dict(tau2=0.039948885143, i2=63.0365273801, h2=2.7053735191, mu=-0.204012029136,
                            se=0.110569419687, z=-1.84510355316, p=0.0650224764502, ci_low=-0.420724109514,
                            ci_high=0.0127000512423, q=13.5268675955, p_q=0.0189112639129,
                            pi_low=-0.838200237761, pi_high=0.43017617949),
    ("partial", "REML"): dict(tau2=0.0354192184643, i2=60.1911950271, h2=2.51200708155, mu=-0.19889804595,
                              se=0.106365745808, z=-1.86994454314, p=0.0614915193657, ci_low=-0.407371076922,
                              ci_high=0.00957498502214, q=13.5268675955, p_q=0.0189112639129,
                              pi_low=-0.799104156127, pi_high=0.401308064226),
}


def _inputs(which: str) -> tuple[np.ndarray, np.ndarray]:
    if which == "four":
        return np.array(YI), np.array(VI)
    x, y, c, runs = _runs()
    per = run_correlations(x, y, runs, covar=c if which == "partial" else None)
    return per["yi"].to_numpy(), per["vi"].to_numpy()


@pytest.mark.parametrize("which, method", sorted(R_FITS))
def test_random_effects_matches_metafor(which, method):
    yi, vi = _inputs(which)
    res = random_effects(yi, vi, method=method)
    for key, want in R_FITS[(which, method)].items():
        assert res[key] == pytest.approx(want, abs=1e-6, rel=1e-9), key
    assert res["k"] == len(yi) and res["converged"] == 1


def test_run_correlations_are_fisher_z_of_each_runs_spearman():
    x, y, c, runs = _runs()
    per = run_correlations(x, y, runs)
    assert per.index.tolist() == [f"r{i}" for i in range(6)]
    for run, row in per.iterrows():
        sel = runs == run
        assert row["r"] == pytest.approx(sps.spearmanr(x[sel], y[sel])[0], rel=1e-12)
        assert row["vi"] == pytest.approx(1.0 / (sel.sum() - 3))
    # R: atanh(cor(resid(lm(rank(x) ~ rank(c), s)), resid(lm(rank(y) ~ rank(c), s)))) for run r0
    part = run_correlations(x, y, runs, covar=c)
    assert part.loc["r0", "yi"] == pytest.approx(0.02020038, abs=1e-8)
    assert part.loc["r5", "yi"] == pytest.approx(-1.25030013, abs=1e-8)
    assert part.loc["r5", "vi"] == pytest.approx(1.0 / (8 - 3 - 1))


def test_meta_replication_pools_and_tests_against_r33():
    x, y, _, runs = _runs()
    row = meta_replication(x, y, runs, original_r=-0.274, original_n=96).iloc[0]
    assert list(row.index) == list(M.META_REPLICATION_COLUMNS)
    dl = R_FITS[("runs", "DL")]
    assert row[C.EFFECT] == pytest.approx(np.tanh(dl["mu"]), abs=1e-9)
    assert (row[C.CI_LOW], row[C.CI_HIGH]) == pytest.approx((np.tanh(dl["ci_low"]), np.tanh(dl["ci_high"])), abs=1e-9)
    assert (row[M.PI_LOW], row[M.PI_HIGH]) == pytest.approx((np.tanh(dl["pi_low"]), np.tanh(dl["pi_high"])), abs=1e-9)
    assert row[M.TAU2_REML] == pytest.approx(R_FITS[("runs", "REML")]["tau2"], abs=1e-9)
    assert row[M.K_RUNS] == 6 and row[C.N] == 312
    # small telescopes: the pooled z in the original's (negative) direction against atanh(r33)
    want = sps.norm.cdf((-dl["mu"] - np.arctanh(r33(96))) / dl["se"])
    assert row[C.P_SMALL_TELESCOPES] == pytest.approx(want, rel=1e-9)
    assert row[C.R33] == pytest.approx(0.15653, abs=1e-4)  # pingouin.power_corr(n=96, power=1/3)
    assert row[C.P_ORIGINAL_DIRECTION] == pytest.approx(dl["p"] / 2, rel=1e-8)
    # a pooled effect near 0 over many large runs is detectably smaller than r33
    rng = np.random.default_rng(5)
    many = np.repeat(np.arange(10), 200)
    flat = meta_replication(rng.normal(size=2000), rng.normal(size=2000), many, original_r=-0.274,
                            original_n=96).iloc[0]
    assert flat[C.P_SMALL_TELESCOPES] < 1e-6 and flat[M.TAU2] < 0.01


def test_meta_replication_errors():
    x, y, _, runs = _runs()
    with pytest.raises(StatsInputError, match="at least 2 runs"):
        meta_replication(x[runs == "r0"], y[runs == "r0"], runs[runs == "r0"], original_r=-0.274, original_n=96)
    with pytest.raises(StatsInputError, match="original_r"):
        meta_replication(x, y, runs, original_r=0.0, original_n=96)
    with pytest.raises(StatsInputError, match="run 'r5' has 8 complete rows"):
        meta_replication(x, y, runs, covar=np.random.default_rng(1).normal(size=(x.size, 5)),
                         original_r=-0.274, original_n=96)
    with pytest.raises(StatsInputError, match="method"):
        run_correlations(x, y, runs, method="kendall")
    with pytest.raises(StatsInputError, match="positive"):
        random_effects([0.1, 0.2], [0.01, 0.0])
    with pytest.raises(StatsInputError, match="constant in run"):
        run_correlations(np.r_[np.ones(5), np.arange(5.0)], np.arange(10.0), np.repeat([0, 1], 5))
