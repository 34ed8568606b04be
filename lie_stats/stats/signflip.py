"""Tests with few independent units: the cluster sign-flip test and the layer-permutation
test of a depth slope, each with its two one-sided p-values and the smallest p it can reach.

The sign-flip test takes one centred term per independent unit (a cluster's sum of
deviations from a null value, a run's trend statistic) and compares their sum with the sums
after flipping the signs of any subset of units. It is exact when every term is symmetric
about 0 under the null, and holds its level approximately when the terms are only nearly
symmetric, with as few as 5-12 units: Canay, Romano & Shaikh (2017), "Randomization tests
under an approximate symmetry assumption", *Econometrica* 85(3), 1013-1030 (the "group
sign-change" test of their §4; Ibragimov & Müller 2010, *JBES* 28(4), motivate the same
unit-level construction). Units may differ in size and in variance; only independence
across units and symmetry of each term are used.

With ``K`` units the test has ``2^K`` sign patterns, so its smallest one-sided p is
``2^-K``: 5 units cannot reach 0.025. Both tests report that floor (``p_min``) so that a
decision rule can say "this design cannot decide" instead of "no evidence".
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import P_GREATER, P_LESS, P_MIN
from lie_stats.stats.permutation import permutation_pvalue

__all__ = ["sign_flip_test", "slope_permutation_test", "one_sided_pair"]


def one_sided_pair(t_obs: float, t_null: np.ndarray) -> tuple[float, float, float]:
    """``(p_greater, p_less, p_two_sided)`` of ``t_obs`` against null draws ``t_null``
    (identity excluded), by the ``(1 + count) / (1 + B)`` rule; the two-sided p is twice the
    smaller one-sided p, capped at 1.

    >>> one_sided_pair(2.0, np.array([0.5, -3.0, 1.0, 2.0]))
    (0.4, 1.0, 0.8)
    """
    pg = permutation_pvalue(t_obs, t_null, alternative="greater")
    pl = permutation_pvalue(t_obs, t_null, alternative="less")
    return pg, pl, min(1.0, 2.0 * min(pg, pl))


def sign_flip_test(terms: ArrayLike, *, n_perm: int = 9999, seed: int = 0,
                   where: str = "sign_flip_test") -> dict[str, float]:
    """Sign-flip test that the sum of independent, centred unit terms is 0.

    Parameters
    ----------
    terms : array-like, shape ``[K]``
        One finite term per independent unit, centred at its null value (e.g. a cluster's
        ``sum(x - null_value)``); symmetric about 0 under the null.
    n_perm : int, default 9999
        Random sign patterns; all ``2^K - 1`` non-identity patterns are enumerated when that
        is at most ``n_perm`` (exact test).
    seed : int, default 0
    where : str
        Caller named in error messages.

    Returns
    -------
    dict with ``statistic`` (the sum), ``p_greater``, ``p_less``, ``p_value`` (twice the
    smaller one-sided p, capped at 1), ``n_perm`` (patterns drawn or enumerated), ``exact``
    and ``p_min`` (smallest attainable one-sided p: ``2^-K`` exact, ``1 / (n_perm + 1)``
    otherwise).

    Raises
    ------
    StatsInputError
        No term, or a non-finite term.

    Examples
    --------
    Five positive units: the observed sum is the largest of the 32 patterns.

    >>> r = sign_flip_test([1.0, 2.0, 0.5, 1.5, 3.0])
    >>> r["p_greater"], r["p_min"], r["exact"]
    (0.03125, 0.03125, True)
    """
    d = v.vector(terms, name="terms", where=where)
    if not np.isfinite(d).all():
        raise StatsInputError(f"{where}: the unit terms must be finite, got {d.tolist()}.")
    k = d.size
    v.min_n(k, 1, where=where, what="independent units (clusters or runs)")
    exact = k <= 62 and (1 << k) - 1 <= n_perm
    rng = np.random.default_rng(seed)
    size = (1 << k) - 1 if exact else int(n_perm)
    out = []
    for a, b in v.chunks(size, k):
        if exact:
            pattern = (np.arange(a + 1, b + 1)[:, None] >> np.arange(k)) & 1  # skip 0 = identity
        else:
            pattern = rng.integers(0, 2, size=(b - a, k))
        out.append((1.0 - 2.0 * pattern) @ d)
    t_null = np.concatenate(out)
    t_obs = float(d.sum())
    pg, pl, p = one_sided_pair(t_obs, t_null)
    return {C.STATISTIC: t_obs, P_GREATER: pg, P_LESS: pl, C.P_VALUE: p, C.N_PERM: size,
            C.EXACT: bool(exact), P_MIN: 2.0 ** -k if exact else 1.0 / (size + 1)}


def slope_permutation_test(layer_means: ArrayLike, *, n_perm: int = 9999, seed: int = 0,
                           where: str = "slope_permutation_test") -> dict[str, float]:
    """Permutation test of a depth gradient: the OLS slope of layer summaries on normalized
    depth ``l / (L - 1)`` against the slopes after permuting the layers over the depths.

    Under the null of no depth structure the layers are exchangeable (layer effects of any
    size are allowed: they move with their layer), so the test is exact for exchangeable
    layer summaries whatever their common distribution.

    Parameters
    ----------
    layer_means : array-like, shape ``[..., L]``
        Layer summaries in depth order on the last axis (finite); leading axes are tested
        separately with the same permutations.
    n_perm : int, default 9999
        Random permutations; all ``L! - 1`` are enumerated when that is at most ``n_perm``.
    seed : int, default 0
    where : str

    Returns
    -------
    dict of arrays (shape ``layer_means.shape[:-1]``): ``statistic`` (the slope),
    ``p_greater``, ``p_less``, ``p_value``; and scalars ``n_perm``, ``exact``, ``p_min``
    (``1 / L!`` exact, else ``1 / (n_perm + 1)``).

    Examples
    --------
    >>> r = slope_permutation_test([0.0, 1.0, 2.0, 3.0, 4.0])
    >>> float(r["statistic"]), float(r["p_greater"]), r["exact"]
    (4.0, 0.008333333333333333, True)
    """
    y = np.asarray(layer_means, dtype=np.float64)
    if y.ndim < 1 or y.shape[-1] < 3 or not np.isfinite(y).all():
        raise StatsInputError(f"{where}: needs finite summaries of at least 3 layers on the last axis, "
                              f"got shape {y.shape}.")
    n_layers = y.shape[-1]
    depth = np.arange(n_layers) / (n_layers - 1)
    dc = depth - depth.mean()
    w = dc / (dc * dc).sum()  # slope = y @ w
    exact = math.factorial(n_layers) - 1 <= n_perm
    if exact:
        perms = np.array(list(itertools.permutations(range(n_layers)))[1:])
    else:
        rng = np.random.default_rng(seed)
        perms = np.argsort(rng.random((int(n_perm), n_layers)), axis=1)
    t_obs = y @ w
    t_null = y @ w[np.argsort(perms, axis=1)].T  # [..., B]: layer l sent to depth perm^-1(l)
    flat_obs, flat_null = t_obs.reshape(-1), t_null.reshape(-1, perms.shape[0])
    ps = np.array([one_sided_pair(float(t), n) for t, n in zip(flat_obs, flat_null)]).reshape(
        (*t_obs.shape, 3))
    return {C.STATISTIC: t_obs, P_GREATER: ps[..., 0], P_LESS: ps[..., 1], C.P_VALUE: ps[..., 2],
            C.N_PERM: int(perms.shape[0]), C.EXACT: bool(exact),
            P_MIN: 1.0 / (perms.shape[0] + 1)}
