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
from lie_stats.stats import columns as C

__all__ = ["tost_relative", "tost_paired", "tost_correlation", "fisher_z_se", "TOST_PAIRED_COLUMNS"]

#: Columns of :func:`tost_paired`: those of :func:`tost_relative` (n, statistic, p, effect,
#: interval, bound, df, and the two one-sided t and p).
TOST_PAIRED_COLUMNS = C.TOST_RELATIVE_COLUMNS


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

    When every difference is identical (se 0) each t is infinite and each one-sided p its
    limit, 0 or 1.
    """
    n, df = d.size, d.size - 1
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / np.sqrt(n)
    tcrit = float(sps.t.ppf(1.0 - alpha, df))
    if se > 0:
        t_lo, t_hi = (mean + bound) / se, (mean - bound) / se
        p_lo, p_hi = float(sps.t.sf(t_lo, df)), float(sps.t.cdf(t_hi, df))
    else:
        t_lo = np.inf if mean + bound > 0 else -np.inf
        t_hi = -np.inf if mean - bound < 0 else np.inf
        p_lo, p_hi = (0.0 if mean + bound > 0 else 1.0), (0.0 if mean - bound < 0 else 1.0)
    stat = t_lo if p_lo >= p_hi else t_hi
    return _Tost(n, df, mean, se, tcrit, t_lo, t_hi, p_lo, p_hi, stat)


def tost_relative(
    base: ArrayLike, tuned: ArrayLike, *, bound: float = 1e-3, alpha: float = 0.05
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

    Returns
    -------
    pandas.DataFrame, one row, columns ``TOST_RELATIVE_COLUMNS``:

    - ``n``: pairs used;
    - ``statistic``: the t of the one-sided test with the larger p;
    - ``p_value``: ``max(p_lower, p_upper)``; equivalence is declared when ``p < alpha``;
    - ``effect``: geometric-mean relative change ``exp(mean(d)) - 1``, ``d = log(tuned / base)``;
    - ``ci_low``, ``ci_high``: the ``1 - 2 alpha`` interval of that relative change,
      ``exp(mean(d) -+ t_{1-alpha, n-1} se) - 1``; ``p < alpha`` exactly when it lies in
      ``(1 / (1 + bound) - 1, bound)``;
    - ``bound``; ``df`` = n - 1; ``t_lower``, ``t_upper``, ``p_lower``, ``p_upper``: the
      tests of ``mean(d) > -log(1 + bound)`` and ``mean(d) < log(1 + bound)``.

    When every difference is identical (standard deviation 0, e.g. bit-identical weights)
    the t statistics are infinite: ``p`` is the limit, 0 when ``|mean(d)| < log(1 + bound)``
    and 1 otherwise; the interval collapses to the point.

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
    try:
        bound = float(bound)
    except (TypeError, ValueError):
        bound = float("nan")
    if not bound > 0 or not np.isfinite(bound):
        raise StatsInputError(f"{where}: bound must be a positive relative change, got {bound!r}.")
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
    d = np.log(t) - np.log(b)
    r = _paired_tost(d, float(np.log1p(bound)), alpha)
    return v.frame(C.TOST_RELATIVE_COLUMNS, {
        C.N: r.n, C.STATISTIC: r.stat, C.P_VALUE: max(r.p_lo, r.p_hi), C.EFFECT: np.expm1(r.mean),
        C.CI_LOW: np.expm1(r.mean - r.tcrit * r.se), C.CI_HIGH: np.expm1(r.mean + r.tcrit * r.se),
        C.BOUND: bound, C.DF: r.df, C.T_LOWER: r.t_lo, C.T_UPPER: r.t_hi, C.P_LOWER: r.p_lo,
        C.P_UPPER: r.p_hi,
    })


def tost_paired(a: ArrayLike, b: ArrayLike, *, bound: float, alpha: float = 0.05) -> pd.DataFrame:
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

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`TOST_PAIRED_COLUMNS`:

    - ``n``: pairs used; ``df`` = n - 1;
    - ``statistic``: the t of the one-sided test with the larger p;
    - ``p_value``: ``max(p_lower, p_upper)``; equivalence is declared when ``p < alpha``;
    - ``effect``: the mean difference ``mean(b - a)``;
    - ``ci_low``, ``ci_high``: its ``1 - 2 alpha`` t interval; ``p < alpha`` exactly when the
      interval lies inside ``(-bound, bound)``;
    - ``bound``; ``t_lower``, ``t_upper``, ``p_lower``, ``p_upper``: the tests of
      ``mean(d) > -bound`` and ``mean(d) < bound``.

    When every difference is identical (standard deviation 0) the t statistics are
    infinite: each one-sided p is its limit (0 or 1) and the interval collapses to the point.

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
    try:
        bound = float(bound)
    except (TypeError, ValueError):
        bound = float("nan")
    if not (bound > 0 and np.isfinite(bound)):
        raise StatsInputError(f"{where}: bound must be a positive finite number, got {bound!r}.")
    x = v.vector(a, name="a", where=where)
    y = v.vector(b, name="b", where=where)
    v.same_length(("a", x), ("b", y), where=where)
    keep = ~(np.isnan(x) | np.isnan(y))
    d = y[keep] - x[keep]
    v.min_n(d.size, 2, where=where, what="complete pairs")
    r = _paired_tost(d, bound, alpha)
    return v.frame(TOST_PAIRED_COLUMNS, {
        C.N: r.n, C.STATISTIC: r.stat, C.P_VALUE: max(r.p_lo, r.p_hi), C.EFFECT: r.mean,
        C.CI_LOW: r.mean - r.tcrit * r.se, C.CI_HIGH: r.mean + r.tcrit * r.se, C.BOUND: bound,
        C.DF: r.df, C.T_LOWER: r.t_lo, C.T_UPPER: r.t_hi, C.P_LOWER: r.p_lo, C.P_UPPER: r.p_hi,
    })


def tost_correlation(
    r: float, n: int, *, bound: float, alpha: float = 0.05, method: str = "pearson"
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
    se = fisher_z_se(n, method)
    z, zb = float(np.arctanh(r)), float(np.arctanh(bound))
    z_lo, z_hi = (z + zb) / se, (z - zb) / se
    p_lo, p_hi = float(sps.norm.sf(z_lo)), float(sps.norm.cdf(z_hi))
    zc = float(sps.norm.ppf(1.0 - alpha))
    return v.frame(C.TOST_CORRELATION_COLUMNS, {
        C.N: int(n), C.STATISTIC: z_lo if p_lo >= p_hi else z_hi, C.P_VALUE: max(p_lo, p_hi),
        C.EFFECT: r, C.CI_LOW: np.tanh(z - zc * se), C.CI_HIGH: np.tanh(z + zc * se),
        C.BOUND: bound, C.T_LOWER: z_lo, C.T_UPPER: z_hi, C.P_LOWER: p_lo, C.P_UPPER: p_hi,
    })
