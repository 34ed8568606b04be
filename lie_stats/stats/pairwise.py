"""Enrichment of pairwise quantities of heads (e.g. the Killing form): the excess of the most
enriched head over its layer, the boundary-layer enrichment profile, and the shift of that
profile under the functional (value-norm weighted) Killing form (METRICS.md §3.4, §4.4,
§6.1, §6.3, §8).

Every function takes pair matrices ``[..., head, head_j]`` (symmetric; the diagonal and NaN
entries are ignored) and summarizes a layer by a statistic over its pairs ``i < j``:

``"cv"``
    ``std / mean |.|`` with the population std: on ``killing_norm`` (``Khat``) this is
    ``killing_cv`` (METRICS.md §4.4) exactly.
``"mean_abs"``
    ``mean |.|`` over the pairs.

Results are one-row DataFrames whose first columns are :data:`lie_stats.columns.STAT_COLUMNS`
followed by the columns named in this module's ``*_COLUMNS`` tuples.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lie_stats.errors import StatsInputError
from lie_stats.forms import functional_killing
from lie_stats.columns import (BOOT_FRACTION_UNDEFINED, BOUNDARY_ENRICHMENT_COLUMNS,
                                     BOUNDARY_TOP2, CI_HIGH, CI_LOW, EFFECT, ENRICHMENT_FIRST_LAYER,
                                     ENRICHMENT_FIRST_LAYER_CI_HIGH, ENRICHMENT_FIRST_LAYER_CI_LOW,
                                     ENRICHMENT_LAST_LAYER, ENRICHMENT_LAST_LAYER_CI_HIGH,
                                     ENRICHMENT_LAST_LAYER_CI_LOW, EXACT, FUNCTIONAL_SHIFT_COLUMNS,
                                     HEAD_EXCESS_COLUMNS, LAYER_ENRICHMENT_AT_MAX, MAX_HEAD_ENRICHMENT,
                                     MAX_RATIO, MAX_RATIO_UNIT, MEAN_BOUNDARY, MEAN_INTERIOR, N as N_,
                                     NULL_CENTER, NULL_RATIO, N_HEADS, N_LAYERS, N_PERM, N_STEPS,
                                     P_OPPOSITE, P_VALUE, RATIO_FUNCTIONAL, RATIO_TOTAL, STATISTIC,
                                     STAT_COLUMNS)
from lie_stats.stats import _validate as v
from lie_stats.stats.permutation import permutation_pvalue

__all__ = [
    "PAIR_SUMMARIES",
    "symmetric_pairs",
    "pair_summary",
    "row_summary",
    "head_enrichment_excess",
    "boundary_enrichment",
    "functional_boundary_shift", "EXACT_FLIP_UNITS",
]

#: Layer summaries of a pair matrix (see the module docstring).
PAIR_SUMMARIES = ("cv", "mean_abs")


_OPPOSITE = {"greater": "less", "less": "greater"}
#: Most layers whose 2**L sign vectors :func:`head_enrichment_excess` enumerates exactly.
EXACT_FLIP_UNITS = 12


def _p_opposite(t_obs: float, t_null: np.ndarray, alternative: str) -> float:
    """One-sided permutation p in the direction opposite to ``alternative`` (NaN if two-sided)."""
    if alternative not in _OPPOSITE:
        return float("nan")
    return permutation_pvalue(t_obs, t_null, alternative=_OPPOSITE[alternative])


def _undefined_share(boot: np.ndarray) -> float:
    return float(np.mean(~np.isfinite(boot))) if boot.size else float("nan")


# ----------------------------------------------------------------------------- summaries


def _summarize(x: np.ndarray, mask: np.ndarray, summary: str, axis: tuple[int, ...]) -> np.ndarray:
    """Summary of ``x`` over the entries where ``mask`` holds, reducing ``axis`` (NaN if none)."""
    cnt = mask.sum(axis=axis)
    xz = np.where(mask, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mabs = np.abs(xz).sum(axis=axis) / cnt
        if summary == "mean_abs":
            return np.where(cnt > 0, mabs, np.nan)
        mean = xz.sum(axis=axis) / cnt
        dev = np.where(mask, x - np.expand_dims(mean, axis), 0.0)
        std = np.sqrt((dev * dev).sum(axis=axis) / cnt)
        return np.where(cnt > 0, std / mabs, np.nan)


def symmetric_pairs(x: np.ndarray) -> np.ndarray:
    """Pair matrices ``[..., H, H]`` with the NaN side filled from its transpose: a cube
    selection keeps pairs ``i < j`` only (``lie_stats.spec.select``).

    Examples
    --------
    >>> symmetric_pairs(np.array([[np.nan, 0.5], [np.nan, np.nan]]))
    array([[nan, 0.5],
           [0.5, nan]])
    """
    return np.where(np.isnan(x), np.swapaxes(x, -1, -2), x)


def _square(matrix: ArrayLike, *, name: str, where: str) -> np.ndarray:
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise StatsInputError(f"{where}: {name} must be numeric ({e}).") from e
    if m.ndim < 2 or m.shape[-1] != m.shape[-2]:
        raise StatsInputError(f"{where}: {name} must end in a square (head, head_j) pair matrix, "
                              f"got shape {m.shape}.")
    if np.isinf(m).any():
        raise StatsInputError(f"{where}: {name} holds infinite values.")
    return m


def pair_summary(matrix: ArrayLike, *, summary: str = "cv") -> np.ndarray:
    """Summary over the pairs ``i < j`` of pair matrices (METRICS.md §4.4 for ``"cv"``).

    Parameters
    ----------
    matrix : array-like, shape ``[..., H, H]``
        Pair matrices; only the upper triangle ``i < j`` is read, NaN pairs are left out.
    summary : {"cv", "mean_abs"}
        ``std / mean |.|`` (population std) or ``mean |.|``.

    Returns
    -------
    numpy.ndarray, shape ``[...]``
        NaN where no pair is finite.

    Examples
    --------
    >>> K = np.array([[1.0, 0.2, 0.4], [0.2, 1.0, 0.6], [0.4, 0.6, 1.0]])
    >>> round(float(pair_summary(K)), 6)  # std([.2, .4, .6]) / mean(|.|)
    0.408248
    >>> round(float(pair_summary(K, summary="mean_abs")), 6)
    0.4
    """
    where = "pair_summary"
    v.choice(summary, PAIR_SUMMARIES, name="summary", where=where)
    m = _square(matrix, name="matrix", where=where)
    h = m.shape[-1]
    mask = np.triu(np.ones((h, h), dtype=bool), 1) & ~np.isnan(m)
    return _summarize(m, mask, summary, (-2, -1))


def row_summary(matrix: ArrayLike, *, summary: str = "cv") -> np.ndarray:
    """Per-head summary over the head's own pairs ``(h, j)``, ``j != h`` (its row).

    The head-level restriction of :func:`pair_summary`: the same statistic over the pairs a
    head belongs to. Upper and lower triangles are both read, so pass symmetric matrices.

    Parameters
    ----------
    matrix : array-like, shape ``[..., H, H]``
    summary : {"cv", "mean_abs"}

    Returns
    -------
    numpy.ndarray, shape ``[..., H]``
        NaN for a head without a finite pair.

    Examples
    --------
    >>> K = np.array([[1.0, 0.2, 0.4], [0.2, 1.0, 0.6], [0.4, 0.6, 1.0]])
    >>> np.round(row_summary(K, summary="mean_abs"), 6).tolist()
    [0.3, 0.4, 0.5]
    """
    where = "row_summary"
    v.choice(summary, PAIR_SUMMARIES, name="summary", where=where)
    m = _square(matrix, name="matrix", where=where)
    h = m.shape[-1]
    mask = ~np.eye(h, dtype=bool) & ~np.isnan(m)
    return _summarize(m, mask, summary, (-1,))


# ----------------------------------------------------------------------------- head over layer


def head_enrichment_excess(
    head_values: Sequence[ArrayLike],
    layer_values: Sequence[ArrayLike],
    *,
    n_perm: int = 9999,
    seed: int = 0,
    n_boot: int = 2000,
    ci: float = 0.95,
    alternative: str = "greater",
) -> pd.DataFrame:
    """How far the most enriched head of a layer exceeds the layer's own enrichment, against
    a null of heads whose departures from their layer do not persist.

    For each layer (unit) ``l`` with per-head trajectories ``V[t, h] > 0`` and a layer
    trajectory ``W[t] > 0`` over the same checkpoints ``t = 0..S-1``: head enrichment
    ``e_h = V[S-1, h] / V[0, h]``, layer enrichment ``e_l = W[S-1] / W[0]`` (METRICS.md
    §6.1), and ``R_l = max_h e_h / e_l``. The effect is ``exp(mean_l log R_l)``.

    Parameters
    ----------
    head_values : sequence of array-like, each ``[S_l, H_l]``
        Per-head values of each layer over its checkpoints (finite, positive); ``S_l >= 3``,
        ``H_l >= 2``. Layers of different models may be pooled (each is its own unit).
    layer_values : sequence of array-like, each ``[S_l]``
        The layer's value at the same checkpoints (finite, positive).
    n_perm : int
        Monte Carlo sign vectors when there are more than :data:`EXACT_FLIP_UNITS` layers
        (drawn with replacement, Phipson & Smyth 2010); with fewer all ``2**L`` are
        enumerated and the p is exact.
    seed : int
        Seed of the sign vectors (the bootstrap uses ``seed + 1``).
    n_boot, ci
        Bootstrap of layers (units) for the interval of the effect; 0 skips it.
    alternative : {"greater", "less", "two-sided"}
        ``"greater"``: the most enriched head exceeds its null (the claim).

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`HEAD_EXCESS_COLUMNS`:

    - ``n``: layers; ``effect``: ``exp(mean_l log R_l)``, the geometric mean over layers of
      ``max head enrichment / layer enrichment``;
    - ``statistic``: ``T = mean_l max_h c_lh``, where ``d_lh = log R`` of head ``h`` alone,
      ``(log V[S-1, h] - log W[S-1]) - (log V[0, h] - log W[0])``, is the change of the head's
      log departure ``u[t, h] = log V[t, h] - log W[t]`` from its layer, and ``c_lh = d_lh -
      mean_h d_lh`` centres it within the layer (a change every head of the layer shares is
      a layer effect, not a head's);
    - ``p_value``: sign-flip (time-reversal) p of ``T``. Null: each layer's departures
      ``u[t, .]`` are a stationary process whose joint law is the same run forwards and
      backwards (heads that wander around their layer and revert, any autocorrelation,
      correlated heads; Gaussian stationary processes of exchangeable heads are
      time-reversible). Reversing time maps a layer's changes ``c_l.`` to ``-c_l.``, so its
      term ``max_h c_lh`` to ``-min_h c_lh``; the layers' signs are flipped independently.
      A head that keeps departing from its layer in one direction (a persistent head
      effect) makes ``max_h c`` exceed ``-min_h c``. Unlike a per-transition shuffle of the
      increments, this keeps each head's temporal dependence: mean-reverting departures
      give ``var(sum of increments) < sum of their variances``, which a shuffle across
      transitions ignores, and a permutation of whole head trajectories among a layer's
      heads leaves ``max_h`` unchanged (no null at all);
    - ``ci_low``, ``ci_high``: percentile interval of the effect resampling layers (NaN
      with one layer or ``n_boot = 0``; descriptive);
    - ``max_ratio``, ``max_ratio_unit``, ``max_head_enrichment``,
      ``layer_enrichment_at_max``: the layer with the largest ``R_l`` (the essay's
      "a head at 119.7x in a layer at 4.9x"); ``null_ratio``: the effect expected under the
      null, ``exp(null mean of T + mean_l mean_h d_lh)``; ``p_opposite``: the one-sided p
      in the other direction (for ``"greater"``: the largest head shortfall exceeds the
      largest head excess beyond what time reversal gives; NaN when two-sided);
      ``n_heads``, ``n_steps`` (largest ``S_l``), ``n_perm`` (sign vectors other than the
      identity), ``exact``.

    Raises
    ------
    StatsInputError
        Mismatched shapes, fewer than 3 checkpoints or 2 heads in a layer, non-positive or
        non-finite values, no layer at all, bad options.

    Notes
    -----
    Under the null, ``max_h e_h`` exceeds ``e_l`` by chance (a maximum of noisy heads): time
    reversal gives that expectation (``null_ratio``) from the data. Sign-flip tests of
    time-reversibility: Ramsey & Rothman (1996), doi:10.2307/1392434; the layers are the
    independent units, as in a one-sample sign-flip test (Good 2005, §3.1).

    Examples
    --------
    >>> t = np.arange(6.0)[:, None]
    >>> V = np.exp(0.1 * t * np.array([[1.0, 1.0, 1.0, 4.0]]))  # head 3 grows fastest
    >>> W = V.mean(axis=1)
    >>> res = head_enrichment_excess([V] * 6, [W] * 6, n_perm=199, n_boot=0)
    >>> round(float(res["max_head_enrichment"].iloc[0]), 3), float(res["p_value"].iloc[0])
    (7.389, 0.015625)
    """
    where = "head_enrichment_excess"
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    n_perm = v.positive_int(n_perm, name="n_perm", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    ci = v.level(ci, name="ci", where=where)
    seed = v.seed_value(seed, where=where)
    heads, layers = list(head_values), list(layer_values)
    if not heads or len(heads) != len(layers):
        raise StatsInputError(f"{where}: needs one head_values and one layer_values array per layer; "
                              f"got {len(heads)} and {len(layers)}.")
    up, down, shift, m_obs, lw = [], [], [], [], []
    n_heads = n_steps = 0
    for i, (hv, lv) in enumerate(zip(heads, layers)):
        try:
            V = np.asarray(hv, dtype=np.float64)
            W = np.asarray(lv, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as e:
            raise StatsInputError(f"{where}: layer {i}: values must be numeric ({e}).") from e
        if V.ndim != 2 or V.shape[0] < 3 or V.shape[1] < 2:
            raise StatsInputError(f"{where}: layer {i}: head_values must be [n_steps >= 3, n_heads >= 2], "
                                  f"got shape {V.shape}.")
        if W.size != V.shape[0]:
            raise StatsInputError(f"{where}: layer {i}: layer_values has {W.size} checkpoints, "
                                  f"head_values {V.shape[0]}.")
        for name, a in (("head_values", V), ("layer_values", W)):
            if not (np.isfinite(a).all() and (a > 0).all()):
                raise StatsInputError(f"{where}: layer {i}: {name} must be finite and positive "
                                      f"(enrichment is a ratio, METRICS.md §6.1); min {np.nanmin(a)}.")
        lv_ = np.log(V)
        d = (lv_[-1] - lv_[0]) - float(np.log(W[-1] / W[0]))  # change of each head's departure
        c = d - d.mean()
        up.append(float(c.max()))
        down.append(float(-c.min()))
        shift.append(float(d.mean()))
        m_obs.append(float(np.max(lv_[-1] - lv_[0])))
        lw.append(float(np.log(W[-1] / W[0])))
        n_heads += V.shape[1]
        n_steps = max(n_steps, V.shape[0])
    up_a, down_a = np.array(up), np.array(down)
    m_obs_a, lw_a = np.array(m_obs), np.array(lw)
    log_r = m_obs_a - lw_a
    n_units = log_r.size
    t_obs = float(up_a.mean())

    # sign-flip (time-reversal) null: exact below EXACT_FLIP_UNITS layers, else Monte Carlo
    exact = n_units <= EXACT_FLIP_UNITS
    if exact:
        signs = ((np.arange(1, 2 ** n_units)[:, None] >> np.arange(n_units)) & 1).astype(bool)
        forward = ~signs  # every sign vector but the identity (all forward)
    else:
        rng = np.random.default_rng(seed)
        forward = np.concatenate([rng.random((b - a, n_units)) < 0.5
                                  for a, b in v.chunks(n_perm, n_units)])
    t_null = np.where(forward, up_a, down_a).mean(axis=1)
    center = float(t_null.mean())
    p = permutation_pvalue(t_obs, t_null, alternative=alternative, center=center)
    p_opp = _p_opposite(t_obs, t_null, alternative)
    lo = hi = np.nan
    if n_boot and n_units >= 2:
        brng = np.random.default_rng(seed + 1)
        boot = [np.exp(log_r[brng.integers(0, n_units, size=(b - a, n_units))].mean(axis=1))
                for a, b in v.chunks(n_boot, n_units)]
        lo, hi = v.percentile_ci(np.concatenate(boot), ci)
    k = int(np.argmax(log_r))
    return v.frame(HEAD_EXCESS_COLUMNS, {
        N_: n_units, STATISTIC: t_obs, P_VALUE: p, EFFECT: float(np.exp(log_r.mean())),
        CI_LOW: lo, CI_HIGH: hi, MAX_RATIO: float(np.exp(log_r[k])), MAX_RATIO_UNIT: k,
        MAX_HEAD_ENRICHMENT: float(np.exp(m_obs_a[k])), LAYER_ENRICHMENT_AT_MAX: float(np.exp(lw_a[k])),
        NULL_RATIO: float(np.exp(center + np.mean(shift))), P_OPPOSITE: p_opp, N_HEADS: n_heads,
        N_STEPS: n_steps, N_PERM: int(t_null.size), EXACT: bool(exact),
    })


# ----------------------------------------------------------------------------- boundary layers


def _layer_stack(first: ArrayLike, last: ArrayLike, where: str) -> tuple[np.ndarray, np.ndarray]:
    f = _square(first, name="first", where=where)
    l_ = _square(last, name="last", where=where)
    if f.ndim != 3 or f.shape != l_.shape:
        raise StatsInputError(f"{where}: first and last must both be [n_layers, H, H], got "
                              f"{f.shape} and {l_.shape}.")
    return symmetric_pairs(f), symmetric_pairs(l_)


def _boot_pairs(m: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Resampled pair matrices ``[B, L, H, H]`` and the mask of usable pairs (p < q, distinct
    original heads, finite) for head indices ``idx`` ``[B, L, H]``."""
    L = m.shape[0]
    lay = np.arange(L)[None, :, None, None]
    x = m[lay, idx[..., :, None], idx[..., None, :]]
    h = m.shape[-1]
    upper = np.triu(np.ones((h, h), dtype=bool), 1)
    mask = upper & (idx[..., :, None] != idx[..., None, :]) & ~np.isnan(x)
    # a layer resampled to fewer than 3 distinct heads has at most one distinct pair: its
    # summary is undefined there (as for a layer of fewer than 3 heads), the replicate dropped
    srt = np.sort(idx, axis=-1)
    distinct = 1 + (np.diff(srt, axis=-1) != 0).sum(axis=-1)
    mask &= (distinct >= 3)[..., None, None]
    return x, mask


def _pair_mask(m: np.ndarray) -> np.ndarray:
    h = m.shape[-1]
    return np.triu(np.ones((h, h), dtype=bool), 1) & ~np.isnan(m)


def _boundary(e: np.ndarray) -> np.ndarray:
    """Boundary ratio (METRICS.md §6.3) of per-layer values ``[..., L]``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (e[..., 0] + e[..., -1]) / 2.0 / e[..., 1:-1].mean(axis=-1)


def _check_layers(f: np.ndarray, where: str, need_pairs: int) -> None:
    n_layers = f.shape[0]
    if n_layers < 3:
        raise StatsInputError(f"{where}: needs at least 3 layers (boundary and interior), got {n_layers}.")
    pairs = _pair_mask(f).sum(axis=(-2, -1))
    if (pairs < need_pairs).any():
        raise StatsInputError(f"{where}: every layer needs at least {need_pairs} finite pairs "
                              f"(3 heads); pairs per layer: {pairs.tolist()}.")


# ----------------------------------------------------------------------------- boundary enrichment


def boundary_enrichment(
    first: ArrayLike,
    last: ArrayLike,
    *,
    summary: str = "cv",
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    alternative: str = "greater",
) -> pd.DataFrame:
    """Enrichment profile of a pair form over layers: boundary layers over interior layers
    (METRICS.md §6.1, §6.3).

    Each layer's enrichment is ``E_l = s(last_l) / s(first_l)`` where ``s`` is the pair
    summary (:func:`pair_summary`; ``"cv"`` of ``killing_norm`` is ``killing_cv``), and the
    boundary ratio is ``((E_0 + E_{L-1}) / 2) / mean(E_1 .. E_{L-2})``.

    Parameters
    ----------
    first, last : array-like, shape ``[L, H, H]``
        One model's pair matrices at the first and last checkpoint, layers in depth order
        (symmetric or upper-triangular; the pairs ``i < j`` are read; NaN pairs left out).
    summary : {"cv", "mean_abs"}
    n_boot, ci, seed
        Bootstrap of heads within layers (0 skips the interval).
    alternative : {"greater", "less", "two-sided"}
        ``"greater"``: boundary layers more enriched than the interior (the claim).

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`BOUNDARY_ENRICHMENT_COLUMNS`:

    - ``n``: layers; ``statistic``: log of the boundary ratio; ``effect``: the ratio;
    - ``p_value``: exact layer-permutation test: each of the ``C(L, 2)`` choices of two
      layers as "boundary" gives a log ratio; the p is the share at least as extreme as the
      real first-and-last pair (``two-sided`` measures distances from ``null_center``, the
      mean over all choices). Smallest value ``1 / C(L, 2)``;
    - ``ci_low``, ``ci_high``: percentile interval of the ratio, resampling heads with
      replacement within each layer (the same heads at both checkpoints: paired); a pair
      of two copies of one head is left out; replicates where a summary is undefined are
      dropped;
    - ``enrichment_first_layer``, ``enrichment_last_layer`` (``E_0``, ``E_{L-1}``, the
      essay's L0 76.5x and L11 42.1x), ``mean_boundary``, ``mean_interior``,
      ``enrichment_first_layer_ci_low`` / ``_ci_high`` and ``enrichment_last_layer_ci_low`` /
      ``_ci_high`` (percentile intervals of ``E_0`` and ``E_{L-1}`` over the same
      replicates as the ratio's, each ignoring the replicates where it is undefined),
      ``boundary_top2`` (1 when ``E_0`` and ``E_{L-1}`` are the two largest), ``p_opposite``
      (the one-sided p in the other direction; NaN when two-sided),
      ``boot_fraction_undefined`` (share of replicates left out), ``n_layers``,
      ``n_heads`` (heads per layer), ``n_perm`` (``C(L, 2) - 1``), ``exact`` (1),
      ``null_center``.

    Raises
    ------
    StatsInputError
        Shapes, fewer than 3 layers, a layer with fewer than 3 finite pairs, a summary that
        is not positive (enrichment is a ratio), bad options.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> f = rng.uniform(0.5, 1.5, size=(5, 4, 4))
    >>> grow = np.array([4.0, 1.0, 1.0, 1.0, 3.0])[:, None, None]
    >>> l = f * np.where(rng.random((5, 4, 4)) < 0.5, grow, 1.0)
    >>> res = boundary_enrichment(f, l, summary="mean_abs", n_boot=0)
    >>> bool(res["effect"].iloc[0] > 1), int(res["n_perm"].iloc[0])
    (True, 9)
    """
    where = "boundary_enrichment"
    v.choice(summary, PAIR_SUMMARIES, name="summary", where=where)
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    ci = v.level(ci, name="ci", where=where)
    seed = v.seed_value(seed, where=where)
    f, l_ = _layer_stack(first, last, where)
    _check_layers(f, where, 3)
    _check_layers(l_, where, 3)
    sf, sl = (_summarize(m, _pair_mask(m), summary, (-2, -1)) for m in (f, l_))
    if not ((sf > 0).all() and (sl > 0).all()):
        raise StatsInputError(f"{where}: the layer summaries must be positive for an enrichment "
                              f"ratio; first {sf.tolist()}, last {sl.tolist()}.")
    e = sl / sf
    n_layers = e.size
    ratio = float(_boundary(e))
    t_obs = float(np.log(ratio))
    pairs = np.array(list(itertools.combinations(range(n_layers), 2)))
    pb = e[pairs].mean(axis=1)
    t_all = np.log(pb / ((e.sum() - 2.0 * pb) / (n_layers - 2)))
    observed = (pairs[:, 0] == 0) & (pairs[:, 1] == n_layers - 1)
    center = float(t_all.mean())
    p = permutation_pvalue(t_obs, t_all[~observed], alternative=alternative, center=center)
    p_opp = _p_opposite(t_obs, t_all[~observed], alternative)
    lo = hi = frac_undef = np.nan
    ends = {k: (np.nan, np.nan) for k in ("first", "last")}
    if n_boot:
        h = f.shape[-1]
        rng = np.random.default_rng(seed)
        boot, boot_e = [], []
        for a, b in v.chunks(n_boot, n_layers * h * h):
            idx = rng.integers(0, h, size=(b - a, n_layers, h))
            s = [_summarize(*_boot_pairs(m, idx), summary, (-2, -1)) for m in (f, l_)]
            with np.errstate(invalid="ignore", divide="ignore"):
                e_b = s[1] / s[0]
                boot.append(_boundary(e_b))
            boot_e.append(e_b[..., [0, -1]])
        boot_a = np.concatenate(boot)
        frac_undef = _undefined_share(boot_a)
        lo, hi = v.percentile_ci(boot_a, ci)
        boot_ends = np.concatenate(boot_e)
        ends = {"first": v.percentile_ci(boot_ends[:, 0], ci), "last": v.percentile_ci(boot_ends[:, 1], ci)}
    top2 = set(np.argsort(-e, kind="stable")[:2].tolist()) == {0, n_layers - 1}
    return v.frame(BOUNDARY_ENRICHMENT_COLUMNS, {
        N_: n_layers, STATISTIC: t_obs, P_VALUE: p, EFFECT: ratio, CI_LOW: lo,
        CI_HIGH: hi, ENRICHMENT_FIRST_LAYER: float(e[0]), ENRICHMENT_LAST_LAYER: float(e[-1]),
        MEAN_BOUNDARY: float((e[0] + e[-1]) / 2), MEAN_INTERIOR: float(e[1:-1].mean()),
        BOUNDARY_TOP2: top2, P_OPPOSITE: p_opp, BOOT_FRACTION_UNDEFINED: frac_undef, N_LAYERS: n_layers, N_HEADS: f.shape[-1],
        N_PERM: pairs.shape[0] - 1, EXACT: True, NULL_CENTER: center,
        ENRICHMENT_FIRST_LAYER_CI_LOW: ends["first"][0], ENRICHMENT_FIRST_LAYER_CI_HIGH: ends["first"][1],
        ENRICHMENT_LAST_LAYER_CI_LOW: ends["last"][0], ENRICHMENT_LAST_LAYER_CI_HIGH: ends["last"][1],
    })


# ----------------------------------------------------------------------------- functional form


def functional_boundary_shift(
    k_first: ArrayLike,
    k_last: ArrayLike,
    w_first: ArrayLike,
    w_last: ArrayLike,
    *,
    summary: str = "cv",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    alternative: str = "less",
) -> pd.DataFrame:
    """Boundary enrichment of the functional Killing form relative to the total form
    (METRICS.md §8, §6.1, §6.3).

    The functional form is ``Kf[i,j] = K[i,j] w_i w_j`` with ``w_h`` the head's
    ``value_norm`` over its layer's mean, at each checkpoint with that checkpoint's value
    norms. Each form's boundary ratio is computed as in :func:`boundary_enrichment` (layer
    enrichment last / first of the pair summary, mean of the first and last layer over the
    interior mean); the effect is ``ratio_functional / ratio_total``.

    Parameters
    ----------
    k_first, k_last : array-like, shape ``[L, H, H]``
        The (unnormalized) Killing form of one model at the first and last checkpoint.
        The normalized ``Khat`` cannot be used: the weights cancel in it.
    w_first, w_last : array-like, shape ``[L, H]``
        ``value_norm`` at the same checkpoints (finite, positive).
    summary : {"cv", "mean_abs"}
    n_perm : int
        Monte Carlo permutations of the weights.
    n_boot, ci, seed
        Bootstrap of heads within layers (0 skips it); the permutations use ``seed``, the
        bootstrap ``seed + 1``.
    alternative : {"less", "greater", "two-sided"}
        ``"less"``: the weighting lowers the boundary enrichment (the claim).

    Returns
    -------
    pandas.DataFrame, one row, columns :data:`FUNCTIONAL_SHIFT_COLUMNS`:

    - ``n``: layers; ``statistic``: ``log(ratio_functional / ratio_total)``; ``effect``:
      ``ratio_functional / ratio_total``;
    - ``p_value``: permutation test of the weights' assignment. Null: within each layer the
      heads' value norms are unrelated to their Killing geometry, so each head's pair
      ``(w_first, w_last)`` is exchangeable among the layer's heads. Each permutation
      reassigns these pairs among the heads of every layer (independently per layer) and
      recomputes ``ratio_functional``; ``ratio_total`` does not move. So the test asks
      whether the value-norm weighting moves the boundary enrichment more than weights of
      the same distribution assigned at random;
    - ``ci_low``, ``ci_high``: percentile interval of the effect, resampling heads within
      layers (the same heads for both forms and both checkpoints; weights normalized by the
      resample's layer mean); undefined replicates dropped;
    - ``ratio_total``, ``ratio_functional``, ``p_opposite`` (the one-sided p in the other
      direction; NaN when two-sided), ``boot_fraction_undefined`` (replicates left out), ``n_layers``, ``n_heads``, ``n_perm``, ``exact`` (0),
      ``null_center`` (the permutation mean of the statistic).

    Raises
    ------
    StatsInputError
        Shapes, fewer than 3 layers or pairs, non-positive weights or summaries, bad options.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> k0 = rng.normal(size=(4, 5, 5)); k1 = 3 * k0
    >>> k1[[0, -1], 0, :] *= 20; k1[[0, -1], :, 0] *= 20   # head 0 drives the boundary
    >>> w0 = np.ones((4, 5)); w1 = np.ones((4, 5)); w1[[0, -1], 0] = 0.05  # ... with no value
    >>> res = functional_boundary_shift(k0, k1, w0, w1, summary="mean_abs", n_perm=199, n_boot=0)
    >>> bool(res["effect"].iloc[0] < 1)
    True
    """
    where = "functional_boundary_shift"
    v.choice(summary, PAIR_SUMMARIES, name="summary", where=where)
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    n_perm = v.positive_int(n_perm, name="n_perm", where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    ci = v.level(ci, name="ci", where=where)
    seed = v.seed_value(seed, where=where)
    kf, kl = _layer_stack(k_first, k_last, where)
    _check_layers(kf, where, 3)
    _check_layers(kl, where, 3)
    n_layers, h = kf.shape[0], kf.shape[-1]
    ws = []
    for name, w in (("w_first", w_first), ("w_last", w_last)):
        try:
            a = np.asarray(w, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise StatsInputError(f"{where}: {name} must be numeric ({e}).") from e
        if a.shape != (n_layers, h):
            raise StatsInputError(f"{where}: {name} must be [n_layers, H] = {(n_layers, h)}, got {a.shape}.")
        if not (np.isfinite(a).all() and (a > 0).all()):
            raise StatsInputError(f"{where}: {name} (value_norm) must be finite and positive.")
        ws.append(a)
    wf, wl = ws
    mask_f, mask_l = _pair_mask(kf), _pair_mask(kl)

    def ratio(k0: np.ndarray, k1: np.ndarray, m0: np.ndarray, m1: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return _boundary(_summarize(k1, m1, summary, (-2, -1)) / _summarize(k0, m0, summary, (-2, -1)))

    r_total = float(ratio(kf, kl, mask_f, mask_l))
    r_func = float(ratio(functional_killing(kf, wf), functional_killing(kl, wl), mask_f, mask_l))
    if not (np.isfinite(r_total) and np.isfinite(r_func) and r_total > 0 and r_func > 0):
        raise StatsInputError(f"{where}: the boundary ratios must be positive and finite; total "
                              f"{r_total}, functional {r_func} (a layer summary is 0 or negative).")
    t_obs = float(np.log(r_func / r_total))
    rng = np.random.default_rng(seed)
    t_null = []
    lay = np.arange(n_layers)[None, :, None]
    for a, b in v.chunks(n_perm, 2 * n_layers * h * h):
        perm = rng.permuted(np.broadcast_to(np.arange(h), (b - a, n_layers, h)), axis=-1)
        pf, pl = wf[lay, perm], wl[lay, perm]
        with np.errstate(invalid="ignore", divide="ignore"):
            t_null.append(np.log(ratio(functional_killing(kf, pf), functional_killing(kl, pl), mask_f, mask_l) / r_total))
    t_null_a = np.concatenate(t_null)
    center = float(t_null_a.mean()) if np.isfinite(t_null_a).all() else np.nan
    p = permutation_pvalue(t_obs, t_null_a, alternative=alternative, center=center)
    p_opp = _p_opposite(t_obs, t_null_a, alternative)
    lo = hi = frac_undef = np.nan
    if n_boot:
        brng = np.random.default_rng(seed + 1)
        lay4 = np.arange(n_layers)[None, :, None]
        boot = []
        for a, b in v.chunks(n_boot, 4 * n_layers * h * h):
            idx = brng.integers(0, h, size=(b - a, n_layers, h))
            (x0, m0), (x1, m1) = _boot_pairs(kf, idx), _boot_pairs(kl, idx)
            bwf, bwl = wf[lay4, idx], wl[lay4, idx]
            with np.errstate(invalid="ignore", divide="ignore"):
                boot.append(ratio(functional_killing(x0, bwf), functional_killing(x1, bwl), m0, m1) / ratio(x0, x1, m0, m1))
        boot_a = np.concatenate(boot)
        frac_undef = _undefined_share(boot_a)
        lo, hi = v.percentile_ci(boot_a, ci)
    return v.frame(FUNCTIONAL_SHIFT_COLUMNS, {
        N_: n_layers, STATISTIC: t_obs, P_VALUE: p, EFFECT: float(np.exp(t_obs)),
        CI_LOW: lo, CI_HIGH: hi, RATIO_TOTAL: r_total, RATIO_FUNCTIONAL: r_func,
        P_OPPOSITE: p_opp, BOOT_FRACTION_UNDEFINED: frac_undef, N_LAYERS: n_layers, N_HEADS: h, N_PERM: n_perm, EXACT: False,
        NULL_CENTER: center,
    })
