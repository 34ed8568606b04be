"""Permutation and bootstrap resampling: index generators and the permutation p-value rule.

Heads are nested in layers, so resampling is nested by default:
permutations shuffle units *within* strata (layers) and bootstraps resample clusters
(layers) and then units within them. Everything is vectorized: a resampling plan is a
``[B, n]`` integer array built with a few numpy calls (argsort of random keys), generated in
chunks over ``B`` so that memory stays bounded; no Python loop runs over resamples.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v

__all__ = [
    "permutation_indices",
    "permutation_pvalue",
    "cluster_bootstrap_indices",
    "n_distinct_permutations",
    "strata_codes",
    "PermutationPlan",
    "BootstrapPlan",
]

#: Relative tolerance under which a resampled statistic counts as equal to the observed one
#: (floating-point noise between algebraically equal statistics).
TIE_RTOL = 1e-9


def strata_codes(strata: ArrayLike | None, n: int, *, name: str, where: str) -> np.ndarray:
    """Integer stratum codes of ``strata`` (all 0 when None: one stratum)."""
    if strata is None:
        return np.zeros(n, dtype=np.intp)
    return v.labels(strata, n=n, name=name, where=where)


def n_distinct_permutations(strata_codes: np.ndarray, *, limit: int | None = None) -> int:
    """Number of distinct within-strata permutations, ``prod_s n_s!``.

    Stops counting (returns a number above ``limit``) as soon as ``limit`` is exceeded.

    Examples
    --------
    >>> n_distinct_permutations(np.array([0, 0, 1, 1, 1]))
    12
    """
    total = 1
    for size in np.bincount(np.asarray(strata_codes)):
        total *= math.factorial(int(size))
        if limit is not None and total > limit:
            return total
    return total


class PermutationPlan:
    """Chunked within-strata permutations of ``range(n)`` (used by every permutation test here).

    ``exact`` plans hold every distinct within-strata permutation except the identity;
    Monte Carlo plans draw ``n_perm`` permutations from ``default_rng(seed)``.
    """

    def __init__(self, codes: np.ndarray, n_perm: int, seed: int) -> None:
        self.codes = codes
        self.n = codes.shape[0]
        self.n_strata = int(codes.max()) + 1 if self.n else 0
        total = n_distinct_permutations(codes, limit=n_perm + 1)
        self.exact = total - 1 <= n_perm
        self.size = total - 1 if self.exact else n_perm
        self.seed = seed
        #: units listed stratum by stratum; value_chunks() reports positions in this order
        self.order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes) if self.n else np.zeros(1, dtype=np.intp)
        self.equal = bool((sizes == sizes[0]).all())

    def _enumerate(self) -> np.ndarray:
        n, codes = self.n, self.codes
        members = [np.flatnonzero(codes == s) for s in range(self.n_strata)]
        per = [np.array(list(itertools.permutations(m)), dtype=np.intp).reshape(-1, m.size)
               for m in members]
        grids = np.indices([p.shape[0] for p in per]).reshape(len(per), -1)
        out = np.empty((grids.shape[1], n), dtype=np.intp)
        for s, (m, p) in enumerate(zip(members, per)):  # loop over strata, not permutations
            out[:, m] = p[grids[s]]
        return out[1:]  # row 0 is the identity (first permutation of every stratum)

    def _shuffled_tables(self, items: np.ndarray, rng: np.random.Generator) -> Iterator[np.ndarray]:
        table = items.reshape(self.n_strata, -1)
        for start, stop in v.chunks(self.size, self.n):
            c = stop - start
            yield rng.permuted(np.broadcast_to(table, (c, *table.shape)), axis=2).reshape(c, self.n)

    def value_chunks(self, values: np.ndarray) -> Iterator[np.ndarray]:
        """``values[perm][:, order]`` for each chunk of :meth:`chunks` (the same permutations,
        positions listed in ``self.order``), without building the index arrays when strata
        are equal: the fast path of linear statistics."""
        if self.size == 0:
            return
        if self.equal and not self.exact:
            yield from self._shuffled_tables(values[self.order], np.random.default_rng(self.seed))
            return
        for perm in self.chunks():
            yield values[perm][:, self.order]

    def chunks(self) -> Iterator[np.ndarray]:
        if self.size == 0:
            return
        if self.exact:
            yield self._enumerate()
            return
        rng = np.random.default_rng(self.seed)
        order = self.order
        if self.equal:
            # equal strata (free permutation, or heads per layer): shuffle each stratum's
            # row of the [n_strata, size] member table, O(n) per permutation
            for shuffled in self._shuffled_tables(order, rng):
                perm = np.empty(shuffled.shape, dtype=np.intp)
                perm[:, order] = shuffled
                yield perm
            return
        offset = (2.0 * self.codes[order])[None, :]
        for start, stop in v.chunks(self.size, self.n):
            keys = rng.random((stop - start, self.n))
            # keys of stratum s live in [2s, 2s + 1): sorting keeps strata in blocks and
            # shuffles the members inside each block.
            ranked = np.argsort(keys[:, order] + offset, axis=1)
            perm = np.empty_like(ranked)
            perm[:, order] = order[ranked]
            yield perm


def permutation_indices(
    n: int, *, strata: ArrayLike | None, n_perm: int, seed: int
) -> np.ndarray:
    """Indices of within-strata permutations of ``n`` units.

    Row ``b`` is a permutation ``pi`` of ``range(n)`` with ``strata[pi[i]] == strata[i]`` for
    every ``i``; applying it as ``y[pi]`` shuffles ``y`` within strata (layers).

    Parameters
    ----------
    n : int
        Number of units (heads).
    strata : array-like of length n, or None
        Stratum label of each unit (its layer). ``None`` permutes freely; it must be passed
        explicitly (head data must never default to free permutation).
    n_perm : int
        Number of Monte Carlo permutations ``B``.
    seed : int
        Seed of ``numpy.random.default_rng``. Ignored when the enumeration is exact.

    Returns
    -------
    numpy.ndarray of intp, shape ``[B, n]``
        When the number of distinct within-strata permutations ``prod_s n_s!`` minus one
        (the identity) is at most ``n_perm``, the enumeration is **exact**: the rows are all
        distinct permutations except the identity, in a fixed order, and ``B = prod_s n_s! - 1``.
        Then ``(1 + count) / (1 + B)`` (:func:`permutation_pvalue`) equals the exact
        full-enumeration p-value. Otherwise ``B = n_perm`` random permutations, vectorized,
        in chunks of bounded memory: with strata of equal size (or none) each stratum's row
        of a ``[B, n_strata, size]`` member table is shuffled by ``Generator.permuted``;
        with unequal strata, the argsort of uniform keys offset by stratum.

    Raises
    ------
    StatsInputError
        ``n`` or ``n_perm`` not a positive integer, bad seed, strata of the wrong length.

    Notes
    -----
    Monte Carlo permutations are drawn with replacement from the permutation group, which is
    what the ``(1 + count) / (1 + B)`` rule assumes (Phipson & Smyth 2010,
    doi:10.2202/1544-6115.1585).

    Examples
    --------
    >>> permutation_indices(3, strata=None, n_perm=100, seed=0).shape  # exact: 3! - 1 rows
    (5, 3)
    >>> p = permutation_indices(4, strata=[0, 0, 1, 1], n_perm=1, seed=0)
    >>> bool(set(p[0, :2]) == {0, 1} and set(p[0, 2:]) == {2, 3})
    True
    """
    where = "permutation_indices"
    n = v.positive_int(n, name="n", where=where)
    n_perm = v.positive_int(n_perm, name="n_perm", where=where)
    seed = v.seed_value(seed, where=where)
    plan = PermutationPlan(strata_codes(strata, n, name="strata", where=where), n_perm, seed)
    parts = list(plan.chunks())
    if not parts:
        return np.empty((0, n), dtype=np.intp)
    return np.concatenate(parts, axis=0)


def permutation_pvalue(
    t_obs: float,
    t_null: ArrayLike,
    *,
    alternative: str = "two-sided",
    center: float = 0.0,
) -> float:
    """Permutation p-value by the ``(1 + count) / (1 + B)`` rule.

    Parameters
    ----------
    t_obs : float
        Observed statistic.
    t_null : array-like, shape ``[B]``
        Statistic on each permutation (excluding the identity).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` counts ``T >= t_obs``; ``"less"`` counts ``T <= t_obs``;
        ``"two-sided"`` counts ``|T - center| >= |t_obs - center|``.
    center : float, default 0
        Permutation expectation of the statistic. Within-strata permutation with
        unbalanced strata shifts the null away from 0; the two-sided test then measures
        distances from this centre (the one-sided tests are unaffected).

    Returns
    -------
    float
        ``(1 + count) / (1 + B)``, in ``(0, 1]``. With an exact enumeration (all
        non-identity permutations) this is the exact p-value. Values within a relative
        ``1e-9`` of the observed one count as ties (floating-point noise).

    Raises
    ------
    StatsInputError
        Unknown alternative, or a non-finite observed or null statistic.

    Examples
    --------
    >>> permutation_pvalue(2.0, [0.5, -3.0, 1.0, 2.0], alternative="two-sided")
    0.6
    >>> permutation_pvalue(2.0, [0.5, -3.0, 1.0, 2.0], alternative="greater")
    0.4
    """
    where = "permutation_pvalue"
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    t_null = np.asarray(t_null, dtype=np.float64).ravel()
    t_obs = float(t_obs)
    center = float(center)
    if not np.isfinite(t_obs) or not np.isfinite(center):
        raise StatsInputError(f"{where}: the observed statistic ({t_obs}) and centre must be finite.")
    if not np.isfinite(t_null).all():
        raise StatsInputError(
            f"{where}: {int((~np.isfinite(t_null)).sum())} of {t_null.size} null statistics are "
            f"not finite; the statistic is undefined on some permutations."
        )
    if alternative == "two-sided":
        obs, null = abs(t_obs - center), np.abs(t_null - center)
        scale = max(obs, float(null.max(initial=0.0)))
        count = np.count_nonzero(null >= obs - TIE_RTOL * scale)
    else:
        scale = max(abs(t_obs), float(np.abs(t_null).max(initial=0.0)))
        if alternative == "greater":
            count = np.count_nonzero(t_null >= t_obs - TIE_RTOL * scale)
        else:
            count = np.count_nonzero(t_null <= t_obs + TIE_RTOL * scale)
    return float((1.0 + count) / (1.0 + t_null.size))


class BootstrapPlan:
    """Chunked two-stage (cluster, then unit) bootstrap indices (used by every bootstrap here)."""

    def __init__(self, codes: np.ndarray | None, n: int, n_boot: int, seed: int,
                 resample_clusters: bool) -> None:
        self.codes, self.n, self.size, self.seed = codes, n, n_boot, seed
        self.resample_clusters = resample_clusters

    def chunks(self) -> Iterator[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        n = self.n
        if self.codes is None:
            for start, stop in v.chunks(self.size, n):
                yield rng.integers(0, n, size=(stop - start, n))
            return
        codes = self.codes
        n_clusters = int(codes.max()) + 1
        sizes = np.bincount(codes, minlength=n_clusters)
        order = np.argsort(codes, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        for start, stop in v.chunks(self.size, n):
            c = stop - start
            if self.resample_clusters:
                src = rng.integers(0, n_clusters, size=(c, n_clusters))[:, codes]
            else:
                src = np.broadcast_to(codes, (c, n))
            within = np.floor(rng.random((c, n)) * sizes[src]).astype(np.intp)
            yield order[starts[src] + within]


def cluster_bootstrap_indices(
    n: int,
    *,
    clusters: ArrayLike | None,
    n_boot: int,
    seed: int,
    resample_clusters: bool = True,
) -> np.ndarray:
    """Indices of a two-stage cluster bootstrap: clusters (layers), then units within them.

    Parameters
    ----------
    n : int
        Number of units (heads).
    clusters : array-like of length n, or None
        Cluster label of each unit. ``None``: the ordinary bootstrap (units resampled with
        replacement).
    n_boot : int
        Number of bootstrap samples ``B``.
    seed : int
        Seed of ``numpy.random.default_rng``.
    resample_clusters : bool, default True
        ``True``: two-stage bootstrap (Davison & Hinkley 1997, §3.8, strategy 2: clusters
        with replacement, then units with replacement within each chosen cluster).
        ``False``: stage two only, units resampled within their own cluster (METRICS.md §6.2,
        where every layer must stay present).

    Returns
    -------
    numpy.ndarray of intp, shape ``[B, n]``
        Column ``i`` of a row belongs to the *slot* of unit ``i``'s cluster: each cluster
        slot ``k`` (of size ``n_k``) is filled by ``n_k`` draws with replacement from the
        cluster chosen for it. With equal cluster sizes (heads per layer) this is exactly the
        two-stage bootstrap; with unequal sizes it keeps ``n`` fixed and each slot's size.
        Callers that need the resampled strata use the slot labels (``clusters`` itself).

    Examples
    --------
    >>> idx = cluster_bootstrap_indices(6, clusters=[0, 0, 1, 1, 2, 2], n_boot=4, seed=0)
    >>> idx.shape
    (4, 6)
    >>> layer = np.array([0, 0, 1, 1, 2, 2])
    >>> bool((layer[idx[:, 0]] == layer[idx[:, 1]]).all())  # a slot holds one cluster's units
    True
    """
    where = "cluster_bootstrap_indices"
    n = v.positive_int(n, name="n", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    seed = v.seed_value(seed, where=where)
    codes = None if clusters is None else strata_codes(clusters, n, name="clusters", where=where)
    plan = BootstrapPlan(codes, n, n_boot, seed, bool(resample_clusters))
    return np.concatenate(list(plan.chunks()), axis=0)
