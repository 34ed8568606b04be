"""Trajectories over checkpoints and depth: trend, enrichment, depth gradient and crossover,
boundary ratio (METRICS.md §6.1-§6.3)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import (BOOT_SHARE_CROSSING, BOUNDARY_RATIO_TEST_COLUMNS,
                                     CROSSOVER_TEST_COLUMNS, EARLY_STEP, ENRICHMENT_TEST_COLUMNS,
                                     N_RUNS, P_EARLY, P_EARLY_AGAINST, P_GREATER, P_LATE,
                                     P_LATE_AGAINST, P_LESS, P_MIN, TREND_RUNS_COLUMNS)
from lie_stats.stats.correlation import check_correlation_options, correlation_plans
from lie_stats.stats.permutation import BootstrapPlan, strata_codes, permutation_pvalue
from lie_stats.stats.signflip import one_sided_pair, sign_flip_test, slope_permutation_test

__all__ = ["trend", "trend_over_runs", "enrichment", "depth_gradient", "depth_crossover",
           "boundary_ratio", "SIGNS"]

SIGNS = ("positive", "negative")


def trend(
    values: ArrayLike,
    steps: ArrayLike,
    *,
    method: str = "spearman",
    n_perm: int = 9999,
    seed: int = 0,
    alternative: str = "two-sided",
) -> pd.DataFrame:
    """Monotone trend of a quantity over checkpoints: correlation with the step, permutation p.

    Parameters
    ----------
    values : array-like, shape ``[n_steps]``
        The quantity at each checkpoint (e.g. a layer's ``abelian_fraction``); NaN dropped.
    steps : array-like, shape ``[n_steps]``
        Training step of each checkpoint.
    method : {"spearman", "pearson", "kendall"}
        Spearman (default) tests any monotone trend.
    n_perm, seed, alternative
        As :func:`lie_stats.stats.correlation`. The checkpoints are exchangeable under the
        null (free permutation); with ``n_steps! - 1 <= n_perm`` (7 checkpoints or fewer at
        the default) the null is enumerated exactly. The checkpoints of one training run are
        not exchangeable: an autocorrelated trajectory without trend (AR(1), phi 0.7) gives
        p < 0.05 in about 10 % of series. Use :func:`trend_over_runs` for claims about
        training runs.

    Returns
    -------
    pandas.DataFrame, one row, columns ``TREND_COLUMNS``: ``n`` (checkpoints), ``statistic``
    and ``effect`` (the correlation with step), ``p_value``, ``ci_low`` and ``ci_high``
    (always NaN: resampling the checkpoints of one trajectory breaks its order, so no
    interval is reported), ``n_perm``, ``exact``.

    Raises
    ------
    StatsInputError
        Fewer than 3 checkpoints, constant values or steps, bad options.

    Examples
    --------
    >>> res = trend([0.0, 0.05, 0.04, 0.12, 0.2], [0, 100, 200, 400, 800], n_perm=999)
    >>> round(float(res["statistic"].iloc[0]), 2), float(res["p_value"].iloc[0])
    (0.9, 0.08333333333333333)
    """
    where = "trend"
    check_correlation_options(method, alternative, n_perm, 0, 0.5, seed, where)
    kernel, plan, t_null, _, center = correlation_plans(values, steps, None, method, n_perm, 0, seed, where)
    p = permutation_pvalue(kernel.t_obs, t_null, alternative=alternative, center=center)
    return v.frame(C.TREND_COLUMNS, {
        C.N: kernel.x.size, C.STATISTIC: kernel.t_obs, C.P_VALUE: p, C.EFFECT: kernel.t_obs,
        C.CI_LOW: np.nan, C.CI_HIGH: np.nan, C.N_PERM: plan.size, C.EXACT: plan.exact,
    })


def trend_over_runs(
    values: ArrayLike,
    steps: ArrayLike,
    *,
    method: str = "spearman",
    n_perm: int = 9999,
    seed: int = 0,
) -> pd.DataFrame:
    """Monotone trend over checkpoints tested over independent runs: each run's correlation
    between step and value, and the sign-flip test of their sum.

    A run's trajectory is autocorrelated, so its checkpoints are not exchangeable and no
    permutation of them is a calibrated null. Runs are independent, and without a trend a
    run's correlation with step is symmetric about 0 (a time-reversible stationary
    trajectory, e.g. Gaussian AR(1), is as likely to fall as to rise), so the signs of the
    runs' correlations may flip: the test of :func:`lie_stats.stats.signflip.sign_flip_test`
    (Canay, Romano & Shaikh 2017). It holds its level whatever the autocorrelation within a
    run; its smallest one-sided p is ``2^-R`` for ``R`` runs, so at least 6 runs are needed
    to reach 0.025, and one run cannot be tested.

    Parameters
    ----------
    values : array-like, shape ``[n_steps, n_runs]``
        The quantity of each run at each checkpoint (finite).
    steps : array-like, shape ``[n_steps]``
        Training step of each checkpoint (shared by the runs).
    method : {"spearman", "pearson", "kendall"}
    n_perm, seed
        Sign patterns (exact enumeration when ``2^R - 1 <= n_perm``) and their seed.

    Returns
    -------
    pandas.DataFrame, one row, columns ``TREND_RUNS_COLUMNS``: ``n`` (checkpoints),
    ``n_runs``; ``effect`` the mean over runs of their correlations (a run whose values are
    constant counts 0), ``statistic`` their sum; ``p_greater``, ``p_less``, ``p_value`` (twice
    the smaller), ``p_min``, ``n_perm``, ``exact``; ``ci_low``, ``ci_high`` NaN.

    Raises
    ------
    StatsInputError
        Fewer than 3 checkpoints, non-finite values, constant steps, bad options.

    Examples
    --------
    >>> vals = np.array([[0.0, 0.1, 0.2, 0.4], [0.0, 0.2, 0.1, 0.5], [0.1, 0.1, 0.3, 0.6]])
    >>> res = trend_over_runs(vals, [0, 100, 200])
    >>> round(float(res["effect"].iloc[0]), 3), float(res["p_greater"].iloc[0])
    (0.592, 0.125)
    """
    where = "trend_over_runs"
    check_correlation_options(method, "two-sided", n_perm, 0, 0.5, seed, where)
    y = np.asarray(values, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    st = v.vector(steps, name="steps", where=where)
    if y.ndim != 2 or y.shape[0] != st.size:
        raise StatsInputError(f"{where}: values must be [n_steps, n_runs] with n_steps = {st.size}, "
                              f"got shape {y.shape}.")
    if not (np.isfinite(y).all() and np.isfinite(st).all()):
        raise StatsInputError(f"{where}: values and steps must be finite.")
    v.min_n(st.size, 3, where=where, what="checkpoints")
    v.not_constant(st, name="steps", where=where)
    terms = np.zeros(y.shape[1])
    for r in range(y.shape[1]):
        if np.ptp(y[:, r]) > 0:
            fn = {"spearman": sps.spearmanr, "pearson": sps.pearsonr, "kendall": sps.kendalltau}[method]
            terms[r] = float(fn(st, y[:, r])[0])
    test = sign_flip_test(terms, n_perm=n_perm, seed=seed, where=where)
    return v.frame(TREND_RUNS_COLUMNS, {
        C.N: st.size, C.STATISTIC: test[C.STATISTIC], C.P_VALUE: test[C.P_VALUE],
        C.EFFECT: float(terms.mean()), C.CI_LOW: np.nan, C.CI_HIGH: np.nan,
        C.N_PERM: test[C.N_PERM], C.EXACT: test[C.EXACT], N_RUNS: terms.size,
        P_GREATER: test[P_GREATER], P_LESS: test[P_LESS], P_MIN: test[P_MIN],
    })


def enrichment(
    first: ArrayLike,
    last: ArrayLike,
    *,
    clusters: ArrayLike | None = None,
    paired: bool | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    n_perm: int = 9999,
    alternative: str = "two-sided",
) -> pd.DataFrame:
    """Enrichment ``mean(last) / mean(first)`` of a metric (METRICS.md §6.1), with interval.

    Parameters
    ----------
    first, last : array-like
        Non-negative values at the first and last checkpoint (per head or per layer).
    clusters : array-like, optional
        Cluster (layer) of each unit; paired data only. The bootstrap resamples clusters then
        units; the swap test flips whole clusters.
    paired : bool, optional
        Whether ``first[i]`` and ``last[i]`` are the same unit. Default: paired when the
        lengths are equal.
    n_boot, ci, seed
        Bootstrap samples (0 skips the interval), level, seed (permutations use ``seed``,
        the bootstrap ``seed + 1``).
    n_perm : int, default 9999
        Random swaps for the paired test; exact enumeration of all ``2^m - 1`` non-identity
        swaps when that is at most ``n_perm`` (``m`` units, or clusters).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: enrichment above 1.

    Returns
    -------
    pandas.DataFrame, one row, columns ``ENRICHMENT_TEST_COLUMNS``:

    - ``n``: units (pairs when paired, ``len(first) + len(last)`` otherwise);
    - ``statistic``: ``log(mean(last) / mean(first))``;
    - ``p_value``: paired only (NaN for unpaired data, where no exchangeability holds
      without further assumptions): the swap test of ``log ratio = 0``. Under the null,
      ``first[i]`` and ``last[i]`` are exchangeable, so each unit (or each whole cluster)
      may swap its two values; the two-sided p counts ``|T| >= |t|`` (the null is symmetric
      about 0: swapping everything negates ``T``). A swap negates the unit's (cluster's) sum
      of ``last - first`` and ``T`` is an increasing function of their total, so this is the
      sign-flip test of :func:`lie_stats.stats.signflip.sign_flip_test`, which holds its
      level with few clusters (Canay, Romano & Shaikh 2017); ``p_greater``, ``p_less``: its
      one-sided p-values (``p_value`` follows ``alternative``), ``p_min`` its smallest
      one-sided p (``2^-K``);
    - ``effect``: the ratio ``mean(last) / mean(first)``;
    - ``ci_low``, ``ci_high``: percentile interval of the ratio, by the (cluster) bootstrap of
      pairs, or by independent bootstraps of ``first`` and ``last`` when unpaired;
    - ``mean_first``, ``mean_last``, ``paired`` (1/0), ``n_strata`` (clusters; 1 without),
      ``n_perm`` (0 when unpaired), ``exact``.

    Raises
    ------
    StatsInputError
        Negative values, a mean that is not positive, fewer than 2 values, ``paired=True``
        with unequal lengths, ``clusters`` with unpaired data.

    Examples
    --------
    >>> res = enrichment([1.0, 2.0, 3.0, 2.0], [2.0, 4.0, 5.0, 5.0], n_boot=0)
    >>> float(res["effect"].iloc[0]), float(res["p_value"].iloc[0])
    (2.0, 0.125)
    """
    where = "enrichment"
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    n_perm = v.positive_int(n_perm, name="n_perm", where=where)
    ci = v.level(ci, name="ci", where=where)
    seed = v.seed_value(seed, where=where)
    f = v.vector(first, name="first", where=where)
    l_ = v.vector(last, name="last", where=where)
    if paired is None:
        paired = f.size == l_.size
    if paired:
        v.same_length(("first", f), ("last", l_), where=where)
        codes = (np.zeros(f.size, dtype=np.intp) if clusters is None
                 else strata_codes(clusters, f.size, name="clusters", where=where))
        keep = ~(np.isnan(f) | np.isnan(l_))
        f, l_ = f[keep], l_[keep]
        codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1)
        v.min_n(f.size, 2, where=where, what="complete pairs")
    else:
        if clusters is not None:
            raise StatsInputError(f"{where}: clusters apply to paired data only (first and last of "
                                  f"the same units); got unpaired data ({f.size} vs {l_.size}).")
        f, l_ = f[~np.isnan(f)], l_[~np.isnan(l_)]
        v.min_n(min(f.size, l_.size), 2, where=where, what="values in first and in last")
    for name, a in (("first", f), ("last", l_)):
        if (a < 0).any():
            raise StatsInputError(f"{where}: {name} holds negative values; enrichment is a ratio "
                                  f"of means of a non-negative metric (METRICS.md §6.1).")
        if not a.mean() > 0:
            raise StatsInputError(f"{where}: mean({name}) is 0; the enrichment ratio is undefined.")
    t_obs = float(np.log(l_.mean() / f.mean()))
    p = pg = pl = p_min = np.nan
    size, exact, n_strata = 0, False, 1
    lo = hi = np.nan
    if paired:
        n_strata = int(codes.max()) + 1
        # the swap of a unit (cluster) negates its sum of last - first; the log ratio is an
        # odd, increasing function of the total of those sums, so the sign-flip test of the
        # cluster sums is the swap test of the log ratio
        units = codes if clusters is not None else np.arange(f.size)
        test = sign_flip_test(np.bincount(units, weights=l_ - f), n_perm=n_perm, seed=seed, where=where)
        size, exact, p_min = test[C.N_PERM], test[C.EXACT], test[P_MIN]
        pg, pl = test[P_GREATER], test[P_LESS]
        p = {"two-sided": test[C.P_VALUE], "greater": pg, "less": pl}[alternative]
        if n_boot:
            boot = [l_[i].mean(axis=1) / f[i].mean(axis=1) for i in BootstrapPlan(
                None if clusters is None else codes, f.size, n_boot, seed + 1, True).chunks()]
            lo, hi = v.percentile_ci(np.concatenate(boot), ci)
    elif n_boot:
        bf = np.concatenate([f[i].mean(axis=1) for i in BootstrapPlan(None, f.size, n_boot, seed + 1, True).chunks()])
        bl = np.concatenate([l_[i].mean(axis=1) for i in BootstrapPlan(None, l_.size, n_boot, seed + 2, True).chunks()])
        with np.errstate(invalid="ignore", divide="ignore"):
            lo, hi = v.percentile_ci(bl / bf, ci)
    return v.frame(ENRICHMENT_TEST_COLUMNS, {
        C.N: f.size if paired else f.size + l_.size, C.STATISTIC: t_obs, C.P_VALUE: p,
        C.EFFECT: float(np.exp(t_obs)), C.CI_LOW: lo, C.CI_HIGH: hi, C.MEAN_FIRST: f.mean(),
        C.MEAN_LAST: l_.mean(), C.PAIRED: bool(paired), C.N_STRATA: n_strata, C.N_PERM: size,
        C.EXACT: exact, P_GREATER: pg, P_LESS: pl, P_MIN: p_min,
    })


def depth_gradient(summary: ArrayLike, *, depth: ArrayLike | None = None) -> np.ndarray:
    """OLS slope of a layer summary against normalized depth (METRICS.md §6.2).

    Parameters
    ----------
    summary : array-like, shape ``[..., L]``
        Layer summaries on the last axis (vectorized over leading axes). NaN entries are left
        out of the fit.
    depth : array-like, shape ``[L]``, optional
        Depth of each layer. Default ``l / (L_row - 1)`` where ``L_row`` is the row's number
        of layers up to its last non-NaN entry (models padded with NaN to a common depth keep
        their own normalized depth).

    Returns
    -------
    numpy.ndarray, shape ``summary.shape[:-1]``
        The slope; NaN for rows with fewer than 2 non-NaN layers.

    Examples
    --------
    >>> depth_gradient([[0.0, 1.0, 2.0], [1.0, 1.0, np.nan]])
    array([2., 0.])
    """
    where = "depth_gradient"
    try:
        y = np.asarray(summary, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise StatsInputError(f"{where}: summary must be numeric ({e}).") from e
    if y.ndim < 1 or y.shape[-1] < 2:
        raise StatsInputError(f"{where}: summary needs a last (layer) axis of length >= 2, got shape {y.shape}.")
    if np.isinf(y).any():
        raise StatsInputError(f"{where}: summary holds infinite values.")
    n_layers = y.shape[-1]
    valid = ~np.isnan(y)
    if depth is None:
        last = n_layers - 1 - np.argmax(valid[..., ::-1], axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.arange(n_layers) / np.where(last > 0, last, np.nan)[..., None]
    else:
        d = v.vector(depth, name="depth", where=where)
        if d.size != n_layers or np.isnan(d).any():
            raise StatsInputError(f"{where}: depth must hold {n_layers} finite values, got {d.size}.")
        d = np.broadcast_to(d, y.shape)
    w = valid & ~np.isnan(d)
    yz, dz = np.where(w, y, 0.0), np.where(w, d, 0.0)
    cnt = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dbar = dz.sum(-1) / cnt
        ybar = yz.sum(-1) / cnt
        dc = np.where(w, dz - dbar[..., None], 0.0)
        sxx = (dc * dc).sum(-1)
        slope = (dc * (yz - ybar[..., None])).sum(-1) / sxx
    return np.where((cnt >= 2) & (sxx > 0), slope, np.nan)


def _first_crossing(slopes: np.ndarray, steps: np.ndarray,
                    from_sign: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Crossover step (first sign change; with ``from_sign``, the first change from that
    sign to the other) and number of sign changes (either way), per row of [B, S]."""
    neg = slopes < 0  # a slope of exactly 0 counts as non-negative
    change = neg[:, 1:] != neg[:, :-1]
    n_cross = change.sum(axis=1)
    if from_sign is not None:
        change = change & (neg[:, :-1] if from_sign == "negative" else ~neg[:, :-1])
    found = change.any(axis=1)
    k = np.argmax(change, axis=1)
    rows = np.arange(slopes.shape[0])
    s0, s1 = slopes[rows, k], slopes[rows, k + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = s0 / (s0 - s1)
    a, b = steps[k], steps[k + 1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        logx = 10.0 ** (np.log10(a) + t * (np.log10(b) - np.log10(a)))
    cross = np.where(a > 0, logx, a + t * (b - a))
    return np.where(found, cross, np.nan), n_cross


def _crossing_interval(boot: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval of crossover steps over all resamples, a resample that never
    crosses counting as a crossing after the last step (+inf); an infinite limit is NaN."""
    filled = np.where(np.isnan(boot), np.inf, boot)
    lo = float(np.quantile(filled, (1.0 - ci) / 2.0, method="lower"))
    hi = float(np.quantile(filled, (1.0 + ci) / 2.0, method="higher"))
    return (lo if np.isfinite(lo) else np.nan), (hi if np.isfinite(hi) else np.nan)


def depth_crossover(
    values: ArrayLike,
    steps: ArrayLike,
    *,
    layer_of_head: ArrayLike,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    from_sign: str | None = None,
    early_fraction: float = 0.0,
    n_perm: int = 9999,
) -> pd.DataFrame:
    """The step where the depth gradient changes sign (METRICS.md §6.2), with a bootstrap CI
    and, for a declared direction, a test that the gradient has one sign early and the other
    at the end.

    Parameters
    ----------
    values : array-like, shape ``[n_steps, n_heads_total]``
        Per-head metric at each checkpoint, heads of all layers side by side (finite).
    steps : array-like, shape ``[n_steps]``
        Non-negative, strictly increasing training steps.
    layer_of_head : array-like, shape ``[n_heads_total]``
        Layer of each head; sorted label order is depth order, depth ``l / (L - 1)``.
    n_boot, seed, ci
        Bootstrap samples (0 skips the interval), seed, interval level.
    from_sign : {"positive", "negative"}, optional
        Declared sign of the slope early in training; the crossing is then the first change
        from it to the other sign (a change the other way is not a crossing), and the test
        columns are filled. ``None``: any first sign change, no test.
    early_fraction : float, default 0
        The early checkpoint is the first one at or after this fraction of the last step
        (e.g. the end of learning-rate warm-up: the slope at step 0 is initialisation
        noise); crossings are looked for from there on.
    n_perm : int, default 9999
        Layer permutations of each slope test (all ``L! - 1`` when that is at most
        ``n_perm``); seeded with ``seed + 1``.

    Returns
    -------
    pandas.DataFrame, one row, columns ``CROSSOVER_TEST_COLUMNS``:

    - ``n``: heads;
    - ``statistic``: the crossover step: the layer summary is the mean over the layer's
      heads, the slope per step is :func:`depth_gradient`, and the crossover is the
      **first** sign change between consecutive checkpoints, located by linear interpolation
      of the slope in ``log10(step)`` between the two bracketing checkpoints (from the early
      checkpoint on; with ``from_sign``, the first change from that sign). When the lower
      bracketing checkpoint is step 0 (``log10`` undefined) the interpolation is linear in
      the step itself. A slope of exactly 0 counts as non-negative. NaN when the slope never
      changes sign (``n_crossings = 0``);
    - ``p_value``: with ``from_sign``, ``max(p_early, p_late)``, the p of the
      intersection-union test that the slope has ``from_sign`` at the early checkpoint and
      the other sign at the last one (Berger 1982: each one-sided test at level a gives a
      level-a test of both); NaN without ``from_sign``;
    - ``effect``: ``fraction_of_training`` (crossover / last step);
    - ``ci_low``, ``ci_high``: percentile interval of the crossover step over bootstrap
      samples that resample heads within layers (every layer stays present), over **all**
      samples: one that never crosses counts as crossing after the last step, so a limit
      that falls among those is NaN (not finite: more than ``(1 - ci) / 2`` of the samples
      do not cross); ``boot_share_crossing`` says how many cross;
    - ``fraction_of_training``: crossover / last step;
    - ``n_crossings``: number of sign changes (the first is reported when there are several);
    - ``boot_fraction_no_crossing``: share of bootstrap samples with no sign change (NaN
      when ``n_boot = 0``);
    - ``first_slope``, ``last_slope``: depth gradient at the first and last checkpoint;
    - ``n_steps``, ``n_layers``;
    - ``early_step``: the early checkpoint;
    - ``p_early``, ``p_late``: one-sided p that the slope has ``from_sign`` at the early
      checkpoint and the opposite sign at the last one, by
      :func:`lie_stats.stats.signflip.slope_permutation_test` on the layer means (layers
      permuted over depths: exact for exchangeable layers whatever their layer effects);
      ``p_early_against``, ``p_late_against``: the one-sided p's the other way; ``p_min``:
      the smallest p those tests can reach; ``n_perm``. NaN without ``from_sign``;
    - ``boot_share_crossing``: share of bootstrap samples that cross (in the declared
      direction, from the early checkpoint on).

    Raises
    ------
    StatsInputError
        Shapes disagree, NaN/inf values, fewer than 2 steps or 2 layers, negative or
        non-increasing steps.

    Examples
    --------
    >>> vals = np.array([[0, 0, 1, 1, 2, 2], [2, 2, 1, 1, 0, 0]], dtype=float)
    >>> res = depth_crossover(vals, [10, 1000], layer_of_head=[0, 0, 1, 1, 2, 2], n_boot=0)
    >>> float(res["statistic"].iloc[0]), int(res["n_crossings"].iloc[0])
    (100.0, 1)
    """
    where = "depth_crossover"
    if from_sign is not None:
        v.choice(from_sign, SIGNS, name="from_sign", where=where)
    early_fraction = float(early_fraction)
    if not 0.0 <= early_fraction < 1.0:
        raise StatsInputError(f"{where}: early_fraction must be in [0, 1), got {early_fraction}.")
    n_perm = v.positive_int(n_perm, name="n_perm", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    seed = v.seed_value(seed, where=where)
    ci = v.level(ci, name="ci", where=where)
    try:
        vals = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise StatsInputError(f"{where}: values must be numeric ({e}).") from e
    if vals.ndim != 2:
        raise StatsInputError(f"{where}: values must be [n_steps, n_heads_total], got shape {vals.shape}.")
    if not np.isfinite(vals).all():
        raise StatsInputError(f"{where}: values hold {int((~np.isfinite(vals)).sum())} NaN or inf "
                              f"entries; select finite heads first.")
    st = v.vector(steps, name="steps", where=where)
    if st.size != vals.shape[0]:
        raise StatsInputError(f"{where}: steps has {st.size} entries but values has {vals.shape[0]} rows.")
    v.min_n(st.size, 2, where=where, what="checkpoints")
    if np.isnan(st).any() or (st < 0).any() or (np.diff(st) <= 0).any():
        raise StatsInputError(f"{where}: steps must be non-negative and strictly increasing, got {st.tolist()}.")
    codes = strata_codes(layer_of_head, vals.shape[1], name="layer_of_head", where=where)
    n_layers = int(codes.max()) + 1
    if n_layers < 2:
        raise StatsInputError(f"{where}: needs at least 2 layers, got {n_layers}.")
    onehot = np.eye(n_layers)[codes]
    avg = onehot / onehot.sum(axis=0)
    depth = np.arange(n_layers) / (n_layers - 1)
    layer_means = vals @ avg
    slopes = depth_gradient(layer_means, depth=depth)
    e = int(np.argmax(st >= early_fraction * st[-1]))
    if e == st.size - 1 and from_sign is not None:
        raise StatsInputError(f"{where}: the early checkpoint (first at or after {early_fraction} of "
                              f"training) is the last one; no crossing can be tested.")
    cross, n_cross = _first_crossing(slopes[None, e:], st[e:], from_sign)
    cross, n_cross = float(cross[0]), int(n_cross[0])
    nan = np.nan
    tests = {P_EARLY: nan, P_LATE: nan, P_EARLY_AGAINST: nan, P_LATE_AGAINST: nan, P_MIN: nan,
             C.N_PERM: 0, C.P_VALUE: nan}
    if from_sign is not None:
        if n_layers < 3:
            raise StatsInputError(f"{where}: the slope tests need at least 3 layers, got {n_layers}.")
        r = slope_permutation_test(layer_means[[e, -1]], n_perm=n_perm, seed=seed + 1, where=where)
        toward, away = (P_GREATER, P_LESS) if from_sign == "positive" else (P_LESS, P_GREATER)
        tests = {P_EARLY: float(r[toward][0]), P_EARLY_AGAINST: float(r[away][0]),
                 P_LATE: float(r[away][1]), P_LATE_AGAINST: float(r[toward][1]),
                 P_MIN: r[P_MIN], C.N_PERM: r[C.N_PERM]}
        tests[C.P_VALUE] = max(tests[P_EARLY], tests[P_LATE])
    lo = hi = frac_none = share = np.nan
    if n_boot:
        n = vals.shape[1]
        plan = BootstrapPlan(codes, n, n_boot, seed, resample_clusters=False)
        boots = []
        for idx in plan.chunks():
            for a, b in v.chunks(idx.shape[0], n * vals.shape[0]):
                means = np.einsum("sbh,hl->bsl", vals[:, idx[a:b]], avg)
                slopes_b = depth_gradient(means, depth=depth)[:, e:]
                boots.append(_first_crossing(slopes_b, st[e:], from_sign)[0])
        boot = np.concatenate(boots)
        frac_none = float(np.isnan(boot).mean())
        share = 1.0 - frac_none
        lo, hi = _crossing_interval(boot, ci)
    frac = cross / st[-1]
    return v.frame(CROSSOVER_TEST_COLUMNS, {
        **tests, EARLY_STEP: float(st[e]), BOOT_SHARE_CROSSING: share,
        C.N: vals.shape[1], C.STATISTIC: cross, C.EFFECT: frac,
        C.CI_LOW: lo, C.CI_HIGH: hi, C.FRACTION_OF_TRAINING: frac, C.N_CROSSINGS: n_cross,
        C.BOOT_FRACTION_NO_CROSSING: frac_none, C.FIRST_SLOPE: float(slopes[0]),
        C.LAST_SLOPE: float(slopes[-1]), C.N_STEPS: st.size, C.N_LAYERS: n_layers,
    })


_SUMMARIES = ("mean", "cv")


def boundary_ratio(
    values: ArrayLike,
    *,
    clusters: ArrayLike,
    summary: str = "mean",
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    alternative: str = "two-sided",
) -> pd.DataFrame:
    """Boundary ratio (METRICS.md §6.3): mean summary of the first and last layer over the
    mean summary of the interior layers.

    Parameters
    ----------
    values : array-like, shape ``[n_heads_total]``
        Per-head values (NaN dropped).
    clusters : array-like, shape ``[n_heads_total]``
        Layer of each head; sorted label order is depth order (first = smallest label).
    summary : {"mean", "cv"}
        Layer summary of the heads' values: their mean, or their coefficient of variation
        ``std / mean`` with the population std (``"cv"`` of ``commutator_mean`` is
        ``head_heterogeneity``, METRICS.md §4.5).
    n_boot, ci, seed
        Bootstrap of heads within layers (0 skips the interval), level, seed.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: boundary layers above the interior.

    Returns
    -------
    pandas.DataFrame, one row, columns ``BOUNDARY_RATIO_TEST_COLUMNS``:

    - ``n``: heads; ``statistic``: log of the ratio; ``effect``: the ratio;
    - ``p_value``: exact layer-permutation test: every one of the ``C(L, 2)`` choices of two
      layers as "boundary" gives a log ratio; layers are the exchangeable units, so the p is
      the share of choices at least as extreme as the real first-and-last pair (two-sided:
      ``|T - null_center|``, ``null_center`` the mean over all choices). Its smallest value is
      ``1 / C(L, 2)``: with 6 layers (15 choices) it cannot fall below 0.05;
    - ``p_greater``, ``p_less``: the one-sided p-values of the same test (boundary above /
      below the interior); ``p_min`` = ``1 / C(L, 2)``, the smallest of them;
    - ``ci_low``, ``ci_high``: percentile interval of the ratio, resampling heads within
      layers (a description of the estimate: the layers stay fixed, so it leaves out the
      between-layer variance the test accounts for);
    - ``mean_boundary``, ``mean_interior``: the two means of layer summaries;
    - ``n_layers``; ``n_perm`` = ``C(L, 2) - 1``; ``exact`` = 1; ``null_center``.

    Raises
    ------
    StatsInputError
        Fewer than 3 layers, a layer without values (or with fewer than 2 for ``"cv"``), a
        non-positive ratio, bad options.

    Examples
    --------
    >>> vals = [3.0, 3.2, 1.0, 1.1, 0.9, 1.0, 2.9, 3.1]
    >>> res = boundary_ratio(vals, clusters=[0, 0, 1, 1, 2, 2, 3, 3], n_boot=0)
    >>> round(float(res["effect"].iloc[0]), 2)
    3.05
    """
    where = "boundary_ratio"
    v.choice(summary, _SUMMARIES, name="summary", where=where)
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    ci = v.level(ci, name="ci", where=where)
    seed = v.seed_value(seed, where=where)
    x = v.vector(values, name="values", where=where)
    codes = strata_codes(clusters, x.size, name="clusters", where=where)
    n_layers_all = int(codes.max()) + 1
    keep = ~np.isnan(x)
    x, codes = x[keep], codes[keep]
    counts = np.bincount(codes, minlength=n_layers_all)
    need = 2 if summary == "cv" else 1
    if n_layers_all < 3 or (counts < need).any():
        raise StatsInputError(
            f"{where}: needs at least 3 layers with >= {need} non-NaN heads each; heads per "
            f"layer: {counts.tolist()}.")
    onehot = np.eye(n_layers_all)[codes]
    avg = onehot / counts

    def summarize(xs: np.ndarray) -> np.ndarray:  # [..., n] -> [..., L]
        m = xs @ avg
        if summary == "mean":
            return m
        var = np.maximum((xs * xs) @ avg - m * m, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt(var) / m

    s = summarize(x)
    mb, mi = float((s[0] + s[-1]) / 2.0), float(s[1:-1].mean())
    if not (np.isfinite(mb) and np.isfinite(mi) and mb > 0 and mi > 0):
        raise StatsInputError(
            f"{where}: the boundary ({mb}) and interior ({mi}) means must be positive for a ratio.")
    t_obs = float(np.log(mb / mi))
    pairs = np.array(list(itertools.combinations(range(n_layers_all), 2)))
    total = s.sum()
    pb = s[pairs].mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t_all = np.log(pb / ((total - 2.0 * pb) / (n_layers_all - 2)))
    if not np.isfinite(t_all).all():
        raise StatsInputError(f"{where}: some layer pairs give a non-positive ratio; the layer "
                              f"permutation test needs positive layer summaries.")
    observed = (pairs[:, 0] == 0) & (pairs[:, 1] == n_layers_all - 1)
    center = float(t_all.mean())
    p = permutation_pvalue(t_obs, t_all[~observed], alternative=alternative, center=center)
    pg, pl, _ = one_sided_pair(t_obs, t_all[~observed])
    lo = hi = np.nan
    if n_boot:
        boot = []
        for idx in BootstrapPlan(codes, x.size, n_boot, seed, resample_clusters=False).chunks():
            sb = summarize(x[idx])
            with np.errstate(invalid="ignore", divide="ignore"):
                boot.append((sb[:, 0] + sb[:, -1]) / 2.0 / sb[:, 1:-1].mean(axis=1))
        lo, hi = v.percentile_ci(np.concatenate(boot), ci)
    return v.frame(BOUNDARY_RATIO_TEST_COLUMNS, {
        C.N: x.size, C.STATISTIC: t_obs, C.P_VALUE: p, C.EFFECT: mb / mi, C.CI_LOW: lo,
        C.CI_HIGH: hi, C.MEAN_BOUNDARY: mb, C.MEAN_INTERIOR: mi, C.N_LAYERS: n_layers_all,
        C.N_PERM: pairs.shape[0] - 1, C.EXACT: True, C.NULL_CENTER: center,
        P_GREATER: pg, P_LESS: pl, P_MIN: 1.0 / pairs.shape[0],
    })
