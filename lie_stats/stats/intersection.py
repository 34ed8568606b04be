"""Intersection-union equivalence: "the change is below the bound in every unit".

A claim such as "< 0.1 %, every metric, every layer" is an intersection over units (layer x
metric x family). It is supported only when every unit's own equivalence test rejects at
``alpha`` (the intersection-union test, Berger 1982, doi:10.1080/00401706.1982.10487759:
level ``alpha`` without any multiplicity adjustment, because every unit must pass). It is
refuted when at least one unit's change lies significantly beyond the bound, Bonferroni over
the units (a union claim, which needs the adjustment). A mean over units would let changes of
opposite signs cancel; this test never averages across units.

Each unit's change is the mean of its replicate runs' log changes. Its standard error comes
from a *noise floor*: the pooled variance, within one noise cell (one unit, or e.g. one
metric and family over layers when their noise is the same), of (i) the replicate runs' deviations from their unit's mean
(between-seed differences) and (ii) noise samples given by the caller (e.g. late-pretraining
drift over a comparable stretch of training: how much a unit moves when nothing but ordinary
training happens), each sample with the variance of one run's change.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import (IUT_COLUMNS, LARGEST_ABS_CHANGE, LARGEST_ABS_CI_HIGH,
                                     LARGEST_ABS_CI_LOW, LARGEST_UNIT, MEDIAN_ABS_CHANGE, NOISE_FLOOR,
                                     N_BEYOND, N_REPLICATES, N_WITHIN, P_BEYOND, RESOLVABLE, WORST_UNIT)

__all__ = ["iut_equivalence", "unit_equivalence"]


def _codes(labels: ArrayLike, name: str, n: int, where: str) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size != n:
        raise StatsInputError(f"{where}: {name} must be a 1-d array of length {n}, got shape "
                              f"{arr.shape}.")
    return arr


def _units(changes: ArrayLike, cells: ArrayLike, noise: ArrayLike | None,
           noise_cells: ArrayLike | None, bound: float, alpha: float) -> dict:
    """The columns of :func:`unit_equivalence` as arrays (and ``replicates``, R)."""
    where = "iut_equivalence"
    alpha = v.level(alpha, name="alpha", where=where)
    bound = v.positive_finite(bound, name="bound", where=where, what="a positive relative change")
    d = np.asarray(changes, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    if d.ndim != 2 or d.shape[0] < 1 or d.shape[1] < 1:
        raise StatsInputError(f"{where}: changes must be [units, replicates], got shape {d.shape}.")
    cell = _codes(cells, "cells", d.shape[0], where)
    keep = np.isfinite(d).all(axis=1)
    units = np.flatnonzero(keep)
    v.min_n(units.size, 1, where=where, what="units with every replicate finite")
    d, cell = d[keep], cell[keep]
    r = d.shape[1]
    if noise is None:
        z, zc = np.empty(0), np.empty(0, dtype=cell.dtype)
    else:
        z = np.asarray(noise, dtype=float).reshape(-1)
        zc = _codes(noise_cells, "noise_cells", z.size, where) if noise_cells is not None else None
        if zc is None:
            raise StatsInputError(f"{where}: noise needs noise_cells (the cell of each sample).")
        ok = np.isfinite(z)
        z, zc = z[ok], zc[ok]
    mean = d.mean(axis=1)
    dev2 = ((d - mean[:, None]) ** 2).sum(axis=1)
    groups, code = np.unique(cell, return_inverse=True)
    known = np.isin(zc, groups)
    zcode = np.searchsorted(groups, zc[known])
    dof = (np.bincount(code, minlength=groups.size) * (r - 1)
           + np.bincount(zcode, minlength=groups.size))
    if (dof < 1).any():
        c = groups[int(np.argmax(dof < 1))]
        raise StatsInputError(
            f"{where}: cell {c!r} has no degrees of freedom for its noise floor (one replicate "
            f"run and no noise samples); give a second run or noise samples.")
    ss = (np.bincount(code, weights=dev2, minlength=groups.size)
          + np.bincount(zcode, weights=z[known] ** 2, minlength=groups.size))
    sd = np.sqrt(ss / dof)[code]
    df = dof[code].astype(float)
    se = sd / np.sqrt(r)
    b = float(np.log1p(bound))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_lo, t_hi = (mean + b) / se, (mean - b) / se
        t_out = (np.abs(mean) - b) / se
    p_lo = np.where(se > 0, sps.t.sf(t_lo, df), np.where(mean + b > 0, 0.0, 1.0))
    p_hi = np.where(se > 0, sps.t.cdf(t_hi, df), np.where(mean - b < 0, 0.0, 1.0))
    p_out = np.where(se > 0, np.minimum(1.0, 2.0 * sps.t.sf(t_out, df)),
                     np.where(np.abs(mean) > b, 0.0, 1.0))
    return {"unit": units, "cell": cell, "mean": mean, "se": se, "df": df,
            "p_equivalence": np.maximum(p_lo, p_hi), "p_beyond": p_out, "t_lower": t_lo,
            "t_upper": t_hi, "noise_sd": sd, "replicates": r}


def unit_equivalence(
    changes: ArrayLike, cells: ArrayLike, noise: ArrayLike | None = None,
    noise_cells: ArrayLike | None = None, *, bound: float, alpha: float = 0.05,
) -> pd.DataFrame:
    """Each unit's equivalence test and beyond-the-bound test (the parts of the IUT).

    Parameters
    ----------
    changes : array-like, shape ``[K, R]`` (or ``[K]`` for one run)
        Log changes (``log(after / before)``) of K units in R replicate runs; rows with a NaN
        are dropped.
    cells : array-like, shape ``[K]``
        The noise cell of each unit: the units of one cell share one noise variance (give
        each unit a cell of its own when units may differ in noise, e.g. layers).
    noise, noise_cells : array-like, shape ``[M]``, optional
        Noise samples on the log scale (mean 0 under the noise model, each with the variance
        of one run's change) and their cells; NaN samples, and samples of a cell no unit
        has, are dropped.
    bound : float
        Relative equivalence bound (``1e-3`` is 0.1 %), tested as ``|mean log change| <
        log(1 + bound)``.
    alpha : float, default 0.05

    Returns
    -------
    pandas.DataFrame, one row per unit kept: ``unit`` (row index into ``changes``), ``cell``,
    ``mean`` (mean log change), ``se``, ``df``, ``p_equivalence`` (``max`` of the two
    one-sided t tests against ``-log(1 + bound)`` and ``+log(1 + bound)``), ``p_beyond``
    (``2 * P(T_df > (|mean| - log(1 + bound)) / se)``, capped at 1: the test that
    ``|true change| > bound``, both directions, unadjusted), ``noise_sd``.

    Raises
    ------
    StatsInputError
        Bad shapes, a non-finite or non-positive bound, or a cell with no degrees of
        freedom (one replicate and no noise samples).

    Notes
    -----
    Model: ``d[u, r] = mu[u] + e``, ``e ~ N(0, s_c^2)`` for unit u of cell c, and every noise
    sample of cell c ``~ N(0, s_c^2)``, all independent. The pooled variance
    ``s_c^2 = (sum_u sum_r (d[u, r] - mean_u)^2 + sum_m noise_m^2) / df_c`` with
    ``df_c = K_c (R - 1) + M_c`` is then ``s_c^2 chi2_df / df`` and independent of the unit
    means, so ``(mean_u - mu_u) / (s_c / sqrt(R))`` is t with ``df_c`` degrees of freedom.
    With one unit, R runs and no noise this is the one-sample TOST.
    """
    u = _units(changes, cells, noise, noise_cells, bound, alpha)
    u.pop("replicates")
    return pd.DataFrame(u)


def iut_equivalence(
    changes: ArrayLike, cells: ArrayLike, noise: ArrayLike | None = None,
    noise_cells: ArrayLike | None = None, *, bound: float, alpha: float = 0.05,
) -> pd.DataFrame:
    """Intersection-union test that every unit changed by less than a relative ``bound``.

    Parameters are those of :func:`unit_equivalence`.

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`IUT_COLUMNS`:

    - ``n``: units tested; ``n_replicates``: runs per unit; ``df``: the smallest noise df;
    - ``p_value``: the IUT p, ``max`` over units of each unit's TOST p; every unit is shown
      within ``±bound`` exactly when ``p < alpha``;
    - ``statistic``: the binding one-sided t of the unit with that p (``worst_unit``, its row
      index into ``changes``);
    - ``effect``: the relative change ``exp(mean) - 1`` of the unit with the largest
      ``|mean log change|`` (``largest_unit``, its row index); ``ci_low``, ``ci_high``: its
      t interval at ``1 - alpha / n`` (Bonferroni), as a relative change: the unit is picked
      for being the largest, so its own ``1 - 2 alpha`` interval misses its true change far
      more often than ``2 alpha`` (24 units at 0 with 3 df each: it covered 0 in 182 of 400
      draws); the simultaneous one covers it with probability at least ``1 - alpha``;
    - ``n_within``: units whose own TOST rejects; ``n_beyond``: units whose beyond-the-bound
      p is below ``alpha / n`` (Bonferroni); ``p_beyond``: ``min(1, n * min p_beyond)``;
      some unit lies beyond the bound (family-wise error at most alpha) when it is below
      alpha;
    - ``noise_floor``: the largest per-cell noise SD of one run's change, as a relative change;
      ``median_abs_change``: median over units of ``exp(|mean|) - 1``;
    - ``resolvable``: 1 when the bound is wider than ``t_{1-alpha, df} se`` in every unit (a
      unit with no change at all could be shown within the bound), else 0;
    - ``largest_abs_change``: ``exp(max_u |mean_u|) - 1``, the largest unit's |relative
      change| on the scale of the bound (``|mean| > log(1 + bound)`` exactly when it exceeds
      ``bound``); ``largest_abs_ci_low``, ``largest_abs_ci_high``: its interval simultaneous
      over the units: each unit's ``|mu_u|`` interval at ``1 - alpha / n`` (Bonferroni),
      ``[max(0, |mean| - t se), |mean| + t se]`` with ``t = t_{1 - alpha / (2n), df}`` (the
      lower end 0 when the unit's t interval covers 0), and the maximum's interval from the
      maxima of the two ends (it covers ``max_u |mu_u|`` whenever every unit's covers its
      own, so with probability at least ``1 - alpha``). Its lower end exceeds
      ``log(1 + bound)`` exactly when some unit's ``p_beyond`` is below ``alpha / n``: the
      interval lies above the bound exactly when ``n_beyond > 0``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(0.0, 1e-4, size=(24, 2))          # 24 units, 2 runs, 0.01 % noise
    >>> res = iut_equivalence(d, np.repeat([0, 1], 12), bound=1e-3)
    >>> bool(res["p_value"].iloc[0] < 0.05), int(res["n_within"].iloc[0])
    (True, 24)
    >>> d[3] += 0.05                                     # one unit moved by 5 %
    >>> res = iut_equivalence(d, np.repeat([0, 1], 12), bound=1e-3)
    >>> bool(res["p_value"].iloc[0] < 0.05), int(res["n_beyond"].iloc[0])
    (False, 1)
    """
    u = _units(changes, cells, noise, noise_cells, bound, alpha)
    alpha = float(alpha)
    n = u["mean"].size
    p_eq, p_beyond, mean, se, df = u["p_equivalence"], u["p_beyond"], u["mean"], u["se"], u["df"]
    worst = int(np.argmax(p_eq))
    lower_binds = sps.t.sf(u["t_lower"][worst], df[worst]) >= sps.t.cdf(u["t_upper"][worst], df[worst])
    stat = u["t_lower"][worst] if lower_binds else u["t_upper"][worst]
    big = int(np.argmax(np.abs(mean)))
    b = float(np.log1p(float(bound)))
    resolvable = bool((sps.t.ppf(1.0 - alpha, df) * se < b).all())
    half = sps.t.ppf(1.0 - alpha / (2.0 * n), df) * se  # every unit's, simultaneous over the units
    abs_mean = np.abs(mean)
    abs_low = np.maximum(0.0, abs_mean - half)
    abs_high = abs_mean + half
    return v.frame(IUT_COLUMNS, {
        C.N: n, C.STATISTIC: float(stat), C.P_VALUE: float(p_eq.max()),
        C.EFFECT: float(np.expm1(mean[big])),
        C.CI_LOW: float(np.expm1(mean[big] - half[big])),
        C.CI_HIGH: float(np.expm1(mean[big] + half[big])),
        C.BOUND: float(bound), C.DF: float(df.min()), N_WITHIN: int((p_eq < alpha).sum()),
        N_BEYOND: int((p_beyond < alpha / n).sum()), P_BEYOND: float(min(1.0, n * p_beyond.min())),
        N_REPLICATES: int(u["replicates"]), NOISE_FLOOR: float(np.expm1(u["noise_sd"].max())),
        MEDIAN_ABS_CHANGE: float(np.expm1(np.median(np.abs(mean)))),
        WORST_UNIT: int(u["unit"][worst]), LARGEST_UNIT: int(u["unit"][big]),
        RESOLVABLE: int(resolvable), LARGEST_ABS_CHANGE: float(np.expm1(abs_mean.max())),
        LARGEST_ABS_CI_LOW: float(np.expm1(abs_low.max())),
        LARGEST_ABS_CI_HIGH: float(np.expm1(abs_high.max())),
    })
