"""lie_stats.stats.ranks against scipy / numpy and naive re-implementations."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from lie_stats.errors import StatsInputError
from lie_stats.stats import ranks
from lie_stats.stats.ranks import delta_order, delta_rank, ratio_of_changes, pooled_relative

CATS = ["embedding", "attn_q", "attn_k", "mlp_in", "mlp_out", "unembedding"]


def _map(seed: int = 0, n_layers: int = 8):
    """A synthetic delta map: per-layer categories with heterogeneous layers, two per-model."""
    rng = np.random.default_rng(seed)
    k = len(CATS)
    vals = np.full((k, n_layers), np.nan)
    norms = np.full((k, n_layers), np.nan)
    centers = {"attn_q": 0.05, "attn_k": 0.06, "mlp_in": 0.08, "mlp_out": 0.2}
    for i, c in enumerate(CATS):
        if c in centers:
            vals[i] = centers[c] * rng.lognormal(0, 0.4, n_layers)
            norms[i] = rng.uniform(1, 3, n_layers)
    tot = np.array([0.07 if c == "embedding" else 0.5 if c == "unembedding" else
                    float(pooled_relative(vals[i], norms[i])) for i, c in enumerate(CATS)])
    return tot, vals, norms


def test_pooled_relative_is_the_norm_of_the_stacked_layers():
    rng = np.random.default_rng(1)
    w = [rng.normal(size=(4, 5)) for _ in range(3)]
    dw = [0.1 * rng.normal(size=(4, 5)) for _ in range(3)]
    r = [np.linalg.norm(d) / np.linalg.norm(x) for d, x in zip(dw, w)]
    n = [np.linalg.norm(x) for x in w]
    stacked = np.linalg.norm(np.concatenate(dw)) / np.linalg.norm(np.concatenate(w))
    assert float(pooled_relative(r, n)) == pytest.approx(stacked, rel=1e-12)


def test_ranks_are_scipy_min_ranks_of_the_negated_values():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, size=(50, 7)).astype(float)  # many ties
    # scipy.stats.rankdata(-x, method="min", axis=1)
    np.testing.assert_array_equal(ranks._ranks(x), scipy.stats.rankdata(-x, method="min", axis=1))


def test_category_rank_matches_a_naive_bootstrap():
    tot, vals, norms = _map()
    res = delta_rank(tot, vals, norms, categories=CATS, target="attn_k", n_boot=500, ci=0.9, seed=7)
    # point: scipy.stats.rankdata(-tot, method="min")
    assert res["effect"].iloc[0] == scipy.stats.rankdata(-tot, method="min")[CATS.index("attn_k")]
    rng = np.random.default_rng(7)
    idx = rng.integers(0, vals.shape[1], size=(500, vals.shape[1]))
    boot = []
    for row in idx:
        v = tot.copy()
        for i, c in enumerate(CATS):
            if np.isfinite(vals[i]).all():
                v[i] = np.linalg.norm(vals[i, row] * norms[i, row]) / np.linalg.norm(norms[i, row])
        boot.append(scipy.stats.rankdata(-v, method="min")[CATS.index("attn_k")])
    lo = np.quantile(boot, 0.05, method="lower")
    hi = np.quantile(boot, 0.95, method="higher")
    assert (res["ci_low"].iloc[0], res["ci_high"].iloc[0]) == (lo, hi)
    assert lo < hi  # the heterogeneous layers make the rank uncertain here
    assert res["n_categories"].iloc[0] == 6 and res["n"].iloc[0] == 8
    assert res["statistic"].iloc[0] == pytest.approx((res["effect"].iloc[0] - 1) / 5)


def test_category_rank_separated_target_has_a_degenerate_interval():
    tot, vals, norms = _map()
    res = delta_rank(tot, vals, norms, categories=CATS, target="unembedding", n_boot=300)
    assert (res["effect"].iloc[0], res["ci_low"].iloc[0], res["ci_high"].iloc[0]) == (1, 1, 1)


def test_category_rank_input_errors():
    tot, vals, norms = _map()
    with pytest.raises(StatsInputError, match="Did you mean 'attn_q'"):
        delta_rank(tot, vals, norms, categories=CATS, target="attn_qq")
    bad = tot.copy()
    bad[CATS.index("mlp_in")] *= 1.5
    with pytest.raises(StatsInputError, match="do not pool to their totals"):
        delta_rank(bad, vals, norms, categories=CATS, target="attn_q")
    holes = vals.copy()
    holes[1, 3] = np.nan
    with pytest.raises(StatsInputError, match="lack some layers"):
        delta_rank(tot, holes, norms, categories=CATS, target="attn_q")
    with pytest.raises(StatsInputError, match="one value per category"):
        delta_rank(tot[:-1], vals, norms, categories=CATS, target="attn_q")


def test_category_order_share_matches_a_naive_bootstrap():
    tot, vals, norms = _map(seed=4)
    order = [["unembedding"], ["mlp_out"], ["mlp_in", "embedding"]]
    res = delta_order(tot, vals, norms, categories=CATS, groups=order, n_boot=400, seed=3)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, vals.shape[1], size=(400, vals.shape[1]))

    def holds(v):
        d = dict(zip(CATS, v))
        top = ["unembedding", "mlp_out", "mlp_in", "embedding"]
        rest = [d[c] for c in CATS if c not in top]
        return (d["unembedding"] > max(d["mlp_out"], d["mlp_in"], d["embedding"], *rest)
                and d["mlp_out"] > max(d["mlp_in"], d["embedding"], *rest)
                and min(d["mlp_in"], d["embedding"]) > max(rest))

    shares = []
    for row in idx:
        v = tot.copy()
        for i in range(len(CATS)):
            if np.isfinite(vals[i]).all():
                v[i] = np.linalg.norm(vals[i, row] * norms[i, row]) / np.linalg.norm(norms[i, row])
        shares.append(holds(v))
    assert res["order_holds"].iloc[0] == int(holds(tot))
    assert res["boot_share"].iloc[0] == pytest.approx(np.mean(shares), abs=1e-12)
    assert 0 < res["boot_share"].iloc[0] < 1
    with pytest.raises(StatsInputError, match="two groups"):
        delta_order(tot, vals, norms, categories=CATS, groups=[["mlp_in"], ["mlp_in"]])


def test_change_ratio_point_and_stratified_bootstrap_match_a_naive_loop():
    rng = np.random.default_rng(5)
    pre = rng.lognormal(0, 0.5, 24)
    post = rng.lognormal(-4, 0.5, 24)
    strata = np.repeat([0, 1], 12)
    clusters = np.tile(np.arange(12), 2)
    res = ratio_of_changes(pre, post, strata=strata, clusters=clusters, n_boot=300, ci=0.9, seed=11,
                       reference=(50.0, 5000.0))
    assert res["effect"].iloc[0] == pytest.approx(pre.mean() / post.mean(), rel=1e-12)
    g = np.random.default_rng(11)
    boot = np.zeros(300)
    num = np.zeros(300)
    den = np.zeros(300)
    for s in (0, 1):  # clusters of stratum s, resampled within it, in the same draw order
        members = np.arange(12) + 12 * s
        pick = members[g.integers(0, 12, (300, 12))]
        num += pre[pick].sum(axis=1)
        den += post[pick].sum(axis=1)
    boot = num / den
    lo, hi = np.quantile(boot, [0.05, 0.95])
    assert res["ci_low"].iloc[0] == pytest.approx(lo, rel=1e-12)
    assert res["ci_high"].iloc[0] == pytest.approx(hi, rel=1e-12)
    # bootstrap p-values (b + 1) / (B + 1) (Davison & Hinkley 1997, eq. 4.11): never 0
    assert res["p_below"].iloc[0] == pytest.approx((np.sum(boot <= 50.0) + 1) / 301)
    assert res["p_above"].iloc[0] == pytest.approx((np.sum(boot >= 5000.0) + 1) / 301)
    assert res["p_above"].iloc[0] >= 1 / 301 and res["p_below"].iloc[0] >= 1 / 301
    assert res["p_value"].iloc[0] == max(res["p_below"].iloc[0], res["p_above"].iloc[0])
    assert res["n"].iloc[0] == 24 and res["n_units"].iloc[0] == 24


def test_change_ratio_interval_agrees_with_scipy_bootstrap():
    rng = np.random.default_rng(6)
    pre = rng.lognormal(0, 0.6, 30)
    post = rng.lognormal(-3, 0.6, 30)
    res = ratio_of_changes(pre, post, n_boot=4000, ci=0.9, seed=0)
    # scipy.stats.bootstrap((pre, post), lambda a, b: a.mean() / b.mean(), paired=True,
    #                       vectorized=False, n_resamples=4000, method="percentile",
    #                       confidence_level=0.9, random_state=1)
    ref = scipy.stats.bootstrap((pre, post), lambda a, b: a.mean() / b.mean(), paired=True,
                                vectorized=False, n_resamples=4000, method="percentile",
                                confidence_level=0.9, random_state=1).confidence_interval
    assert res["ci_low"].iloc[0] == pytest.approx(ref.low, rel=0.03)
    assert res["ci_high"].iloc[0] == pytest.approx(ref.high, rel=0.03)


def test_change_ratio_clusters_widen_the_interval():
    """Units of one layer share their change: resampling layers (not units) is wider."""
    rng = np.random.default_rng(8)
    layer_effect = rng.lognormal(0, 1.0, 6)
    pre = np.repeat(layer_effect, 5) * rng.lognormal(0, 0.05, 30)
    post = np.full(30, 0.01)
    free = ratio_of_changes(pre, post, n_boot=2000, seed=0)
    clustered = ratio_of_changes(pre, post, clusters=np.repeat(np.arange(6), 5), n_boot=2000, seed=0)
    width = lambda r: r["ci_high"].iloc[0] - r["ci_low"].iloc[0]  # noqa: E731
    assert width(clustered) > 1.5 * width(free)
    assert clustered["n"].iloc[0] == 6


def test_change_ratio_input_errors():
    with pytest.raises(StatsInputError, match="non-negative"):
        ratio_of_changes([1.0, -1.0], [1.0, 1.0], n_boot=0)
    with pytest.raises(StatsInputError, match="every change is 0"):
        ratio_of_changes([0.0, 0.0], [0.0, 0.0], n_boot=0)
    with pytest.raises(StatsInputError):
        ratio_of_changes([1.0, 2.0, 3.0], [1.0, 2.0], n_boot=0)
    res = ratio_of_changes([1.0, 2.0], [0.0, 0.0], n_boot=10)
    assert np.isinf(res["effect"].iloc[0]) and np.isinf(res["ci_low"].iloc[0])


def test_quantile_with_infinite_replicates():
    rng = np.random.default_rng(9)
    x = rng.normal(size=101)
    for q in (0.0, 0.025, 0.05, 0.5, 0.95, 0.975, 1.0):
        # numpy.quantile(x, q) (linear interpolation) on finite replicates
        assert ranks._quantile_inf(x, q) == pytest.approx(float(np.quantile(x, q)), rel=1e-12, abs=1e-14)
    y = np.concatenate([np.arange(10.0), [np.inf] * 10])
    assert ranks._quantile_inf(y, 0.25) == pytest.approx(float(np.quantile(np.arange(20.0), 0.25)))
    assert np.isinf(ranks._quantile_inf(y, 0.75))
