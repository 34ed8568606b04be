"""Clustered summaries: the share of units above a threshold and the mean of unit values,
with a stratified cluster-bootstrap interval and a cluster sign-flip test against a null value.

Units (heads) are nested in clusters (layers) and clusters in strata (models), e.g. the
share of heads whose ``sink_argmax_fraction`` exceeds one half, or the geometric mean of a
positive ratio over heads (METRICS.md §7.2, §7.4).

The test against the null value is the cluster sign-flip test
(:func:`lie_stats.stats.signflip.sign_flip_test`) on each cluster's sum of deviations from
the null value: clusters are the independent units, so the test holds its level with 5-12
clusters and any layer effect, where the percentile interval does not (it is too narrow
with few clusters, Davison & Hinkley 1997, §5.3.1; it stays as the estimate's description).

Heads are nested in layers and layers in models. :func:`head_mean` resamples whole
layers (clusters) with replacement *within each model* (stratum): Davison & Hinkley (1997),
*Bootstrap Methods and their Application*, §3.8, strategy 1 (resample clusters, keep their
units), stratified as in §3.7. Each model keeps its number of layers, so a pooled estimate
keeps its weights.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import (HEAD_MEAN_COLUMNS, NULL_VALUE, N_BOOT, N_CLUSTERS, P_GREATER,
                                     P_LESS, P_MIN)
from lie_stats.stats.signflip import sign_flip_test

__all__ = [
    "head_mean",
    "share_above",
    "TRANSFORMS",
]

#: Scales on which :func:`head_mean` averages: the values themselves, or their logs
#: (a geometric mean, for positive ratios such as ``sink_value_ratio``).
TRANSFORMS = ("identity", "log")


_CHUNK = 1 << 20  # elements of one [chunk, n_clusters] block of bootstrap draws


def _stratified_cluster_draws(strata_of_cluster: np.ndarray, n_boot: int, seed: int):
    """Yield ``[chunk, K]`` blocks of cluster indices: for each stratum, its clusters drawn
    with replacement into its own slots (each stratum keeps its number of clusters)."""
    rng = np.random.default_rng(seed)
    k = strata_of_cluster.size
    members = [np.flatnonzero(strata_of_cluster == s) for s in np.unique(strata_of_cluster)]
    step = max(1, _CHUNK // max(1, k))
    for start in range(0, n_boot, step):
        m = min(step, n_boot - start)
        block = np.empty((m, k), dtype=np.intp)
        for idx in members:
            block[:, idx] = idx[rng.integers(0, idx.size, size=(m, idx.size))]
        yield block


def head_mean(
    values: ArrayLike,
    clusters: ArrayLike,
    *,
    strata: ArrayLike | None = None,
    transform: str = "identity",
    null_value: float | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    n_perm: int = 9999,
) -> pd.DataFrame:
    """Mean of unit values (heads) with a stratified cluster-bootstrap interval and a
    cluster sign-flip test against a null value.

    Parameters
    ----------
    values : array-like, shape ``[n]``
        One value per unit (head); NaN units are dropped. With ``transform="log"`` every
        value must be positive.
    clusters : array-like, shape ``[n]``
        Cluster label of each unit (its layer, unique across models).
    strata : array-like, shape ``[n]``, optional
        Stratum of each unit (its model); clusters are resampled within strata. A cluster
        must lie in one stratum. ``None``: one stratum.
    transform : {"identity", "log"}
        Average the values (``identity``) or their logs and report ``exp`` of the mean (a
        geometric mean, for ratios).
    null_value : float, optional
        Value the test is against (on the original scale). ``None``: no p-value (NaN).
    n_boot : int, default 2000
    ci : float, default 0.95
    seed : int, default 0
        Seed of the bootstrap; the sign flips use ``seed + 1``.
    n_perm : int, default 9999
        Random sign patterns of the test; all ``2^K - 1`` are enumerated when that is at
        most ``n_perm`` (``K`` clusters).

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`HEAD_MEAN_COLUMNS`:

    - ``n``: units used; ``n_clusters``, ``n_strata``; ``n_boot``; ``null_value`` (NaN if none);
    - ``effect``: the mean over all units (``exp`` of the mean log for ``log``): each unit
      weighs the same, so a stratum weighs by its number of units;
    - ``ci_low``, ``ci_high``: percentile interval of the bootstrap replicates (a
      description of the estimate; too narrow with few clusters, see Notes);
    - ``statistic``: ``effect - null_value`` on the transformed scale (NaN without
      ``null_value``);
    - ``p_greater``, ``p_less``: one-sided p-values of the cluster sign-flip test
      (:func:`lie_stats.stats.signflip.sign_flip_test`) on the clusters' sums of
      ``value - null_value`` (transformed scale): under the null every cluster's sum is
      symmetric about 0, so its sign may flip; ``p_value`` is twice the smaller, capped at
      1; ``p_min`` the smallest one-sided p the clusters allow (``2^-K``); ``n_perm``,
      ``exact``. All NaN without ``null_value``.

    Raises
    ------
    StatsInputError
        Lengths differ, a cluster spans two strata, fewer than 2 clusters, a non-positive
        value under ``log``, bad options.

    Notes
    -----
    Davison & Hinkley (1997), §3.8 (strategy 1, clusters resampled whole) and §3.7
    (stratified resampling); the percentile interval, their §5.3.1. With few clusters per
    stratum the percentile interval is too narrow (coverage below the nominal level; see
    the calibration test in ``tests/stats/test_clustered.py``), which is why the test is the
    sign-flip test (Canay, Romano & Shaikh 2017): it needs only independent clusters whose
    deviations are symmetric under the null, and a stratum (model) whose mean differs from
    the null value in the opposite direction of another only makes it conservative.

    Examples
    --------
    >>> vals = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0])
    >>> res = head_mean(vals, clusters=[0, 0, 1, 1, 2, 2, 3, 3], null_value=0.5, n_boot=999)
    >>> float(res["effect"].iloc[0]), int(res["n_clusters"].iloc[0])
    (0.75, 4)
    """
    where = "head_mean"
    v.choice(transform, TRANSFORMS, name="transform", where=where)
    ci = v.level(ci, name="ci", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    seed = v.seed_value(seed, where=where)
    x = v.vector(values, name="values", where=where)
    n_all = x.size
    cl = v.labels(clusters, n=n_all, name="clusters", where=where)
    st = (np.zeros(n_all, dtype=np.intp) if strata is None
          else v.labels(strata, n=n_all, name="strata", where=where))
    keep = ~np.isnan(x)
    x, cl, st = x[keep], cl[keep], st[keep]
    v.min_n(x.size, 2, where=where, what="non-NaN values")
    if transform == "log":
        if (x <= 0).any():
            raise StatsInputError(f"{where}: values hold {int((x <= 0).sum())} non-positive numbers; "
                                  f"transform='log' (a geometric mean) needs positive values.")
        x = np.log(x)
    _, cl = np.unique(cl, return_inverse=True)
    k = int(cl.max()) + 1
    sums = np.bincount(cl, weights=x, minlength=k)
    counts = np.bincount(cl, minlength=k).astype(np.float64)
    stratum_of = np.full(k, -1, dtype=np.intp)
    stratum_of[cl] = st
    if (np.bincount(cl, weights=(st != stratum_of[cl]).astype(float), minlength=k) > 0).any():
        raise StatsInputError(f"{where}: a cluster spans two strata; label clusters uniquely "
                              f"within strata (e.g. (model, layer)).")
    v.min_n(k, 2, where=where, what="clusters")
    back = np.exp if transform == "log" else (lambda t: t)
    estimate = float(sums.sum() / counts.sum())
    boot = np.concatenate([sums[b].sum(axis=1) / counts[b].sum(axis=1)
                           for b in _stratified_cluster_draws(stratum_of, n_boot, seed)])
    lo, hi = v.percentile_ci(boot, ci)
    nan = float("nan")
    test = {C.STATISTIC: nan, C.P_VALUE: nan, P_GREATER: nan, P_LESS: nan, P_MIN: nan,
            C.N_PERM: 0, C.EXACT: False}
    nv = nan if null_value is None else float(null_value)
    if null_value is not None:
        if not np.isfinite(nv) or (transform == "log" and nv <= 0):
            raise StatsInputError(f"{where}: null_value must be finite (and positive under log), "
                                  f"got {null_value!r}.")
        t0 = np.log(nv) if transform == "log" else nv
        test = sign_flip_test(sums - counts * t0, n_perm=n_perm, seed=seed + 1, where=where)
        test[C.STATISTIC] = estimate - t0
    return v.frame(HEAD_MEAN_COLUMNS, {
        C.N: int(x.size), C.STATISTIC: test[C.STATISTIC], C.P_VALUE: test[C.P_VALUE],
        C.EFFECT: float(back(estimate)), C.CI_LOW: float(back(lo)), C.CI_HIGH: float(back(hi)),
        N_CLUSTERS: k, C.N_STRATA: int(np.unique(stratum_of).size), N_BOOT: n_boot, NULL_VALUE: nv,
        P_GREATER: test[P_GREATER], P_LESS: test[P_LESS], P_MIN: test[P_MIN],
        C.N_PERM: test[C.N_PERM], C.EXACT: test[C.EXACT],
    })


def share_above(
    values: ArrayLike,
    threshold: float,
    clusters: ArrayLike,
    *,
    strata: ArrayLike | None = None,
    null_value: float | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    n_perm: int = 9999,
) -> pd.DataFrame:
    """Share of units (heads) whose value exceeds ``threshold``, with a stratified
    cluster-bootstrap interval: :func:`head_mean` of the indicator ``value > threshold``.

    Parameters
    ----------
    values : array-like, shape ``[n]``
        NaN units are dropped (not counted as below the threshold).
    threshold : float
        Strict threshold (``>``): e.g. 0.5 on ``sink_argmax_fraction`` (METRICS.md §7.2)
        marks a head whose largest attention weight is on position 0 for most queries.
    clusters, strata, null_value, n_boot, ci, seed, n_perm
        As :func:`head_mean` (``null_value`` a share, e.g. 0.5 for "most heads").

    Returns
    -------
    pandas.DataFrame
        As :func:`head_mean`; ``effect`` is the share.

    Examples
    --------
    >>> res = share_above([0.9, 0.8, 0.2, 0.99, 0.7, 0.6], 0.5, clusters=[0, 0, 1, 1, 2, 2],
    ...                   null_value=0.5, n_boot=499)
    >>> round(float(res["effect"].iloc[0]), 3)
    0.833
    """
    where = "share_above"
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        t = float("nan")
    if not np.isfinite(t):
        raise StatsInputError(f"{where}: threshold must be a finite number, got {threshold!r}.")
    x = v.vector(values, name="values", where=where)
    indicator = np.where(np.isnan(x), np.nan, (x > t).astype(np.float64))
    if null_value is not None and not 0.0 <= float(null_value) <= 1.0:
        raise StatsInputError(f"{where}: null_value is a share in [0, 1], got {null_value!r}.")
    return head_mean(indicator, clusters, strata=strata, transform="identity",
                     null_value=null_value, n_boot=n_boot, ci=ci, seed=seed, n_perm=n_perm)
