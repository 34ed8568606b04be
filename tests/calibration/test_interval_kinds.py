"""VERDICTS of ``head_mean``, ``share_above``, ``boundary_ratio`` and ``enrichment`` on nulls
with layer effects (ICC 0.5), 6-12 clusters and unequal layer sizes, and their power.

These kinds used to decide from percentile intervals over few clusters, or over heads
resampled within fixed layers: 4-8 % "supported" against a one-sided 2.5 %. They now decide
from an exact test (cluster sign flips, layer permutations), each side at alpha / 2, so each
direction's null count lies in the Binomial(n, 0.025) 99 % band. A test with few units is
discrete: 6 clusters reach only p = 1/32 two-sided, so its p < alpha rate may lie below
alpha (conservative); only its upper band is asserted. Simulations:
``tests/calibration/_design_cal_trend.py``; full sizes in benchmarks/calibration_cal_trend.md.
"""

from __future__ import annotations

import pytest

from ._design import binomial_band
from ._design_cal_trend import (ALPHA, boundary_verdicts, enrichment_verdicts, head_mean_verdicts,
                                share_above_verdicts)

N = 300
HALF = binomial_band(N, ALPHA / 2)  # (2, 15)
P_BAND = binomial_band(N, ALPHA)


def _null_ok(counts, *, discrete=False, size=ALPHA / 2):
    """Each direction in the 99 % band of its size: alpha / 2, or for a discrete exact test
    the largest attainable size not above it."""
    lo, hi = binomial_band(N, size)
    assert lo <= counts["supported"] <= hi, counts
    assert lo <= counts["refuted"] <= hi, counts
    assert (0 if discrete else P_BAND[0]) <= counts["p<alpha"] <= P_BAND[1], counts


@pytest.mark.slow
@pytest.mark.parametrize("heads, seed", [([8] * 12, 101), ([2, 8, 4, 12, 6, 3, 8, 5], 102)],
                         ids=["12-equal-layers", "8-unequal-layers"])
def test_head_mean_null_with_layer_effects(heads, seed):
    _null_ok(head_mean_verdicts(N, seed, heads), discrete=len(heads) < 10)


@pytest.mark.slow
def test_head_mean_six_clusters_holds_alpha_and_share_above_with_ties():
    # 6 clusters: 64 sign patterns, one-sided p >= 1/64 < 0.025, so it can still decide
    counts = head_mean_verdicts(N, 103, [8, 4, 8, 4, 8, 4])
    assert counts["supported"] <= HALF[1] and counts["refuted"] <= HALF[1], counts
    # the indicator of value > threshold: every head a tie at 0 or 1; 10 layers of 8
    _null_ok(share_above_verdicts(N, 104, [8] * 10))


@pytest.mark.slow
def test_boundary_ratio_null_unequal_layers_and_cv_summary():
    # 12 layers: 66 boundary pairs, one-sided p = k/66, so p < 0.025 only at k = 1: size 1/66
    _null_ok(boundary_verdicts(N, 105, [4] + [8] * 10 + [4]), size=1 / 66)
    _null_ok(boundary_verdicts(N, 106, [8] * 12, summary="cv"), size=1 / 66)


@pytest.mark.slow
def test_enrichment_null_with_a_layer_effect_shared_by_first_and_last():
    _null_ok(enrichment_verdicts(N, 107, [8] * 8))


@pytest.mark.slow
def test_power_under_planted_effects():
    n = 200
    # mean 0.6 (in SDs of a head) over 12 layers x 8 heads, ICC 0.5
    assert head_mean_verdicts(n, 111, [8] * 12, shift=0.6)["supported"] >= 0.5 * n
    # 75 % of heads above the threshold, against 0.5, 10 layers x 8 heads
    assert share_above_verdicts(n, 112, [8] * 10, share=0.75)["supported"] >= 0.5 * n
    # boundary layers 2x the interior, 12 layers (66 boundary choices)
    counts = boundary_verdicts(n, 113, [8] * 12, boost=2.0)
    assert counts["supported"] >= 0.25 * n and counts["refuted"] == 0, counts
    # last 1.5x first, 8 layers
    assert enrichment_verdicts(n, 114, [8] * 8, ratio=1.5)["supported"] >= 0.5 * n
