"""Two-group differences of a head metric (anchor vs worker heads) with nested inference."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.stats.permutation import BootstrapPlan, strata_codes, PermutationPlan, permutation_pvalue

__all__ = ["group_difference"]


def _group_codes(group: ArrayLike, n: int, where: str) -> np.ndarray:
    arr = np.asarray(group)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise StatsInputError(
            f"{where}: group must be 1-D with one label per observation ({n}), got shape {arr.shape}.")
    if arr.dtype == bool:
        return arr.astype(np.intp)
    codes = v.labels(arr, n=n, name="group", where=where)
    k = int(codes.max()) + 1 if n else 0
    if k != 2:
        found = np.unique(arr).tolist()
        raise StatsInputError(
            f"{where}: group must hold exactly 2 distinct labels, found {k}: {found[:10]}.")
    return codes


def _slot_average(codes: np.ndarray) -> np.ndarray:
    """[n, K] matrix whose product with values gives each stratum's mean."""
    k = int(codes.max()) + 1
    onehot = np.eye(k)[codes]
    return onehot / onehot.sum(axis=0)


def group_difference(
    x: ArrayLike,
    group: ArrayLike,
    *,
    strata: ArrayLike | None,
    alternative: str = "two-sided",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Difference between two groups of units, tested by within-strata permutation.

    Parameters
    ----------
    x : array-like, shape ``[n]``
        The metric (one value per head); NaN rows are dropped.
    group : array-like, shape ``[n]``
        Boolean (``True`` is group 1) or exactly two labels (the larger in sort order is
        group 1, e.g. ``"worker"`` over ``"anchor"``).
    strata : array-like of length n, or None
        Required keyword: stratum (layer) of each unit; ``None`` explicitly for free
        permutation.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: group 1 larger.
    n_perm, n_boot, ci, seed
        As :func:`lie_stats.stats.correlation`.

    Returns
    -------
    pandas.DataFrame, one row, columns ``GROUP_DIFFERENCE_COLUMNS``:

    - ``n``: units used;
    - ``statistic``: difference in means, group 1 minus group 0, **centred within strata**:
      ``raw_difference - null_center``; 0 is "no difference beyond the strata";
    - ``p_value``: within-strata permutation p of the raw difference (the two-sided test
      measures ``|T - null_center|``);
    - ``effect``: the centred difference itself (``statistic``), so that the effect, its
      interval and the p-value speak of one quantity and a verdict's sign is the tested one;
    - ``ci_low``, ``ci_high``: percentile interval of the centred statistic over the
      two-stage cluster bootstrap (resamples missing a group are skipped);
    - ``rank_biserial``: rank-biserial correlation ``2 U_1 / (n_1 n_0) - 1`` of the pooled
      data (positive when group 1 tends to be larger; pingouin ``mwu(x1, x0)["RBC"]``);
    - ``hedges_g``: pooled-SD standardized difference with small-sample correction
      ``1 - 3 / (4 (n_1 + n_0) - 9)``;
    - ``raw_difference``: uncentred difference in means;
    - ``n_group0``, ``n_group1``; ``n_strata``, ``n_perm``, ``exact``, ``null_center``.

    Raises
    ------
    StatsInputError
        Not exactly two groups, fewer than 2 units in a group, ``x`` constant, bad options.

    Notes
    -----
    With group sizes :math:`n_1, n_0` the statistic :math:`T = \\bar x_1 - \\bar x_0` is
    linear in the group indicator ``g``; permuting ``x`` within strata gives
    :math:`E[T] = (1/n_1 + 1/n_0) \\sum_i g_i \\bar x_{s(i)} - \\sum_i x_i / n_0`. When groups
    are unbalanced across layers that differ in level (workers concentrated in deep layers
    whose values are larger), :math:`E[T] \\ne 0`: the raw difference mixes the layer effect
    in; the centred statistic removes it, and the permutation null is exact for it.
    Hedges (1981), doi:10.3102/10769986006002107; Kerby (2014), doi:10.2466/11.IT.3.1.

    Examples
    --------
    >>> x = [1.0, 2, 3, 4, 5, 6, 7, 8]
    >>> g = [False, True, False, True, False, True, False, True]
    >>> res = group_difference(x, g, strata=[0, 0, 0, 0, 1, 1, 1, 1], n_boot=0)
    >>> float(res["statistic"].iloc[0]), int(res["exact"].iloc[0])
    (1.0, 1)
    """
    where = "group_difference"
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    n_perm = v.positive_int(n_perm, name="n_perm", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    ci = v.level(ci, name="ci", where=where)
    seed = v.seed_value(seed, where=where)
    xv = v.vector(x, name="x", where=where)
    n_all = xv.size
    g = _group_codes(group, n_all, where)
    codes = None if strata is None else strata_codes(strata, n_all, name="strata", where=where)
    keep = ~np.isnan(xv)
    xv, g = xv[keep], g[keep]
    if codes is not None:
        codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1)
    n1, n0 = int(g.sum()), int(g.size - g.sum())
    if min(n1, n0) < 2:
        raise StatsInputError(
            f"{where}: each group needs at least 2 non-NaN observations, got n_group0={n0}, "
            f"n_group1={n1} ({n_all - xv.size} NaN rows dropped).")
    v.not_constant(xv, name="x", where=where)
    n = xv.size
    gf = g.astype(np.float64)
    scale, total = 1.0 / n1 + 1.0 / n0, xv.sum()
    t_obs = float(scale * (xv @ gf) - total / n0)
    plan_codes = codes if codes is not None else np.zeros(n, dtype=np.intp)
    avg = _slot_average(plan_codes)
    center = float(scale * (gf @ (avg.T @ xv)[plan_codes]) - total / n0)
    plan = PermutationPlan(plan_codes, n_perm, seed)
    go = gf[plan.order]
    t_null = (np.concatenate([scale * (vals @ go) - total / n0 for vals in plan.value_chunks(xv)])
              if plan.size else np.empty(0))
    p = permutation_pvalue(t_obs, t_null, alternative=alternative, center=center)

    lo = hi = np.nan
    if n_boot:
        boots = []
        for idx in BootstrapPlan(codes, n, n_boot, seed + 1, True).chunks():
            xb, gb = xv[idx], gf[idx]
            n1b = gb.sum(axis=1)
            n0b = n - n1b
            with np.errstate(invalid="ignore", divide="ignore"):
                sc = 1.0 / n1b + 1.0 / n0b
                raw = sc * (xb * gb).sum(axis=1) - xb.sum(axis=1) / n0b
                cen = sc * (gb * (xb @ avg)[:, plan_codes]).sum(axis=1) - xb.sum(axis=1) / n0b
            boots.append(np.where((n1b > 0) & (n0b > 0), raw - cen, np.nan))
        lo, hi = v.percentile_ci(np.concatenate(boots), ci)

    x1, x0 = xv[g == 1], xv[g == 0]
    ranks = v.rank(xv)
    u1 = ranks[g == 1].sum() - n1 * (n1 + 1) / 2.0
    rbc = 2.0 * u1 / (n1 * n0) - 1.0
    pooled = np.sqrt(((n1 - 1) * x1.var(ddof=1) + (n0 - 1) * x0.var(ddof=1)) / (n - 2))
    hedges = (x1.mean() - x0.mean()) / pooled * (1.0 - 3.0 / (4.0 * n - 9.0)) if pooled > 0 else np.nan
    return v.frame(C.GROUP_DIFFERENCE_COLUMNS, {
        C.N: n, C.STATISTIC: t_obs - center, C.P_VALUE: p, C.EFFECT: t_obs - center,
        C.CI_LOW: lo, C.CI_HIGH: hi, C.RANK_BISERIAL: rbc, C.HEDGES_G: hedges, C.RAW_DIFFERENCE: t_obs,
        C.N_GROUP0: n0, C.N_GROUP1: n1, C.N_STRATA: plan.n_strata, C.N_PERM: plan.size,
        C.EXACT: plan.exact, C.NULL_CENTER: center,
    })
