"""lie_stats.stats.intersection: the intersection-union equivalence test over units."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps
from statsmodels.stats.multitest import multipletests

from lie_stats.errors import StatsInputError
from lie_stats import columns as C
from lie_stats.stats import intersection as iut

B = 1e-3  # the bound of every test here: 0.1 %


def test_one_unit_without_noise_samples_is_the_one_sample_tost():
    d = np.log1p(np.array([4e-4, -2e-4, 6e-4, 1e-4, 3e-4, 0.0, 5e-4, 2e-4]))
    unit = iut.unit_equivalence(d[None, :], ["c"], bound=B)
    b = np.log1p(B)
    # scipy.stats.ttest_1samp(d, -b, alternative="greater").pvalue and (d, b, "less"):
    # the two one-sided tests; the TOST p is the larger
    p_lo = sps.ttest_1samp(d, -b, alternative="greater").pvalue
    p_hi = sps.ttest_1samp(d, b, alternative="less").pvalue
    assert unit["p_equivalence"].iloc[0] == pytest.approx(max(p_lo, p_hi), rel=1e-10)
    assert unit["se"].iloc[0] == pytest.approx(sps.sem(d))
    assert unit["df"].iloc[0] == d.size - 1
    # beyond the bound, both directions: 2 * scipy.stats.ttest_1samp(d, b, alternative="greater")
    # on |mean|; here the mean lies inside the bound, so that p is large
    assert unit["p_beyond"].iloc[0] == pytest.approx(
        min(1.0, 2 * sps.ttest_1samp(d, b, alternative="greater").pvalue), rel=1e-10)


def test_noise_samples_pool_with_the_replicate_deviations():
    rng = np.random.default_rng(3)
    d = rng.normal(0, 2e-4, size=(6, 2))
    z = rng.normal(0, 2e-4, size=10)
    unit = iut.unit_equivalence(d, np.zeros(6), z, np.zeros(10), bound=B)
    dev2 = ((d - d.mean(axis=1, keepdims=True)) ** 2).sum()
    df = 6 * (2 - 1) + 10
    sd = np.sqrt((dev2 + (z ** 2).sum()) / df)
    assert np.allclose(unit["noise_sd"], sd) and np.allclose(unit["df"], df)
    assert np.allclose(unit["se"], sd / np.sqrt(2))
    # duality with the 1 - 2 alpha interval: scipy.stats.t.interval(0.90, df, mean, se)
    lo, hi = sps.t.interval(0.90, df, loc=unit["mean"], scale=unit["se"])
    inside = (lo > -np.log1p(B)) & (hi < np.log1p(B))
    assert ((unit["p_equivalence"] < 0.05).to_numpy() == inside).all()


def test_cells_have_their_own_noise_floor():
    rng = np.random.default_rng(4)
    d = np.vstack([rng.normal(0, 1e-4, size=(5, 2)), rng.normal(0, 1e-2, size=(5, 2))])
    unit = iut.unit_equivalence(d, np.repeat(["quiet", "loud"], 5), bound=B)
    quiet, loud = unit["noise_sd"].iloc[0], unit["noise_sd"].iloc[-1]
    assert quiet < 1e-3 < loud and unit["df"].eq(5).all()


def test_the_iut_p_is_the_largest_unit_p_and_every_unit_must_pass():
    rng = np.random.default_rng(0)
    d = rng.normal(0, 1e-4, size=(24, 2))
    cells = np.repeat([0, 1], 12)
    res = iut.iut_equivalence(d, cells, bound=B)
    units = iut.unit_equivalence(d, cells, bound=B)
    assert list(res.columns) == list(iut.IUT_COLUMNS)
    assert res[C.P_VALUE].iloc[0] == pytest.approx(units["p_equivalence"].max())
    assert res[iut.N_WITHIN].iloc[0] == 24 and res[C.P_VALUE].iloc[0] < 0.05
    assert res[iut.RESOLVABLE].iloc[0] == 1
    d[7] += 0.01  # one unit changed by 1 %: the intersection fails, that unit binds
    res = iut.iut_equivalence(d, cells, bound=B)
    assert res[C.P_VALUE].iloc[0] > 0.5 and res[iut.WORST_UNIT].iloc[0] == 7
    assert res[iut.LARGEST_UNIT].iloc[0] == 7
    assert res[iut.N_WITHIN].iloc[0] == 23 and res[iut.N_BEYOND].iloc[0] == 1
    assert res[C.EFFECT].iloc[0] == pytest.approx(np.expm1(d[7].mean()))


def test_signed_changes_do_not_cancel():
    """+3 % in half the layers and -3 % in the others: their mean is 0, every layer changed."""
    rng = np.random.default_rng(1)
    shift = np.where(np.arange(12) % 2 == 0, 0.03, -0.03)
    d = shift[:, None] + rng.normal(0, 1e-3, size=(12, 2))
    res = iut.iut_equivalence(d, np.zeros(12), bound=B)
    assert abs(d.mean()) < 2e-3  # a TOST on the mean over layers would see almost nothing
    assert res[iut.N_BEYOND].iloc[0] == 12 and res[iut.P_BEYOND].iloc[0] < 1e-6
    assert res[C.P_VALUE].iloc[0] > 0.99


def test_p_beyond_is_bonferroni_over_units():
    rng = np.random.default_rng(2)
    d = rng.normal(0.0, 3e-3, size=(20, 2)) + np.linspace(0, 0.01, 20)[:, None]
    res = iut.iut_equivalence(d, np.zeros(20), bound=B)
    units = iut.unit_equivalence(d, np.zeros(20), bound=B)
    # statsmodels.stats.multitest.multipletests(p, method="bonferroni")[1].min()
    ref = multipletests(units["p_beyond"], method="bonferroni")[1].min()
    assert res[iut.P_BEYOND].iloc[0] == pytest.approx(ref)
    assert res[iut.N_BEYOND].iloc[0] == int((units["p_beyond"] < 0.05 / 20).sum())


def test_a_wide_noise_floor_is_reported_unresolvable():
    rng = np.random.default_rng(5)
    d = rng.normal(0, 0.02, size=(12, 2))
    res = iut.iut_equivalence(d, np.zeros(12), bound=B)
    assert res[iut.RESOLVABLE].iloc[0] == 0 and res[iut.NOISE_FLOOR].iloc[0] > 0.01


def test_identical_runs_and_no_noise_give_the_limits():
    d = np.full((3, 2), 5e-4)
    with pytest.raises(StatsInputError, match="no degrees of freedom"):
        iut.unit_equivalence(d[:, :1], np.zeros(3), bound=B)
    unit = iut.unit_equivalence(d, np.zeros(3), bound=B)  # se 0: the limits, 0 inside the bound
    assert (unit["p_equivalence"] == 0).all() and (unit["p_beyond"] == 1).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"bound": 0.0}, "bound must be a positive"),
    ({"bound": "x"}, "bound must be a positive"),
    ({"bound": B, "cells": np.zeros(3)}, "cells must be a 1-d array of length 4"),
    ({"bound": B, "noise": np.zeros(2)}, "noise needs noise_cells"),
])
def test_bad_input_is_refused(kwargs, match):
    args = {"changes": np.zeros((4, 2)), "cells": np.zeros(4), **kwargs}
    with pytest.raises(StatsInputError, match=match):
        iut.iut_equivalence(**args)


def test_rows_with_a_missing_replicate_are_dropped():
    d = np.array([[1e-4, 2e-4], [np.nan, 1e-4], [0.0, -1e-4]])
    unit = iut.unit_equivalence(d, np.zeros(3), bound=B)
    assert unit["unit"].tolist() == [0, 2]


def test_the_largest_abs_change_and_its_simultaneous_interval():
    rng = np.random.default_rng(3)
    d = rng.normal(0.0, 2e-4, size=(12, 2))
    d[5] -= 0.004  # one unit moved by -0.4 %: the largest |change|, on the bound's log scale
    res = iut.iut_equivalence(d, np.arange(12), rng.normal(0.0, 2e-4, size=24), np.repeat(np.arange(12), 2),
                              bound=B).iloc[0]
    mean = d.mean(axis=1)
    assert res[iut.LARGEST_ABS_CHANGE] == pytest.approx(np.expm1(np.abs(mean).max()))
    assert res[iut.LARGEST_ABS_CHANGE] > 0 > res[C.EFFECT]  # the effect keeps the sign, the magnitude not
    assert res[iut.LARGEST_ABS_CI_LOW] <= res[iut.LARGEST_ABS_CHANGE] <= res[iut.LARGEST_ABS_CI_HIGH]
    assert res[iut.LARGEST_ABS_CI_LOW] > B and res[iut.N_BEYOND] == 1  # 0.4 % is beyond 0.1 %


@pytest.mark.parametrize("seed", range(40))
def test_the_interval_lies_above_the_bound_exactly_when_some_unit_is_beyond_it(seed):
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, 5e-4, size=(8, 2)) + rng.choice([0.0, 0.0, 0.002, -0.003], size=(8, 1))
    res = iut.iut_equivalence(d, np.arange(8), rng.normal(0.0, 5e-4, size=16), np.repeat(np.arange(8), 2),
                              bound=B).iloc[0]
    above = res[iut.LARGEST_ABS_CI_LOW] > B
    assert above == (res[iut.N_BEYOND] > 0)


def test_the_interval_covers_the_largest_true_change_at_its_level():
    rng = np.random.default_rng(11)
    mu = np.array([0.0, 5e-4, -8e-4, 2e-4, 0.0, -1e-4])  # max |mu| = 8e-4
    target = np.expm1(np.abs(mu).max())
    hits = 0
    for _ in range(400):
        d = mu[:, None] + rng.normal(0.0, 4e-4, size=(6, 2))
        res = iut.iut_equivalence(d, np.arange(6), rng.normal(0.0, 4e-4, size=12), np.repeat(np.arange(6), 2),
                                  bound=B, alpha=0.05).iloc[0]
        hits += res[iut.LARGEST_ABS_CI_LOW] <= target <= res[iut.LARGEST_ABS_CI_HIGH]
    assert hits / 400 >= 0.93  # simultaneous (Bonferroni): at least 1 - alpha, up to Monte Carlo error


def test_the_largest_units_interval_covers_its_own_change_despite_being_picked():
    """With every unit at 0, the unit with the largest |mean| is the one whose own 90 % interval
    most often misses 0; the reported interval is simultaneous (t at 1 - alpha / n), so it
    covers the picked unit's true change (0) in at least 1 - alpha of draws."""
    rng = np.random.default_rng(12)
    hits = per_unit = 0
    for _ in range(400):
        d = rng.normal(0.0, 4e-4, size=(24, 2))
        z, z_cells = rng.normal(0.0, 4e-4, size=48), np.repeat(np.arange(24), 2)
        res = iut.iut_equivalence(d, np.arange(24), z, z_cells, bound=B, alpha=0.05).iloc[0]
        hits += res["ci_low"] <= 0.0 <= res["ci_high"]
        # the picked unit's own 1 - 2 alpha interval, for contrast: scipy.stats.t.interval(0.90, ...)
        units = iut.unit_equivalence(d, np.arange(24), z, z_cells, bound=B)
        row = units[units["unit"] == int(res[iut.LARGEST_UNIT])].iloc[0]
        lo, hi = sps.t.interval(0.90, row["df"], loc=row["mean"], scale=row["se"])
        per_unit += lo <= 0.0 <= hi
    assert hits / 400 >= 0.93
    assert per_unit / 400 < 0.6  # what the picked unit's own interval would have given
