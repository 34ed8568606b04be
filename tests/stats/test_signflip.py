"""lie_stats.stats.signflip: the sign-flip and slope permutation tests against scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats.signflip import sign_flip_test, slope_permutation_test


def test_sign_flip_exact_matches_scipy_permutation_test():
    d = np.array([1.2, -0.3, 0.8, 2.1, 0.4, -0.9, 1.5])
    r = sign_flip_test(d)
    # scipy.stats.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf,
    #                              alternative="greater") flips signs exhaustively (2^7 patterns)
    for alt, key in (("greater", "p_greater"), ("less", "p_less")):
        ref = sps.permutation_test((d,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
                                   n_resamples=np.inf, alternative=alt, vectorized=True).pvalue
        assert r[key] == pytest.approx(ref, rel=1e-12)
    assert r["exact"] and r["n_perm"] == 127 and r["p_min"] == 2.0 ** -7
    assert r["p_value"] == pytest.approx(2 * min(r["p_greater"], r["p_less"]))


def test_sign_flip_random_patterns_and_errors():
    d = np.random.default_rng(0).normal(0.5, 1.0, size=20)
    r = sign_flip_test(d, n_perm=1999, seed=1)
    assert not r["exact"] and r["n_perm"] == 1999 and r["p_min"] == 1 / 2000
    exact_free = sps.ttest_1samp(d, 0.0, alternative="greater").pvalue  # t reference, 20 units
    assert abs(r["p_greater"] - exact_free) < 0.02
    with pytest.raises(StatsInputError, match="finite"):
        sign_flip_test([1.0, np.nan])


def test_slope_permutation_matches_scipy_pairings():
    y = np.array([0.3, 0.1, 0.5, 0.4, 0.9, 0.7])
    r = slope_permutation_test(y)
    depth = np.arange(6) / 5
    assert float(r["statistic"]) == pytest.approx(sps.linregress(depth, y).slope)

    def slope(a, b, axis=-1):
        ac = a - a.mean(axis=axis, keepdims=True)
        return (ac * b).sum(axis=axis) / (ac * ac).sum(axis=axis)

    # scipy.stats.permutation_test((depth, y), slope, permutation_type="pairings",
    #                              n_resamples=np.inf): all 6! = 720 pairings
    ref = sps.permutation_test((depth, y), slope, permutation_type="pairings", n_resamples=np.inf,
                               alternative="greater", vectorized=True).pvalue
    assert float(r["p_greater"]) == pytest.approx(ref, rel=1e-12) and r["exact"]
    two = slope_permutation_test(np.stack([y, y[::-1]]))  # leading axes tested separately
    assert two["statistic"][1] == pytest.approx(-two["statistic"][0])
    assert two["p_less"][1] == pytest.approx(two["p_greater"][0])
    with pytest.raises(StatsInputError, match="at least 3 layers"):
        slope_permutation_test([1.0, 2.0])
