"""lie_stats.stats.permutation: index generators and the p-value rule."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lie_stats.errors import StatsInputError
from lie_stats.stats import (
    cluster_bootstrap_indices,
    n_distinct_permutations,
    permutation_indices,
    permutation_pvalue,
)


def _is_within_strata_perm(perm: np.ndarray, strata: np.ndarray) -> bool:
    n = strata.size
    rows_are_perms = (np.sort(perm, axis=1) == np.arange(n)).all()
    return bool(rows_are_perms and (strata[perm] == strata[None, :]).all())


def test_monte_carlo_permutations_stay_within_strata_and_are_reproducible():
    strata = np.repeat(np.arange(12), 12)[np.random.default_rng(3).permutation(144)]
    p1 = permutation_indices(144, strata=strata, n_perm=3000, seed=7)
    p2 = permutation_indices(144, strata=strata, n_perm=3000, seed=7)
    p3 = permutation_indices(144, strata=strata, n_perm=3000, seed=8)
    assert p1.shape == (3000, 144)
    assert _is_within_strata_perm(p1, strata)
    assert np.array_equal(p1, p2)
    assert not np.array_equal(p1, p3)


def test_unequal_strata_and_free_permutation():
    strata = np.array(["b", "a", "b", "c", "a", "b", "b", "c", "a"])  # sizes a 3, b 4, c 2
    mc = permutation_indices(9, strata=strata, n_perm=100, seed=0)  # 287 > 100: Monte Carlo
    assert mc.shape == (100, 9) and _is_within_strata_perm(mc, strata)
    p = permutation_indices(9, strata=strata, n_perm=5000, seed=0)
    # 3! 4! 2! - 1 = 287 <= 5000: exact, every distinct within-strata permutation but the identity
    assert _is_within_strata_perm(p, strata)
    assert len({tuple(r) for r in p}) == p.shape[0] == 287
    assert not (p == np.arange(9)).all(axis=1).any()
    free = permutation_indices(9, strata=None, n_perm=500, seed=0)
    assert free.shape == (500, 9) and _is_within_strata_perm(free, np.zeros(9, int))


def test_exact_enumeration_matches_itertools():
    strata = np.array([0, 0, 0, 1, 1])
    p = permutation_indices(5, strata=strata, n_perm=100, seed=0)
    expected = {tuple(a) + tuple(b) for a in itertools.permutations(range(3))
                for b in itertools.permutations(range(3, 5))} - {tuple(range(5))}
    assert {tuple(r) for r in p} == expected
    assert n_distinct_permutations(strata) == math.factorial(3) * math.factorial(2)


def test_monte_carlo_permutations_are_uniform_within_stratum():
    # position of unit 0's image over 20,000 permutations within a stratum of 4: uniform
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    p = permutation_indices(12, strata=strata, n_perm=20000, seed=1)
    counts = np.bincount(p[:, 0], minlength=4)[:4]
    from scipy.stats import chisquare

    # scipy.stats.chisquare(counts) against uniform: not rejected at 0.001
    assert chisquare(counts).pvalue > 1e-3
    assert counts.sum() == 20000


def test_pvalue_rule_and_centering():
    null = np.array([-3.0, -1.0, 0.5, 1.0, 2.0, 2.0])
    # (1 + #{|T| >= 2}) / (1 + 6) = (1 + 3) / 7
    assert permutation_pvalue(2.0, null) == pytest.approx(4 / 7)
    assert permutation_pvalue(2.0, null, alternative="greater") == pytest.approx(3 / 7)
    assert permutation_pvalue(2.0, null, alternative="less") == pytest.approx(7 / 7)
    # centred at 1: |T - 1| >= |2 - 1| = 1 -> -3, -1, 2, 2 and 0.5? no (0.5) -> 4
    assert permutation_pvalue(2.0, null, center=1.0) == pytest.approx(5 / 7)
    # empty null (no non-identity permutation): p = 1
    assert permutation_pvalue(0.3, np.empty(0)) == 1.0


def test_pvalue_counts_floating_point_ties():
    t = 0.1 + 0.2  # 0.30000000000000004
    assert permutation_pvalue(t, [0.3, 0.0], alternative="greater") == pytest.approx(2 / 3)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=0, max_size=50), st.floats(-1e3, 1e3),
       st.sampled_from(["two-sided", "greater", "less"]))
def test_pvalue_in_unit_interval(null, t, alternative):
    p = permutation_pvalue(t, null, alternative=alternative)
    assert 0.0 < p <= 1.0


def test_pvalue_refuses_bad_input():
    with pytest.raises(StatsInputError, match="two-sided"):
        permutation_pvalue(1.0, [0.0], alternative="two_sided")
    with pytest.raises(StatsInputError, match="not finite"):
        permutation_pvalue(1.0, [0.0, np.nan])
    with pytest.raises(StatsInputError, match="finite"):
        permutation_pvalue(np.nan, [0.0])


def test_index_generators_refuse_bad_input():
    with pytest.raises(StatsInputError, match="n_perm"):
        permutation_indices(5, strata=None, n_perm=0, seed=0)
    with pytest.raises(StatsInputError, match="strata"):
        permutation_indices(5, strata=[0, 1], n_perm=10, seed=0)
    with pytest.raises(StatsInputError, match="NaN"):
        permutation_indices(3, strata=[0.0, np.nan, 1.0], n_perm=10, seed=0)
    with pytest.raises(StatsInputError, match="seed"):
        cluster_bootstrap_indices(5, clusters=None, n_boot=10, seed=-1)
    with pytest.raises(TypeError):
        permutation_indices(5, n_perm=10, seed=0)  # strata is a required keyword


def test_cluster_bootstrap_two_stage():
    clusters = np.repeat(np.arange(12), 8)
    idx = cluster_bootstrap_indices(96, clusters=clusters, n_boot=4000, seed=2)
    assert idx.shape == (4000, 96)
    src = clusters[idx]  # cluster each resampled unit came from
    # every slot (the 8 positions of an original cluster) holds units of a single cluster
    slots = src.reshape(4000, 12, 8)
    assert (slots == slots[:, :, :1]).all()
    # clusters are drawn with replacement: some resamples repeat a cluster
    n_distinct = np.array([np.unique(s[:, 0]).size for s in slots[:200]])
    assert (n_distinct < 12).all()  # P(all 12 distinct) = 12!/12^12 ~ 5e-5 per resample
    # mean number of distinct clusters ~ 12 (1 - (11/12)^12) = 7.62
    assert abs(np.mean(n_distinct) - 12 * (1 - (11 / 12) ** 12)) < 0.3
    # every unit is used about equally often
    freq = np.bincount(idx.ravel(), minlength=96) / idx.size
    assert np.allclose(freq, 1 / 96, rtol=0.1)
    # within a slot, units are drawn with replacement (duplicates happen)
    assert (np.array([np.unique(r).size for r in idx[:100, :8]]) < 8).any()


def test_within_cluster_bootstrap_keeps_every_cluster():
    clusters = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    idx = cluster_bootstrap_indices(9, clusters=clusters, n_boot=500, seed=0, resample_clusters=False)
    assert (clusters[idx] == clusters[None, :]).all()


def test_ordinary_bootstrap_without_clusters():
    idx = cluster_bootstrap_indices(10, clusters=None, n_boot=20000, seed=0)
    assert idx.min() == 0 and idx.max() == 9
    # each row is 10 draws with replacement: mean distinct = 10 (1 - 0.9^10) = 6.51
    distinct = np.array([np.unique(r).size for r in idx[:2000]])
    assert abs(distinct.mean() - 10 * (1 - 0.9 ** 10)) < 0.1


@pytest.mark.parametrize("strata", [None, np.repeat(np.arange(6), 5), np.array([0, 0, 1, 1, 1, 2] * 5)])
@pytest.mark.parametrize("n_perm", [50, 100_000])
def test_value_chunks_apply_the_same_permutations(strata, n_perm):
    from lie_stats.stats.permutation import PermutationPlan

    codes = np.zeros(30, np.intp) if strata is None else np.unique(strata, return_inverse=True)[1]
    plan = PermutationPlan(codes, min(n_perm, 5000), seed=4)
    values = np.random.default_rng(0).normal(size=30)
    perms = np.concatenate(list(plan.chunks()))
    fast = np.concatenate(list(plan.value_chunks(values)))
    assert np.array_equal(fast, values[perms][:, plan.order])
