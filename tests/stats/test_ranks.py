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


def test_ratio_p_is_the_t_test_of_cluster_differences():
    # R > r0 exactly when sum(pre) - r0 sum(post) > 0: with one stratum, Fieller's p is the
    # one-sample t test of the cluster differences pre_c - r0 post_c
    rng = np.random.default_rng(6)
    pre = rng.lognormal(0, 0.6, 30)
    post = rng.lognormal(-3, 0.6, 30)
    clusters = np.repeat(np.arange(10), 3)
    res = ratio_of_changes(pre, post, clusters=clusters, ci=0.9, reference=(15.0, 30.0))
    pre_c, post_c = np.bincount(clusters, pre), np.bincount(clusters, post)
    assert res["effect"].iloc[0] == pytest.approx(pre.mean() / post.mean(), rel=1e-12)
    # scipy.stats.ttest_1samp(pre_c - 15 * post_c, 0, alternative="greater").pvalue
    ref_lo = scipy.stats.ttest_1samp(pre_c - 15.0 * post_c, 0.0, alternative="greater").pvalue
    ref_hi = scipy.stats.ttest_1samp(pre_c - 30.0 * post_c, 0.0, alternative="less").pvalue
    assert res["p_below"].iloc[0] == pytest.approx(ref_lo, rel=1e-10)
    assert res["p_above"].iloc[0] == pytest.approx(ref_hi, rel=1e-10)
    assert res["p_value"].iloc[0] == pytest.approx(max(ref_lo, ref_hi), rel=1e-10)
    assert res["df"].iloc[0] == 9 and res["n"].iloc[0] == 10 and res["n_units"].iloc[0] == 30
    # Fieller's limits are where the one-sided tests reach (1 - ci) / 2 = 0.05
    for limit, alt in ((res["ci_low"].iloc[0], "greater"), (res["ci_high"].iloc[0], "less")):
        p = scipy.stats.ttest_1samp(pre_c - limit * post_c, 0.0, alternative=alt).pvalue
        assert p == pytest.approx(0.05, rel=1e-8)
    assert res["ci_low"].iloc[0] < res["effect"].iloc[0] < res["ci_high"].iloc[0]


def test_ratio_strata_pool_their_within_stratum_variances():
    rng = np.random.default_rng(5)
    pre = rng.lognormal(0, 0.5, 24)
    post = rng.lognormal(-4, 0.5, 24)
    strata = np.repeat([0, 1], 12)
    res = ratio_of_changes(pre, post, strata=strata, clusters=np.tile(np.arange(12), 2),
                           reference=(50.0, np.inf))
    d = pre - 50.0 * post  # one unit per cluster: cluster differences, by stratum
    var = sum(12 / 11 * np.sum((d[strata == k] - d[strata == k].mean()) ** 2) for k in (0, 1))
    t = d.sum() / np.sqrt(var)
    assert res["p_below"].iloc[0] == pytest.approx(scipy.stats.t.sf(t, 22), rel=1e-10)
    assert res["df"].iloc[0] == 22 and res["n_strata"].iloc[0] == 2 and res["p_above"].iloc[0] == 0.0
    # a stratum with a single cluster leaves no variance: no test
    one = ratio_of_changes(pre[:13], post[:13], strata=strata[:13])
    assert np.isnan(one["p_value"].iloc[0]) and np.isnan(one["ci_low"].iloc[0])


def test_change_ratio_clusters_widen_the_interval():
    """Units of one layer share their change: testing over layers (not units) is wider."""
    rng = np.random.default_rng(8)
    layer_effect = rng.lognormal(0, 1.0, 6)
    pre = np.repeat(layer_effect, 5) * rng.lognormal(0, 0.05, 30)
    post = np.full(30, 0.01) * rng.lognormal(0, 0.05, 30)
    free = ratio_of_changes(pre, post)
    clustered = ratio_of_changes(pre, post, clusters=np.repeat(np.arange(6), 5))
    width = lambda r: r["ci_high"].iloc[0] - r["ci_low"].iloc[0]  # noqa: E731
    assert width(clustered) > 1.5 * width(free)
    assert clustered["n"].iloc[0] == 6 and clustered["df"].iloc[0] == 5


def test_change_ratio_input_errors():
    with pytest.raises(StatsInputError, match="non-negative"):
        ratio_of_changes([1.0, -1.0], [1.0, 1.0])
    with pytest.raises(StatsInputError, match="every change is 0"):
        ratio_of_changes([0.0, 0.0], [0.0, 0.0])
    with pytest.raises(StatsInputError):
        ratio_of_changes([1.0, 2.0, 3.0], [1.0, 2.0])
    res = ratio_of_changes([1.0, 2.0], [0.0, 0.0])
    # no post-training change: the ratio is infinite and Fieller's set unbounded
    assert np.isinf(res["effect"].iloc[0]) and np.isinf(res["ci_high"].iloc[0])


