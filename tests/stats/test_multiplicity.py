"""lie_stats.stats.multiplicity: Holm and Benjamini-Hochberg with skipped hypotheses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from lie_stats.errors import StatsInputError
from lie_stats.stats import adjust_pvalues

SM = {"holm": "holm", "bh": "fdr_bh"}


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_matches_statsmodels(method):
    p = np.random.default_rng(0).uniform(size=25) ** 3
    # statsmodels.stats.multitest.multipletests(p, method="holm" / "fdr_bh")[1]
    ref = multipletests(p, method=SM[method])[1]
    np.testing.assert_allclose(adjust_pvalues(p, method=method), ref, rtol=1e-12)


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_skipped_hypotheses_are_left_out_of_the_family(method):
    p = np.array([0.01, np.nan, 0.02, 0.2, np.nan, 0.03])
    out = adjust_pvalues(p, method=method)
    assert np.isnan(out[[1, 4]]).all()
    tested = ~np.isnan(p)
    # statsmodels.stats.multitest.multipletests(p[tested], method=...)[1]: the family is m = 4
    np.testing.assert_allclose(out[tested], multipletests(p[tested], method=SM[method])[1])
    assert np.isnan(adjust_pvalues([np.nan, np.nan], method=method)).all()


def test_errors():
    with pytest.raises(StatsInputError, match="Did you mean 'holm'"):
        adjust_pvalues([0.1], method="hlm")
    with pytest.raises(StatsInputError, match=r"\[0, 1\]"):
        adjust_pvalues([0.1, 1.5], method="bh")
    with pytest.raises(StatsInputError, match="infinite"):
        adjust_pvalues([0.1, np.inf], method="bh")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=1, max_size=30))
def test_adjusted_at_least_raw_and_at_most_one(ps):
    p = np.array(ps)
    for method in ("holm", "bh"):
        out = adjust_pvalues(p, method=method)
        t = ~np.isnan(p)
        assert (np.isnan(out) == ~t).all()
        assert (out[t] >= p[t] - 1e-15).all() and (out[t] <= 1.0).all()
    t = ~np.isnan(p)
    assert (adjust_pvalues(p, method="holm")[t] >= adjust_pvalues(p, method="bh")[t] - 1e-15).all()
