"""Trajectories over checkpoints and depth: trend, enrichment, depth gradient and crossover,
boundary ratio (METRICS.md §6.1-§6.3)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats.stats import columns as C
from lie_stats.stats.correlation import check_correlation_options, correlation_plans
from lie_stats.stats.permutation import BootstrapPlan, strata_codes, permutation_pvalue

__all__ = ["trend", "enrichment", "depth_gradient", "depth_crossover", "boundary_ratio"]


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
        the default) the null is enumerated exactly.

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


def _sign_flip_null(first, last, codes, n_perm, seed):
    """log(mean last / mean first) after swapping first/last in flipped units (or clusters)."""
    k = int(codes.max()) + 1
    exact = (1 << min(k, 62)) - 1 <= n_perm
    if exact:
        bits = ((np.arange(1, 1 << k)[:, None] >> np.arange(k)) & 1).astype(np.float64)
        size = bits.shape[0]
    else:
        size = n_perm
    diff = first - last
    sf, sl = first.sum(), last.sum()
    out = []
    rng = np.random.default_rng(seed)
    for a, b in v.chunks(size, k):
        s = bits[a:b] if exact else rng.integers(0, 2, size=(b - a, k)).astype(np.float64)
        moved = s[:, codes] @ diff  # sum over swapped units of (first - last)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.log((sl + moved) / (sf - moved)))
    return np.concatenate(out), size, exact


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
    pandas.DataFrame, one row, columns ``ENRICHMENT_COLUMNS``:

    - ``n``: units (pairs when paired, ``len(first) + len(last)`` otherwise);
    - ``statistic``: ``log(mean(last) / mean(first))``;
    - ``p_value``: paired only (NaN for unpaired data, where no exchangeability holds
      without further assumptions): the swap test of ``log ratio = 0``. Under the null,
      ``first[i]`` and ``last[i]`` are exchangeable, so each unit (or each whole cluster)
      may swap its two values; the two-sided p counts ``|T| >= |t|`` (the null is symmetric
      about 0: swapping everything negates ``T``);
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
    p, size, exact, n_strata = np.nan, 0, False, 1
    lo = hi = np.nan
    if paired:
        n_strata = int(codes.max()) + 1
        t_null, size, exact = _sign_flip_null(f, l_, codes if clusters is not None
                                              else np.arange(f.size), n_perm, seed)
        p = permutation_pvalue(t_obs, t_null, alternative=alternative)
        if n_boot:
            boot = [l_[i].mean(axis=1) / f[i].mean(axis=1) for i in BootstrapPlan(
                None if clusters is None else codes, f.size, n_boot, seed + 1, True).chunks()]
            lo, hi = v.percentile_ci(np.concatenate(boot), ci)
    elif n_boot:
        bf = np.concatenate([f[i].mean(axis=1) for i in BootstrapPlan(None, f.size, n_boot, seed + 1, True).chunks()])
        bl = np.concatenate([l_[i].mean(axis=1) for i in BootstrapPlan(None, l_.size, n_boot, seed + 2, True).chunks()])
        with np.errstate(invalid="ignore", divide="ignore"):
            lo, hi = v.percentile_ci(bl / bf, ci)
    return v.frame(C.ENRICHMENT_COLUMNS, {
        C.N: f.size if paired else f.size + l_.size, C.STATISTIC: t_obs, C.P_VALUE: p,
        C.EFFECT: float(np.exp(t_obs)), C.CI_LOW: lo, C.CI_HIGH: hi, C.MEAN_FIRST: f.mean(),
        C.MEAN_LAST: l_.mean(), C.PAIRED: bool(paired), C.N_STRATA: n_strata, C.N_PERM: size,
        C.EXACT: exact,
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


def _first_crossing(slopes: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Crossover step (first sign change) and number of sign changes, per row of [B, S]."""
    neg = slopes < 0  # a slope of exactly 0 counts as non-negative
    change = neg[:, 1:] != neg[:, :-1]
    n_cross = change.sum(axis=1)
    k = np.argmax(change, axis=1)
    rows = np.arange(slopes.shape[0])
    s0, s1 = slopes[rows, k], slopes[rows, k + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = s0 / (s0 - s1)
    a, b = steps[k], steps[k + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        logx = 10.0 ** (np.log10(a) + t * (np.log10(b) - np.log10(a)))
    cross = np.where(a > 0, logx, a + t * (b - a))
    return np.where(n_cross > 0, cross, np.nan), n_cross


def depth_crossover(
    values: ArrayLike,
    steps: ArrayLike,
    *,
    layer_of_head: ArrayLike,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """The step where the depth gradient changes sign (METRICS.md §6.2), with a bootstrap CI.

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

    Returns
    -------
    pandas.DataFrame, one row, columns ``CROSSOVER_COLUMNS``:

    - ``n``: heads;
    - ``statistic``: the crossover step: the layer summary is the mean over the layer's
      heads, the slope per step is :func:`depth_gradient`, and the crossover is the
      **first** sign change between consecutive checkpoints, located by linear interpolation
      of the slope in ``log10(step)`` between the two bracketing checkpoints. When the lower
      bracketing checkpoint is step 0 (``log10`` undefined) the interpolation is linear in
      the step itself. A slope of exactly 0 counts as non-negative. NaN when the slope never
      changes sign (``n_crossings = 0``);
    - ``p_value``: NaN always; this is an estimator, not a test;
    - ``effect``: ``fraction_of_training`` (crossover / last step);
    - ``ci_low``, ``ci_high``: percentile interval of the crossover step over bootstrap
      samples that resample heads within layers (every layer stays present), among the
      samples that cross at all (see ``boot_fraction_no_crossing``); NaN if none cross;
    - ``fraction_of_training``: crossover / last step;
    - ``n_crossings``: number of sign changes (the first is reported when there are several);
    - ``boot_fraction_no_crossing``: share of bootstrap samples with no sign change (NaN
      when ``n_boot = 0``);
    - ``first_slope``, ``last_slope``: depth gradient at the first and last checkpoint;
    - ``n_steps``, ``n_layers``.

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
    slopes = depth_gradient(vals @ avg, depth=depth)
    cross, n_cross = _first_crossing(slopes[None, :], st)
    cross, n_cross = float(cross[0]), int(n_cross[0])
    lo = hi = frac_none = np.nan
    if n_boot:
        n = vals.shape[1]
        plan = BootstrapPlan(codes, n, n_boot, seed, resample_clusters=False)
        boots = []
        for idx in plan.chunks():
            for a, b in v.chunks(idx.shape[0], n * vals.shape[0]):
                means = np.einsum("sbh,hl->bsl", vals[:, idx[a:b]], avg)
                boots.append(_first_crossing(depth_gradient(means, depth=depth), st)[0])
        boot = np.concatenate(boots)
        frac_none = float(np.isnan(boot).mean())
        lo, hi = v.percentile_ci(boot, ci)
    frac = cross / st[-1]
    return v.frame(C.CROSSOVER_COLUMNS, {
        C.N: vals.shape[1], C.STATISTIC: cross, C.P_VALUE: np.nan, C.EFFECT: frac,
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
    pandas.DataFrame, one row, columns ``BOUNDARY_RATIO_COLUMNS``:

    - ``n``: heads; ``statistic``: log of the ratio; ``effect``: the ratio;
    - ``p_value``: exact layer-permutation test: every one of the ``C(L, 2)`` choices of two
      layers as "boundary" gives a log ratio; layers are the exchangeable units, so the p is
      the share of choices at least as extreme as the real first-and-last pair (two-sided:
      ``|T - null_center|``, ``null_center`` the mean over all choices). Its smallest value is
      ``1 / C(L, 2)``: with 6 layers (15 choices) it cannot fall below 0.05;
    - ``ci_low``, ``ci_high``: percentile interval of the ratio, resampling heads within
      layers;
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
    lo = hi = np.nan
    if n_boot:
        boot = []
        for idx in BootstrapPlan(codes, x.size, n_boot, seed, resample_clusters=False).chunks():
            sb = summarize(x[idx])
            with np.errstate(invalid="ignore", divide="ignore"):
                boot.append((sb[:, 0] + sb[:, -1]) / 2.0 / sb[:, 1:-1].mean(axis=1))
        lo, hi = v.percentile_ci(np.concatenate(boot), ci)
    return v.frame(C.BOUNDARY_RATIO_COLUMNS, {
        C.N: x.size, C.STATISTIC: t_obs, C.P_VALUE: p, C.EFFECT: mb / mi, C.CI_LOW: lo,
        C.CI_HIGH: hi, C.MEAN_BOUNDARY: mb, C.MEAN_INTERIOR: mi, C.N_LAYERS: n_layers_all,
        C.N_PERM: pairs.shape[0] - 1, C.EXACT: True, C.NULL_CENTER: center,
    })
