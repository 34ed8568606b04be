"""lie_stats.stats.groups: two-group differences with within-strata centring."""

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
from lie_stats import columns as C
from lie_stats.stats import group_difference

from ._sim import BAND, N_DATASETS, rejections


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    g = rng.random(60) < 0.4
    x[g] += 0.5
    return x, g


def test_effect_sizes_match_pingouin(data):
    x, g = data
    res = group_difference(x, g, strata=None, n_perm=999, n_boot=0)
    assert list(res.columns) == list(C.GROUP_DIFFERENCE_COLUMNS)
    x1, x0 = x[g], x[~g]
    assert res["raw_difference"].iloc[0] == pytest.approx(x1.mean() - x0.mean())
    # free permutation: the centre is 0 and the statistic is the raw difference
    assert res["null_center"].iloc[0] == pytest.approx(0.0, abs=1e-12)
    assert res["statistic"].iloc[0] == pytest.approx(x1.mean() - x0.mean())
    # pingouin.mwu(x1, x0)["RBC"]
    assert res["rank_biserial"].iloc[0] == pytest.approx(pingouin.mwu(x1, x0)["RBC"].iloc[0])
    # the effect is the tested quantity (centred difference), inside its own interval
    assert res["effect"].iloc[0] == res["statistic"].iloc[0]
    boot = group_difference(x, g, strata=None, n_perm=99, n_boot=500)
    assert boot["ci_low"].iloc[0] <= boot["effect"].iloc[0] <= boot["ci_high"].iloc[0]
    # pingouin.compute_effsize(x1, x0, eftype="hedges")
    assert res["hedges_g"].iloc[0] == pytest.approx(pingouin.compute_effsize(x1, x0, eftype="hedges"))
    assert (res["n_group1"].iloc[0], res["n_group0"].iloc[0]) == (g.sum(), (~g).sum())


def test_free_p_agrees_with_scipy_permutation_test(data):
    x, g = data
    x1, x0 = x[g], x[~g]
    # scipy.stats.permutation_test((x1, x0), mean difference, permutation_type="independent",
    #                              n_resamples=9999, alternative="greater")
    ref = sps.permutation_test((x1, x0), lambda a, b, axis: a.mean(axis) - b.mean(axis),
                               vectorized=True, n_resamples=9999, alternative="greater", rng=0).pvalue
    p = group_difference(x, g, strata=None, alternative="greater", n_boot=0, seed=1)["p_value"].iloc[0]
    assert abs(p - ref) < 4 * np.sqrt(2 * ref * (1 - ref) / 10000) + 1e-4


def test_exact_within_strata_matches_enumeration():
    rng = np.random.default_rng(1)
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    g = np.array([1, 1, 1, 0, 1, 0, 0, 0, 0], bool)  # group 1 concentrated in stratum 0
    x = rng.normal(size=9) + 3.0 * (strata == 0)  # stratum 0 is higher
    res = group_difference(x, g, strata=strata, n_perm=9999, n_boot=0)
    assert res["exact"].iloc[0] == 1
    # enumerate every within-strata permutation of x (itertools), difference of means
    idx = [np.flatnonzero(strata == s) for s in (0, 1)]
    diffs = []
    for a in itertools.permutations(idx[0]):
        for b in itertools.permutations(idx[1]):
            xp = x.copy()
            xp[idx[0]], xp[idx[1]] = x[list(a)], x[list(b)]
            diffs.append(xp[g].mean() - xp[~g].mean())
    diffs = np.array(diffs)
    raw = x[g].mean() - x[~g].mean()
    assert res["null_center"].iloc[0] == pytest.approx(diffs.mean())
    assert diffs.mean() > 1.0  # unbalanced groups pick up the stratum effect
    assert res["statistic"].iloc[0] == pytest.approx(raw - diffs.mean())
    p_ref = np.mean(np.abs(diffs - diffs.mean()) >= abs(raw - diffs.mean()) - 1e-12)
    assert res["p_value"].iloc[0] == pytest.approx(p_ref)


def test_ties_match_pingouin():
    x = np.array([1, 1, 2, 2, 2, 3, 3, 1, 2, 3, 3, 3], float)
    g = np.array([0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1], bool)
    res = group_difference(x, g, strata=None, n_boot=0)
    # pingouin.mwu(x[g], x[~g])["RBC"] (average ranks for ties)
    assert res["rank_biserial"].iloc[0] == pytest.approx(pingouin.mwu(x[g], x[~g])["RBC"].iloc[0])
    assert 0 < res["p_value"].iloc[0] <= 1


