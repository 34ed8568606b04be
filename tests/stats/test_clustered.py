"""lie_stats.stats.clustered: clustered means and shares with a stratified cluster-bootstrap
interval; cross-checked against scipy, calibrated on simulated nulls."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps

from lie_stats.errors import StatsInputError
from lie_stats import columns as C
from lie_stats.stats.clustered import head_mean, share_above
from lie_stats.columns import HEAD_MEAN_COLUMNS, N_CLUSTERS

from ._sim import ALPHA

# ------------------------------------------------------------------------------ head_mean


def _layers(rng, n_layers=12, heads=8, share=0.7, spread=8.0):
    """Heads nested in layers: each layer's sink share ~ Beta (mean ``share``), heads Bernoulli."""
    p_layer = rng.beta(share * spread, (1 - share) * spread, size=n_layers)
    layer = np.repeat(np.arange(n_layers), heads)
    return (rng.random(layer.size) < p_layer[layer]).astype(float), layer


def test_cluster_mean_estimate_and_columns():
    vals = np.array([1.0, 2.0, np.nan, 4.0, 8.0, 16.0])
    res = head_mean(vals, clusters=[0, 0, 1, 1, 2, 2], n_boot=99).iloc[0]
    assert list(head_mean(vals, clusters=[0, 0, 1, 1, 2, 2], n_boot=9).columns) == list(HEAD_MEAN_COLUMNS)
    assert res[C.EFFECT] == pytest.approx(np.nanmean(vals)) and res[C.N] == 5 and res[N_CLUSTERS] == 3
    assert np.isnan(res[C.P_VALUE])  # no null value: no p
    geo = head_mean(vals, clusters=[0, 0, 1, 1, 2, 2], transform="log", n_boot=99).iloc[0]
    # scipy.stats.gmean([1, 2, 4, 8, 16]) = 4.0
    assert geo[C.EFFECT] == pytest.approx(sps.gmean([1.0, 2.0, 4.0, 8.0, 16.0]))
    assert geo[C.CI_LOW] <= geo[C.EFFECT] <= geo[C.CI_HIGH]


def test_cluster_bootstrap_matches_scipy_on_cluster_means():
    """Equal cluster sizes, one stratum: resampling whole clusters is the ordinary bootstrap
    of the cluster means, so the percentile interval matches scipy's up to Monte Carlo error."""
    rng = np.random.default_rng(5)
    x, layer = _layers(rng, n_layers=20)
    res = head_mean(x, clusters=layer, n_boot=20000, seed=1).iloc[0]
    means = np.bincount(layer, weights=x) / np.bincount(layer)
    # scipy.stats.bootstrap((means,), np.mean, method="percentile", n_resamples=20000)
    ref = sps.bootstrap((means,), np.mean, method="percentile", n_resamples=20000,
                        random_state=np.random.default_rng(2)).confidence_interval
    assert res[C.CI_LOW] == pytest.approx(ref.low, abs=0.01)
    assert res[C.CI_HIGH] == pytest.approx(ref.high, abs=0.01)


def test_strata_keep_their_weights():
    """Stratified resampling: a stratum whose clusters are all identical adds no variance, and
    a pooled replicate keeps each stratum's number of units (the estimate's weights)."""
    a = np.repeat([1.0], 6)  # stratum 0: 3 layers of 2 heads, all ones
    b = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 1.0])  # stratum 1: layers at 0, 1, 0.5
    vals = np.concatenate([a, b])
    clusters = np.repeat(np.arange(6), 2)
    strata = np.repeat([0, 1], 6)
    res = head_mean(vals, clusters=clusters, strata=strata, n_boot=4000).iloc[0]
    assert res[C.EFFECT] == pytest.approx(0.75) and res[C.N_STRATA] == 2
    # replicates are (1 * 6 + mean of 3 resampled layer means of stratum 1 * 6) / 12 in [0.5, 1]
    assert 0.5 <= res[C.CI_LOW] < res[C.CI_HIGH] <= 1.0
    only_a = head_mean(a, clusters=clusters[:6], n_boot=200).iloc[0]
    assert only_a[C.CI_LOW] == only_a[C.CI_HIGH] == 1.0


def test_cluster_mean_errors():
    with pytest.raises(StatsInputError, match="spans two strata"):
        head_mean([1.0, 2.0, 3.0, 4.0], clusters=[0, 0, 1, 1], strata=[0, 1, 1, 1])
    with pytest.raises(StatsInputError, match="at least 2 clusters"):
        head_mean([1.0, 2.0], clusters=[0, 0])
    with pytest.raises(StatsInputError, match="non-positive"):
        head_mean([1.0, 0.0, 2.0], clusters=[0, 1, 2], transform="log")
    with pytest.raises(StatsInputError, match="transform"):
        head_mean([1.0, 2.0], clusters=[0, 1], transform="logit")
    with pytest.raises(StatsInputError, match="share"):
        share_above([0.2, 0.8], 0.5, clusters=[0, 1], null_value=1.5)


def test_share_above_counts_strictly_and_drops_nan():
    res = share_above([0.5, 0.51, np.nan, 0.9, 0.1, 0.7], 0.5, clusters=[0, 0, 1, 1, 2, 2],
                      null_value=0.5, n_boot=199).iloc[0]
    assert res[C.EFFECT] == pytest.approx(3 / 5) and res[C.N] == 5  # 0.5 is not above 0.5


def test_share_above_planted_majority_is_significant():
    rng = np.random.default_rng(7)
    x, layer = _layers(rng, share=0.9, spread=30.0)
    res = share_above(x, 0.5, clusters=layer, null_value=0.5, n_boot=1999).iloc[0]
    assert res[C.CI_LOW] > 0.5 and res[C.P_VALUE] < 0.01 and res[C.STATISTIC] > 0


@pytest.mark.slow
def test_share_above_calibration_coverage_and_size():
    """Calibration on simulated nulls (12 layers x 8 heads, layer shares ~ Beta with mean
    0.5): the 95 % interval covers the true share, and the p-value against the true share
    rejects at alpha about alpha of the time. Percentile cluster bootstraps with 12 clusters
    run a little liberal; the accepted band is [0.05 - 0.015, 0.05 + 0.035] for the size
    (1,000 datasets: binomial SD 0.007) and coverage >= 0.91."""
    rng = np.random.default_rng(11)
    n_sets, hits, rej = 1000, 0, 0
    for i in range(n_sets):
        x, layer = _layers(rng, share=0.5, spread=8.0)
        row = share_above(x, 0.5, clusters=layer, null_value=0.5, n_boot=499, seed=i).iloc[0]
        hits += row[C.CI_LOW] <= 0.5 <= row[C.CI_HIGH]
        rej += row[C.P_VALUE] <= ALPHA
    assert hits / n_sets >= 0.91
    assert 0.035 <= rej / n_sets <= 0.085


def test_share_above_calibration_fast():
    """A quick form of the calibration above, run in every test session (300 datasets)."""
    rng = np.random.default_rng(13)
    rows = []
    for i in range(300):
        x, layer = _layers(rng, share=0.5, spread=8.0)
        rows.append(share_above(x, 0.5, clusters=layer, null_value=0.5, n_boot=299, seed=i).iloc[0])
    cover = np.mean([r[C.CI_LOW] <= 0.5 <= r[C.CI_HIGH] for r in rows])
    size = np.mean([r[C.P_VALUE] <= ALPHA for r in rows])
    assert cover >= 0.88 and size <= 0.11
