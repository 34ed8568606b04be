"""Equivalence tests (two one-sided tests, TOST) for "no change" and "no correlation" claims.

A claim of no difference is tested as equivalence within a stated bound, never as a
non-significant difference (DESIGN.md, replication).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import TOST_PAIRED_COLUMNS

__all__ = ["tost_relative", "tost_paired", "tost_correlation", "fisher_z_se", "rank_z_factor",
           "cluster_means"]


def fisher_z_se(n: int, method: str) -> float:
    """Standard error of Fisher's ``z = atanh(r)`` for a correlation on ``n`` pairs.

    Pearson ``sqrt(1 / (n - 3))``; Spearman ``sqrt(1.06 / (n - 3))``; Kendall
    ``sqrt(0.437 / (n - 4))`` (Fieller, Hartley & Pearson 1957, doi:10.2307/2332794).

    Examples
    --------
    >>> round(fisher_z_se(99, "spearman"), 4)
    0.1051
    """
    where = "fisher_z_se"
    v.choice(method, v.CORRELATION_METHODS, name="method", where=where)
    minimum = 5 if method == "kendall" else 4
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise StatsInputError(f"{where}: n must be an integer >= {minimum} for {method}, got {n!r}.")
    if method == "pearson":
        return float(np.sqrt(1.0 / (n - 3)))
    if method == "spearman":
        return float(np.sqrt(1.06 / (n - 3)))
    return float(np.sqrt(0.437 / (n - 4)))


def rank_z_factor(r: float, method: str) -> float:
    """How much wider the standard error of Fisher's z is at correlation ``r`` than at 0.

    Spearman: :math:`\\sqrt{1 + r^2/2}` (Bonett & Wright 2000, doi:10.1007/BF02294183,
    :math:`var(z_s) \\approx (1 + r_s^2/2)/(n - 3)`); Pearson and Kendall: 1 (Fisher's z of
    r, and Fieller et al.'s ``0.437 / (n - 4)`` for tau, do not depend on the correlation).
    Scales a standard error measured at rho = 0 (a permutation null's) to ``r``.

    Examples
    --------
    >>> round(rank_z_factor(0.3, "spearman"), 4), rank_z_factor(0.3, "pearson")
    (1.0223, 1.0)
    """
    return float(np.sqrt(1.0 + r * r / 2.0)) if method == "spearman" else 1.0


def cluster_means(d: np.ndarray, clusters: ArrayLike | None, where: str) -> np.ndarray:
    """Mean of ``d`` within each cluster (``d`` itself when ``clusters`` is None).

    Examples
    --------
    >>> cluster_means(np.array([1.0, 3.0, 10.0]), [0, 0, 1], "x").tolist()
    [2.0, 10.0]
    """
    if clusters is None:
        return d
    codes = np.asarray(clusters).reshape(-1)
    if codes.size != d.size:
        raise StatsInputError(f"{where}: clusters has {codes.size} entries for {d.size} pairs.")
    codes = np.unique(codes, return_inverse=True)[1].reshape(-1)
    return np.bincount(codes, weights=d) / np.bincount(codes)


class _Tost(NamedTuple):
    n: int
    df: int
    mean: float
    se: float
    tcrit: float
    t_lo: float
    t_hi: float
    p_lo: float
    p_hi: float
    stat: float


def _paired_tost(d: np.ndarray, bound: float, alpha: float) -> _Tost:
    """The two one-sided t tests of ``mean(d) > -bound`` and ``mean(d) < bound`` on the
    differences ``d`` (Schuirmann 1987), with the ``1 - 2 alpha`` interval's t quantile.

    When every difference is identical (se 0) the t statistics and p-values are NaN: the t
    test is undefined, as in R, where ``t.test`` (which ``TOSTER::t_TOST`` and
    ``equivalence::tost`` call) stops with "data are essentially constant".
    """
    n, df = d.size, d.size - 1
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / np.sqrt(n)
    tcrit = float(sps.t.ppf(1.0 - alpha, df))
    # a standard error at rounding level of the mean is zero too (R's t.test:
    # stderr < 10 * .Machine$double.eps * abs(mx))
    if se > 0 and not se < 10 * np.finfo(float).eps * abs(mean):
        t_lo, t_hi = (mean + bound) / se, (mean - bound) / se
        p_lo, p_hi = float(sps.t.sf(t_lo, df)), float(sps.t.cdf(t_hi, df))
    else:
        se = 0.0
        t_lo = t_hi = p_lo = p_hi = float("nan")
    stat = t_lo if p_lo >= p_hi else t_hi
    return _Tost(n, df, mean, se, tcrit, t_lo, t_hi, p_lo, p_hi, stat)


def _by_cluster(d: np.ndarray, clusters: ArrayLike | None, keep: np.ndarray,
                where: str) -> np.ndarray:
    """The differences of the kept pairs, averaged within clusters when clusters are given."""
    if clusters is None:
        return d
    codes = np.asarray(clusters).reshape(-1)
    if codes.size != keep.size:
        raise StatsInputError(f"{where}: clusters has {codes.size} entries for {keep.size} pairs.")
    d = cluster_means(d, codes[keep], where)
    v.min_n(d.size, 2, where=where, what="clusters with a complete pair")
    return d


def tost_relative(
    base: ArrayLike, tuned: ArrayLike, *, bound: float = 1e-3, alpha: float = 0.05,
    clusters: ArrayLike | None = None,
) -> pd.DataFrame:
    """Paired TOST that a positive metric changed by less than a relative ``bound``.

    Parameters
    ----------
    base, tuned : array-like, shape ``[n]``
        Paired positive values (the same heads before and after); NaN pairs are dropped.
    bound : float, default 1e-3
        Relative equivalence bound (``1e-3`` is ``|change| < 0.1 %``), tested on the log
        scale as ``|log(tuned) - log(base)| < log(1 + bound)``.
    alpha : float, default 0.05
        Level of each one-sided test.
    clusters : array-like of length n, optional
        Cluster of each pair (the layer of a head). Pairs of one cluster share its effects,
        so they are not independent units: the test then runs on the cluster means of the
        log ratios (one unit per cluster, ``df`` = clusters - 1; Donner & Klar 2000,
        *Design and Analysis of Cluster Randomization Trials*, §6.2, the cluster-level
        analysis), which holds its level whatever the intra-cluster correlation.

    Returns
    -------
    pandas.DataFrame, one row, columns ``TOST_RELATIVE_COLUMNS``:

    - ``n``: units analysed (pairs, or clusters when ``clusters`` is given);
    - ``statistic``: the t of the one-sided test with the larger p;
    - ``p_value``: ``max(p_lower, p_upper)``; equivalence is declared when ``p < alpha``;
    - ``effect``: geometric-mean relative change ``exp(mean(d)) - 1``, ``d = log(tuned / base)``;
    - ``ci_low``, ``ci_high``: the ``1 - 2 alpha`` interval of that relative change,
      ``exp(mean(d) -+ t_{1-alpha, n-1} se) - 1``; ``p < alpha`` exactly when it lies in
      ``(1 / (1 + bound) - 1, bound)``;
    - ``bound``; ``df`` = n - 1; ``t_lower``, ``t_upper``, ``p_lower``, ``p_upper``: the
      tests of ``mean(d) > -log(1 + bound)`` and ``mean(d) < log(1 + bound)``.

    When every difference is identical (standard deviation 0, e.g. bit-identical weights)
    the t test is undefined: the t statistics and p-values are NaN (R's ``t.test``, called
    by ``TOSTER::t_TOST`` and ``equivalence::tost``, stops: "data are essentially
    constant"), and the interval collapses to the point.

    Raises
    ------
    StatsInputError
        Lengths differ, a value is not positive, fewer than 2 complete pairs, bad bound or
        alpha.

    Notes
    -----
    Schuirmann (1987), doi:10.1007/BF01068419. The bound is symmetric on the log scale
    (a ratio within ``[1/(1+bound), 1+bound]``).

    Examples
    --------
    >>> base = np.array([1.0, 2.0, 3.0, 4.0])
    >>> res = tost_relative(base, base * np.array([1.0001, 0.9999, 1.0002, 1.0]), bound=1e-3)
    >>> bool(res["p_value"].iloc[0] < 0.05)
    True
    """
    where = "tost_relative"
    alpha = v.level(alpha, name="alpha", where=where)
    bound = v.positive_finite(bound, name="bound", where=where, what="a positive relative change")
    b = v.vector(base, name="base", where=where)
    t = v.vector(tuned, name="tuned", where=where)
    v.same_length(("base", b), ("tuned", t), where=where)
    keep = ~(np.isnan(b) | np.isnan(t))
    b, t = b[keep], t[keep]
    v.min_n(b.size, 2, where=where, what="complete pairs")
    for name, a in (("base", b), ("tuned", t)):
        if (a <= 0).any():
            raise StatsInputError(
                f"{where}: {name} holds {int((a <= 0).sum())} non-positive values; relative "
                f"change is tested on log values, which needs positive numbers.")
    d = _by_cluster(np.log(t) - np.log(b), clusters, keep, where)
    r = _paired_tost(d, float(np.log1p(bound)), alpha)
    return v.frame(C.TOST_RELATIVE_COLUMNS, {
        C.N: r.n, C.STATISTIC: r.stat, C.P_VALUE: max(r.p_lo, r.p_hi), C.EFFECT: np.expm1(r.mean),
        C.CI_LOW: np.expm1(r.mean - r.tcrit * r.se), C.CI_HIGH: np.expm1(r.mean + r.tcrit * r.se),
        C.BOUND: bound, C.DF: r.df, C.T_LOWER: r.t_lo, C.T_UPPER: r.t_hi, C.P_LOWER: r.p_lo,
        C.P_UPPER: r.p_hi,
    })


def tost_paired(a: ArrayLike, b: ArrayLike, *, bound: float, alpha: float = 0.05,
                clusters: ArrayLike | None = None) -> pd.DataFrame:
    """Paired TOST that the mean difference ``b - a`` lies within ``(-bound, bound)``.

    Parameters
    ----------
    a, b : array-like, shape ``[n]``
        Paired values (the same layers measured two ways, e.g. under two compressions);
        NaN pairs are dropped.
    bound : float
        Absolute equivalence bound, on the scale of the values (> 0).
    alpha : float, default 0.05
        Level of each one-sided test.
    clusters : array-like of length n, optional
        Cluster of each pair (the layer of a head); the test then runs on the cluster means
        of ``b - a``, as :func:`tost_relative` does.

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`TOST_PAIRED_COLUMNS`:

    - ``n``: units analysed (pairs, or clusters); ``df`` = n - 1;
    - ``statistic``: the t of the one-sided test with the larger p;
    - ``p_value``: ``max(p_lower, p_upper)``; equivalence is declared when ``p < alpha``;
    - ``effect``: the mean difference ``mean(b - a)``;
    - ``ci_low``, ``ci_high``: its ``1 - 2 alpha`` t interval; ``p < alpha`` exactly when the
      interval lies inside ``(-bound, bound)``;
    - ``bound``; ``t_lower``, ``t_upper``, ``p_lower``, ``p_upper``: the tests of
      ``mean(d) > -bound`` and ``mean(d) < bound``.

    When every difference is identical (standard deviation 0) the t test is undefined: the
    t statistics and p-values are NaN (as R's ``t.test``) and the interval collapses to the
    point.

    Raises
    ------
    StatsInputError
        Lengths differ, fewer than 2 complete pairs, bad bound or alpha.

    Notes
    -----
    Schuirmann (1987), doi:10.1007/BF01068419; the paired form of Lakens (2017),
    doi:10.1177/1948550617697177. With :math:`d = b - a`, :math:`se = s_d/\\sqrt{n}`:
    :math:`t_{lo} = (\\bar d + \\Delta)/se`, :math:`p_{lo} = 1 - F_{n-1}(t_{lo})`;
    :math:`t_{hi} = (\\bar d - \\Delta)/se`, :math:`p_{hi} = F_{n-1}(t_{hi})`.
    The pairs are treated as independent (layers of one model are not, quite: the layer is
    the unit, as in :func:`lie_stats.stats.tost_relative`).

    Examples
    --------
    >>> a = np.array([0.10, 0.20, 0.15, 0.30, 0.25])
    >>> res = tost_paired(a, a + np.array([0.004, -0.003, 0.001, 0.0, -0.002]), bound=0.025)
    >>> bool(res["p_value"].iloc[0] < 0.05), round(float(res["effect"].iloc[0]), 4)
    (True, 0.0)
    """
    where = "tost_paired"
    alpha = v.level(alpha, name="alpha", where=where)
    bound = v.positive_finite(bound, name="bound", where=where)
    x = v.vector(a, name="a", where=where)
    y = v.vector(b, name="b", where=where)
    v.same_length(("a", x), ("b", y), where=where)
    keep = ~(np.isnan(x) | np.isnan(y))
    v.min_n(int(keep.sum()), 2, where=where, what="complete pairs")
    d = _by_cluster(y[keep] - x[keep], clusters, keep, where)
    r = _paired_tost(d, bound, alpha)
    return v.frame(TOST_PAIRED_COLUMNS, {
        C.N: r.n, C.STATISTIC: r.stat, C.P_VALUE: max(r.p_lo, r.p_hi), C.EFFECT: r.mean,
        C.CI_LOW: r.mean - r.tcrit * r.se, C.CI_HIGH: r.mean + r.tcrit * r.se, C.BOUND: bound,
        C.DF: r.df, C.T_LOWER: r.t_lo, C.T_UPPER: r.t_hi, C.P_LOWER: r.p_lo, C.P_UPPER: r.p_hi,
    })


def tost_correlation(
    r: float, n: int, *, bound: float, alpha: float = 0.05, method: str = "pearson",
    se: float | None = None,
) -> pd.DataFrame:
    """TOST that a correlation lies within ``(-bound, bound)``, by Fisher's z.

    Parameters
    ----------
    r : float
        Observed correlation, ``|r| < 1``.
    n : int
        Number of pairs it was computed on.
    bound : float
        Equivalence bound on the correlation scale, in ``(0, 1)``.
    alpha : float, default 0.05
    method : {"pearson", "spearman", "kendall"}
        Chooses the standard error of ``atanh(r)`` (:func:`fisher_z_se`).
    se : float, optional
        The standard error of ``atanh(r)`` when the ``n`` pairs are not independent (heads
        nested in layers: :func:`lie_stats.stats.correlation.within_correlation`'s
        permutation standard error, times :func:`rank_z_factor` at the bound). NaN gives NaN
        p-values.

    Returns
    -------
    pandas.DataFrame, one row, columns ``TOST_CORRELATION_COLUMNS``:
    ``n``; ``statistic`` (the z of the one-sided test with the larger p); ``p_value``
    (``max(p_lower, p_upper)``); ``effect`` (``r``); ``ci_low``, ``ci_high`` (the
    ``1 - 2 alpha`` interval ``tanh(atanh(r) -+ z_{1-alpha} se)``); ``bound``;
    ``t_lower``, ``t_upper`` (z statistics against ``-bound`` and ``+bound``);
    ``p_lower``, ``p_upper``.

    Raises
    ------
    StatsInputError
        ``|r| >= 1`` or NaN, ``n`` too small for the method, bound outside ``(0, 1)``.

    Notes
    -----
    :math:`z_{lo} = (\\operatorname{atanh} r + \\operatorname{atanh} b)/se`,
    :math:`p_{lo} = 1 - \\Phi(z_{lo})`; :math:`z_{hi} = (\\operatorname{atanh} r -
    \\operatorname{atanh} b)/se`, :math:`p_{hi} = \\Phi(z_{hi})`. Lakens (2017),
    doi:10.1177/1948550617697177 (TOSTER's ``TOSTr``).

    Examples
    --------
    >>> res = tost_correlation(0.02, 500, bound=0.2)
    >>> bool(res["p_value"].iloc[0] < 0.05)
    True
    """
    where = "tost_correlation"
    alpha = v.level(alpha, name="alpha", where=where)
    bound = v.level(bound, name="bound", where=where)
    try:
        r = float(r)
    except (TypeError, ValueError):
        r = float("nan")
    if not -1.0 < r < 1.0:
        raise StatsInputError(f"{where}: r must lie in (-1, 1), got {r!r}.")
    if se is None:
        se = fisher_z_se(n, method)
    elif not (se > 0 or np.isnan(se)):
        raise StatsInputError(f"{where}: se must be positive, got {se!r}.")
    z, zb = float(np.arctanh(r)), float(np.arctanh(bound))
    z_lo, z_hi = (z + zb) / se, (z - zb) / se
    p_lo, p_hi = float(sps.norm.sf(z_lo)), float(sps.norm.cdf(z_hi))
    zc = float(sps.norm.ppf(1.0 - alpha))
    return v.frame(C.TOST_CORRELATION_COLUMNS, {
        C.N: int(n), C.STATISTIC: z_lo if p_lo >= p_hi else z_hi, C.P_VALUE: max(p_lo, p_hi),
        C.EFFECT: r, C.CI_LOW: np.tanh(z - zc * se), C.CI_HIGH: np.tanh(z + zc * se),
        C.BOUND: bound, C.T_LOWER: z_lo, C.T_UPPER: z_hi, C.P_LOWER: p_lo, C.P_UPPER: p_hi,
    })