def test_two_labels_and_errors():
    x = np.array([1.0, 2, 3, 4, 5, 6])
    lab = np.array(["anchor", "worker", "anchor", "worker", "anchor", "worker"])
    res = group_difference(x, lab, strata=None, n_boot=0)
    assert res["raw_difference"].iloc[0] == pytest.approx(1.0)  # worker (group 1) - anchor
    with pytest.raises(StatsInputError, match="exactly 2 distinct labels, found 3"):
        group_difference(x, ["a", "b", "c", "a", "b", "c"], strata=None)
    with pytest.raises(StatsInputError, match="at least 2"):
        group_difference(x, [1, 0, 0, 0, 0, 0], strata=None)
    with pytest.raises(StatsInputError, match="x is constant"):
        group_difference(np.ones(6), lab, strata=None)
    with pytest.raises(StatsInputError, match="at least 2"):
        group_difference([np.nan] * 6, lab, strata=None)
    with pytest.raises(TypeError):
        group_difference(x, lab)


def test_bootstrap_interval_covers_planted_difference():
    rng = np.random.default_rng(3)
    layer = np.repeat(np.arange(12), 8)
    g = rng.random(96) < 0.5
    x = rng.normal(size=12)[layer] + 1.0 * g + rng.normal(size=96) * 0.5
    res = group_difference(x, g, strata=layer, n_perm=999, n_boot=2000)
    assert res["ci_low"].iloc[0] < 1.0 < res["ci_high"].iloc[0]
    assert res["ci_low"].iloc[0] > 0.5 and res["p_value"].iloc[0] < 0.01


# ------------------------------------------------------------------ calibration
def _confounded(rng, shift=0.0):
    """Layer effects in x and a group share that rises with depth: the raw difference is
    confounded by layer."""
    layer = np.repeat(np.arange(12), 8)
    g = rng.random(96) < np.linspace(0.15, 0.85, 12)[layer]
    if g.sum() < 2 or (~g).sum() < 2:
        g[:2], g[-2:] = True, False
    x = 1.5 * rng.normal(size=12)[layer] + 0.15 * layer + rng.normal(size=96) + shift * g
    return x, g, layer


def test_calibrated_on_confounded_layer_null(record_property):
    ps = []
    for i in range(N_DATASETS):
        x, g, layer = _confounded(np.random.default_rng(i))
        ps.append(group_difference(x, g, strata=layer, n_perm=199, n_boot=0, seed=i)["p_value"].iloc[0])
    count = rejections(ps)
    record_property("rejections", count)
    assert BAND[0] <= count <= BAND[1], count


def test_free_permutation_anticalibrated_on_confounded_null(record_property):
    ps = []
    for i in range(500):
        x, g, _ = _confounded(np.random.default_rng(i))
        ps.append(group_difference(x, g, strata=None, n_perm=199, n_boot=0, seed=i)["p_value"].iloc[0])
    record_property("rejection_rate", rejections(ps) / 500)
    assert rejections(ps) / 500 > 0.25


def test_power_on_planted_difference(record_property):
    ps = []
    for i in range(200):
        x, g, layer = _confounded(np.random.default_rng(10_000 + i), shift=0.8)
        ps.append(group_difference(x, g, strata=layer, n_perm=199, n_boot=0, seed=i)["p_value"].iloc[0])
    record_property("rejection_rate", rejections(ps) / 200)
    assert rejections(ps) / 200 > 0.8


# ------------------------------------------------------------------ properties
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(-500, 500), st.booleans(), st.integers(0, 2)),
                min_size=6, max_size=40))
def test_swapping_groups_flips_sign_and_keeps_p(rows):
    x = np.array([r[0] for r in rows], float)
    g = np.array([r[1] for r in rows])
    s = np.array([r[2] for r in rows])
    if g.sum() < 2 or (~g).sum() < 2 or np.ptp(x) == 0:
        with pytest.raises(StatsInputError):
            group_difference(x, g, strata=s)
        return
    a = group_difference(x, g, strata=s, n_perm=199, n_boot=100, seed=5)
    b = group_difference(x, ~g, strata=s, n_perm=199, n_boot=100, seed=5)
    for col in ("statistic", "effect", "rank_biserial", "raw_difference", "null_center"):
        assert b[col].iloc[0] == pytest.approx(-a[col].iloc[0], abs=1e-9)
    if np.isfinite(a["hedges_g"].iloc[0]):
        assert b["hedges_g"].iloc[0] == pytest.approx(-a["hedges_g"].iloc[0])
    assert b["p_value"].iloc[0] == a["p_value"].iloc[0]
    assert 0.0 < a["p_value"].iloc[0] <= 1.0
    assert b["ci_low"].iloc[0] == pytest.approx(-a["ci_high"].iloc[0], abs=1e-9)
    # adding a constant to the metric changes no test result
    c = group_difference(x + 1000.0, g, strata=s, n_perm=199, n_boot=0, seed=5)
    assert c["p_value"].iloc[0] == a["p_value"].iloc[0]
    assert c["statistic"].iloc[0] == pytest.approx(a["statistic"].iloc[0], abs=1e-8)
    assert isinstance(a, pd.DataFrame) and a.shape[0] == 1