def test_pairwise_p_is_a_t_test_over_layers_of_the_pooled_squares():
    tot, vals, norms = _map(seed=3, n_layers=12)
    layered = np.isfinite(vals).any(axis=1)
    shares = ranks._layer_shares(tot, vals, norms, layered)
    assert shares.mean(axis=1) == pytest.approx(tot ** 2, rel=1e-10)  # layer means: pooled squares
    i, j = CATS.index("mlp_out"), CATS.index("attn_q")
    p = ranks.pairwise_p(shares, [i], [j])[0]
    # scipy.stats.ttest_1samp(shares[i] - shares[j], 0, alternative="greater").pvalue
    ref = scipy.stats.ttest_1samp(shares[i] - shares[j], 0.0, alternative="greater").pvalue
    assert p == pytest.approx(ref, rel=1e-10)
    e, u = CATS.index("embedding"), CATS.index("unembedding")  # two per-model categories: certain
    assert ranks.pairwise_p(shares, [u, e], [e, u]).tolist() == [0.0, 1.0]


def test_delta_rank_shows_what_twelve_layers_separate():
    # mlp_out (0.2) and unembedding (0.5) changed clearly more than attn_q (0.05) over 12
    # layers; attn_k (0.06) is within noise of it
    tot, vals, norms = _map(seed=3, n_layers=12)
    res = delta_rank(tot, vals, norms, categories=CATS, target="attn_q", n_boot=200).iloc[0]
    shares = ranks._layer_shares(tot, vals, norms, np.isfinite(vals).any(axis=1))
    j = CATS.index("attn_q")
    others = [i for i in range(len(CATS)) if i != j]
    p_larger = ranks.pairwise_p(shares, others, [j] * len(others))
    assert res["n_shown_larger"] == ranks.holm_count(p_larger, 0.025)
    assert res["n_shown_larger"] >= 2 and res["n_shown_smaller"] == 0


def test_delta_order_p_is_the_largest_pairwise_p():
    tot, vals, norms = _map(seed=3, n_layers=12)
    res = delta_order(tot, vals, norms, categories=CATS, groups=[["unembedding"], ["mlp_out"]],
                      n_boot=100).iloc[0]
    shares = ranks._layer_shares(tot, vals, norms, np.isfinite(vals).any(axis=1))
    u, m = CATS.index("unembedding"), CATS.index("mlp_out")
    rest = [i for i in range(len(CATS)) if i not in (u, m)]
    first, second = [u] * 5 + [m] * 4, [m, *rest, *rest]
    assert res["p_order"] == pytest.approx(ranks.pairwise_p(shares, first, second).max(), rel=1e-12)
    assert res["p_reversed"] == pytest.approx(
        min(1.0, 9 * ranks.pairwise_p(shares, second, first).min()), rel=1e-12)
    assert res["p_value"] == res["p_order"]


def test_ratio_with_runs_as_clusters_is_a_t_test_over_run_totals():
    """Runs as the clusters (each run's summed change one cluster, one stratum): the test is
    the one-sample t of the run totals ``pre_r - r0 post_r`` on runs - 1 df, and planted
    between-run variance widens the interval that layers within runs leave narrow."""
    rng = np.random.default_rng(11)
    n_runs, n_layers = 3, 12
    run_effect = np.array([0.4, 1.0, 2.5])  # between-run variance, shared by a run's layers
    pre = np.repeat(run_effect, n_layers) * rng.lognormal(0, 0.05, n_runs * n_layers)
    post = np.full(n_runs * n_layers, 0.01) * rng.lognormal(0, 0.05, n_runs * n_layers)
    run = np.repeat(np.arange(n_runs), n_layers)
    by_run = ratio_of_changes(pre, post, clusters=run, ci=0.9, reference=(50.0, np.inf))
    by_layer = ratio_of_changes(pre, post, strata=run, clusters=np.tile(np.arange(n_layers), n_runs),
                                ci=0.9, reference=(50.0, np.inf))
    assert by_run["n"].iloc[0] == n_runs and by_run["df"].iloc[0] == n_runs - 1
    assert by_layer["df"].iloc[0] == n_runs * n_layers - n_runs
    pre_r, post_r = np.bincount(run, weights=pre), np.bincount(run, weights=post)
    # scipy.stats.ttest_1samp(pre_r - 50 post_r, 0, alternative="greater").pvalue
    ref = scipy.stats.ttest_1samp(pre_r - 50.0 * post_r, 0.0, alternative="greater").pvalue
    assert by_run["p_below"].iloc[0] == pytest.approx(ref, rel=1e-10)
    # the interval's limits are where that t test reaches (1 - ci) / 2 = 0.05
    for limit, alt in ((by_run["ci_low"].iloc[0], "greater"), (by_run["ci_high"].iloc[0], "less")):
        p = scipy.stats.ttest_1samp(pre_r - limit * post_r, 0.0, alternative=alt).pvalue
        assert p == pytest.approx(0.05, rel=1e-8)
    width = lambda r: r["ci_high"].iloc[0] - r["ci_low"].iloc[0]  # noqa: E731
    assert width(by_run) > 10 * width(by_layer)
    assert by_run["effect"].iloc[0] == pytest.approx(by_layer["effect"].iloc[0], rel=1e-12)
