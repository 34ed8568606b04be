"""Head classes (anchor / worker labels, METRICS.md §8) against head metrics, nested in layers.

Four families of questions about labelled heads:

* :func:`class_auc`: does a metric separate one class from the others (area under the ROC
  curve, computed from head pairs **within** layers, within-layer permutation p)?
* :func:`threshold_agreement`: does a classifier agree with the labels beyond chance (Cohen's
  kappa with chance agreement computed within layers, within-layer permutation p)?
  :func:`threshold_zones` is the bidirectional threshold classifier, :func:`cohen_kappa`
  the plain statistic.
* :func:`class_interaction`: do two classes differ in the slope of ``y`` on ``x`` (OLS with
  layer fixed effects, Freedman-Lane permutation of the reduced model's residuals within
  layers)?
* :func:`time_to_fraction`: per unit, when a trajectory first reaches a fraction of its
  final value (interpolated in ``log10(step)`` or in step); its group comparison is
  :func:`lie_stats.stats.group_difference`.

Every p-value here is a within-strata permutation p by the ``(1 + count) / (1 + B)`` rule
(:func:`lie_stats.stats.permutation_pvalue`), and every effect is defined so that its
within-strata permutation expectation is the null value (0.5 for an AUC, 0 for a kappa or an
interaction): a layer-level confound (one class concentrated in layers whose values are
larger) moves neither the test nor the effect. The false-positive rates are checked on
simulated layer-confounded nulls in ``tests/stats/test_classification.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import (AGREEMENT, AGREEMENT_COLUMNS, AUC_COLUMNS, AUC_POOLED,
                                     BALANCED_ACCURACY, CHANCE_AGREEMENT, GROUP_EFFECT,
                                     INTERACTION_COLUMNS, KAPPA_POOLED, N_CLASSES, N_NEGATIVE, N_PAIRS,
                                     N_POSITIVE, P_PARAMETRIC, SLOPE_GROUP0, SLOPE_GROUP1)
from lie_stats.stats.permutation import BootstrapPlan, strata_codes, PermutationPlan, permutation_pvalue

__all__ = [
    "class_auc",
    "threshold_agreement",
    "cohen_kappa",
    "threshold_zones",
    "class_interaction",
    "time_to_fraction",
    "TIME_SCALES",
]

#: Interpolation scales of :func:`time_to_fraction`.
TIME_SCALES = ("log", "linear")


# ----------------------------------------------------------------------------- helpers


def _binary(g: ArrayLike, n: int, *, name: str, where: str) -> np.ndarray:
    """Boolean (or 0/1) membership vector of length ``n``."""
    arr = np.asarray(g)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise StatsInputError(f"{where}: {name} must be 1-D with one entry per observation ({n}), "
                              f"got shape {arr.shape}.")
    if arr.dtype == bool:
        return arr.copy()
    if arr.dtype.kind in "iuf" and np.isin(arr, (0, 1)).all():
        return arr.astype(bool)
    raise StatsInputError(f"{where}: {name} must be boolean (or 0/1), got values "
                          f"{np.unique(arr).tolist()[:10]}.")


def _strata_codes(strata: ArrayLike | None, n: int, where: str) -> np.ndarray:
    return np.zeros(n, dtype=np.intp) if strata is None else strata_codes(strata, n, name="strata", where=where)


def _within_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs ``(i, j)``, ``i != j``, of units in the same stratum."""
    i, j = [], []
    for s in range(int(codes.max()) + 1):
        m = np.flatnonzero(codes == s)
        a, b = np.meshgrid(m, m, indexing="ij")
        off = a != b
        i.append(a[off])
        j.append(b[off])
    return np.concatenate(i), np.concatenate(j)


def _within_ranks(x: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Average ranks of ``x`` inside each stratum."""
    r = np.empty_like(x)
    for s in range(int(codes.max()) + 1):
        m = codes == s
        r[m] = v.rank(x[m])
    return r


def check_correlation_options(where: str, alternative: str, n_perm: int, n_boot: int, ci: float,
                  seed: int) -> tuple[int, int, float, int]:
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    return (v.positive_int(n_perm, name="n_perm", where=where),
            v.positive_int(n_boot, name="n_boot", where=where, minimum=0),
            v.level(ci, name="ci", where=where), v.seed_value(seed, where=where))


# ----------------------------------------------------------------------------- AUC


def class_auc(
    x: ArrayLike,
    positive: ArrayLike,
    *,
    strata: ArrayLike | None,
    alternative: str = "two-sided",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Area under the ROC curve of ``x`` for one class against the rest, within strata.

    Parameters
    ----------
    x : array-like, shape ``[n]``
        The score (one value per head); NaN rows are dropped.
    positive : array-like of bool, shape ``[n]``
        Class membership (``True``: the class, e.g. anchors; ``False``: the rest).
    strata : array-like of length n, or None
        Required keyword: stratum (layer) of each unit; ``None`` explicitly for the
        ordinary AUC with free permutation.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: the class scores higher (AUC above 0.5).
    n_perm, n_boot, ci, seed
        Permutations of the labels within strata, two-stage cluster-bootstrap draws
        (``n_boot=0`` skips the interval), its level, and the seed.

    Returns
    -------
    pandas.DataFrame, one row, columns ``AUC_COLUMNS``:

    - ``n``: units used; ``statistic`` and ``effect``: the **within-strata AUC**: over
      the (positive, negative) pairs of units in the same stratum, the share where the
      positive unit scores higher, ties counting one half. Without strata it is the
      ordinary AUC (``sklearn.metrics.roc_auc_score``; Mann-Whitney ``U / (n1 n0)``);
      with strata it is the pair-weighted mean of the per-stratum AUCs (van Elteren's
      stratified Wilcoxon, as a probability);
    - ``p_value``: labels permuted within strata; the permutation expectation is exactly
      0.5 (``null_center``), so a class concentrated in high-valued layers does not move it;
    - ``ci_low``, ``ci_high``: percentile interval over the two-stage cluster bootstrap
      (resamples without a within-stratum pair are skipped);
    - ``auc_pooled``: the ordinary AUC over all units (layer effects included), for reference;
    - ``n_positive``, ``n_negative``, ``n_pairs`` (within-stratum pairs),
      ``n_strata``, ``n_perm``, ``exact``, ``null_center`` (0.5).

    Raises
    ------
    StatsInputError
        Fewer than 2 units in a class, no stratum holding both classes, ``x`` constant,
        bad options.

    Notes
    -----
    With within-stratum ranks :math:`r_i`, :math:`\\mathrm{AUC}_w = \\sum_s U_s / \\sum_s
    n_{1s} n_{0s}` with :math:`U_s = \\sum_{i \\in s, g_i = 1} r_i - n_{1s}(n_{1s}+1)/2`:
    linear in the labels, so the permutation null is computed from rank sums.
    Hanley & McNeil (1982), doi:10.1148/radiology.143.1.7063747; van Elteren (1960).

    Examples
    --------
    >>> res = class_auc([1.0, 2, 3, 4, 5, 6], [False, False, True, False, True, True],
    ...                strata=None, n_boot=0)
    >>> round(float(res["effect"].iloc[0]), 4), int(res["exact"].iloc[0])
    (0.8889, 1)
    """
    where = "class_auc"
    n_perm, n_boot, ci, seed = check_correlation_options(where, alternative, n_perm, n_boot, ci, seed)
    xv = v.vector(x, name="x", where=where)
    n_all = xv.size
    g = _binary(positive, n_all, name="positive", where=where)
    codes = _strata_codes(strata, n_all, where)
    keep = ~np.isnan(xv)
    xv, g, codes = xv[keep], g[keep], np.unique(codes[keep], return_inverse=True)[1].reshape(-1)
    n1, n0 = int(g.sum()), int((~g).sum())
    if min(n1, n0) < 2:
        raise StatsInputError(f"{where}: each class needs at least 2 non-NaN observations, got "
                              f"n_positive={n1}, n_negative={n0} ({n_all - xv.size} NaN rows dropped).")
    v.not_constant(xv, name="x", where=where)
    n = xv.size
    n_strata = int(codes.max()) + 1
    n1s = np.bincount(codes, weights=g.astype(float), minlength=n_strata)
    ns = np.bincount(codes, minlength=n_strata)
    pairs = float((n1s * (ns - n1s)).sum())
    if pairs == 0:
        raise StatsInputError(f"{where}: no stratum holds both classes; the within-strata AUC is "
                              f"undefined (n_positive={n1}, n_negative={n0}, {n_strata} strata).")
    r = _within_ranks(xv, codes)
    const = float((n1s * (n1s + 1) / 2.0).sum())
    gf = g.astype(np.float64)
    auc = (float(r @ gf) - const) / pairs
    plan = PermutationPlan(codes, n_perm, seed)
    go = gf[plan.order]
    t_null = (np.concatenate([(vals @ go - const) / pairs for vals in plan.value_chunks(r)])
              if plan.size else np.empty(0))
    p = permutation_pvalue(auc, t_null, alternative=alternative, center=0.5)
    rp = v.rank(xv)
    pooled = (float(rp @ gf) - n1 * (n1 + 1) / 2.0) / (n1 * n0)

    lo = hi = np.nan
    if n_boot:
        pi, pj = _within_pairs(codes)  # slots share the strata layout, so the pairs are fixed
        boots = []
        for idx in BootstrapPlan(codes, n, n_boot, seed + 1, True).chunks():
            xb, gb = xv[idx], gf[idx]
            w = gb[:, pi] * (1.0 - gb[:, pj])
            d = xb[:, pi] - xb[:, pj]
            conc = (w * ((d > 0) + 0.5 * (d == 0))).sum(axis=1)
            tot = w.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                boots.append(np.where(tot > 0, conc / tot, np.nan))
        lo, hi = v.percentile_ci(np.concatenate(boots), ci)
    return v.frame(AUC_COLUMNS, {
        C.N: n, C.STATISTIC: auc, C.P_VALUE: p, C.EFFECT: auc, C.CI_LOW: lo, C.CI_HIGH: hi,
        AUC_POOLED: pooled, N_POSITIVE: n1, N_NEGATIVE: n0, N_PAIRS: int(pairs),
        C.N_STRATA: n_strata, C.N_PERM: plan.size, C.EXACT: plan.exact, C.NULL_CENTER: 0.5,
    })


# ----------------------------------------------------------------------------- agreement


def threshold_zones(score: ArrayLike, threshold: float) -> np.ndarray:
    """The bidirectional threshold classifier: 0 below ``-t``, 2 above ``+t``, 1 between.

    Parameters
    ----------
    score : array-like
        E.g. ``grad_alignment`` (a cosine, METRICS.md §7.5); NaN stays NaN.
    threshold : float
        ``t >= 0``. A score exactly at ``+-t`` is "between" (strict inequalities).

    Returns
    -------
    numpy.ndarray of float
        Zone codes 0 (below ``-t``: "disrupted anchors"), 1 (between: "transition"),
        2 (above ``+t``: "workers"); NaN where the score is NaN.

    Raises
    ------
    StatsInputError
        A negative or non-finite threshold.

    Examples
    --------
    >>> threshold_zones([-0.5, -0.1, 0.0, 0.1, 0.5, float("nan")], 0.1).tolist()
    [0.0, 1.0, 1.0, 1.0, 2.0, nan]
    """
    where = "threshold_zones"
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        t = float("nan")
    if not np.isfinite(t) or t < 0:
        raise StatsInputError(f"{where}: threshold must be a finite number >= 0, got {threshold!r}.")
    s = np.asarray(score, dtype=np.float64)
    out = np.where(s > t, 2.0, np.where(s < -t, 0.0, 1.0))
    return np.where(np.isnan(s), np.nan, out)


def _codes_int(a: ArrayLike, n: int, *, name: str, where: str) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise StatsInputError(f"{where}: {name} must be 1-D with {n} entries, got shape {arr.shape}.")
    finite = arr[np.isfinite(arr)]
    if (finite != np.round(finite)).any() or (finite < 0).any():
        raise StatsInputError(f"{where}: {name} must hold non-negative integer class codes (or NaN).")
    return arr


def cohen_kappa(predicted: ArrayLike, observed: ArrayLike) -> float:
    """Cohen's kappa of two classifications of the same units: ``(p_o - p_e) / (1 - p_e)``.

    Examples
    --------
    >>> round(cohen_kappa([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]), 4)
    0.5
    """
    a, b = np.asarray(predicted), np.asarray(observed)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise StatsInputError(f"cohen_kappa: expected two 1-D arrays of the same length, got "
                              f"{a.shape} and {b.shape}.")
    po = float(np.mean(a == b))
    cats = np.union1d(a, b)
    pe = float(sum(np.mean(a == c) * np.mean(b == c) for c in cats))
    if pe >= 1.0:
        raise StatsInputError("cohen_kappa: both classifications put every unit in one class; "
                              "kappa is undefined.")
    return (po - pe) / (1.0 - pe)


def threshold_agreement(
    predicted: ArrayLike,
    observed: ArrayLike,
    *,
    strata: ArrayLike | None,
    alternative: str = "two-sided",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Agreement of a classifier with reference labels beyond chance, within strata.

    Parameters
    ----------
    predicted, observed : array-like, shape ``[n]``
        Integer class codes on the same scale (a code means the same class in both); NaN
        rows are dropped.
    strata : array-like of length n, or None
        Required keyword: stratum (layer) of each unit; ``None`` for free permutation.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: agreement above chance.
    n_perm, n_boot, ci, seed
        As :func:`class_auc`.

    Returns
    -------
    pandas.DataFrame, one row, columns ``AGREEMENT_COLUMNS``:

    - ``n``; ``statistic``: observed agreement ``p_o`` (share of units where the two agree);
    - ``effect``: **stratified kappa** ``(p_o - p_e) / (1 - p_e)`` with the chance agreement
      ``p_e`` computed within strata, ``p_e = sum_s sum_k a_sk b_sk / n_s / n`` (``a_sk``,
      ``b_sk``: units of stratum ``s`` in class ``k`` by each classification). ``p_e`` is the
      exact permutation expectation of ``p_o`` under within-strata permutation, so the
      effect's null value is 0. Without strata it is Cohen's kappa
      (``sklearn.metrics.cohen_kappa_score``);
    - ``p_value``: ``observed`` permuted within strata (the marginals, hence ``p_e``, are
      invariant, so permuting ``p_o`` is permuting kappa); ``null_center`` = ``p_e``;
    - ``ci_low``, ``ci_high``: percentile interval of the stratified kappa over the two-stage
      cluster bootstrap;
    - ``kappa_pooled``: Cohen's kappa with pooled marginals; ``balanced_accuracy``: mean
      over the observed classes of the share predicted correctly; ``agreement`` (``p_o``),
      ``chance_agreement`` (``p_e``), ``n_classes`` (observed classes), ``n_strata``,
      ``n_perm``, ``exact``, ``null_center``.

    Raises
    ------
    StatsInputError
        Fewer than 2 units, non-integer codes, chance agreement 1 (every stratum has a
        single class in both classifications), bad options.

    Notes
    -----
    Cohen (1960), doi:10.1177/001316446002000104. The stratified chance term follows from
    :math:`E[\\sum_{i \\in s} 1(a_i = b_{\\pi(i)})] = \\sum_k a_{sk} b_{sk} / n_s`.

    Examples
    --------
    >>> res = threshold_agreement([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0], strata=None, n_boot=0)
    >>> round(float(res["effect"].iloc[0]), 4), round(float(res["balanced_accuracy"].iloc[0]), 4)
    (0.5, 0.7222)
    """
    where = "threshold_agreement"
    n_perm, n_boot, ci, seed = check_correlation_options(where, alternative, n_perm, n_boot, ci, seed)
    n_all = int(np.size(predicted))
    a = _codes_int(predicted, n_all, name="predicted", where=where)
    b = _codes_int(observed, n_all, name="observed", where=where)
    codes = _strata_codes(strata, n_all, where)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep].astype(np.intp), b[keep].astype(np.intp)
    codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1) if keep.any() else codes[:0]
    v.min_n(int(keep.sum()), 2, where=where, what="units with both classifications")
    n = a.size
    n_strata = int(codes.max()) + 1
    k = int(max(a.max(), b.max())) + 1
    ca = np.zeros((n_strata, k))
    cb = np.zeros((n_strata, k))
    np.add.at(ca, (codes, a), 1.0)
    np.add.at(cb, (codes, b), 1.0)
    ns = ca.sum(axis=1)
    pe = float(((ca * cb).sum(axis=1) / ns).sum() / n)
    if pe >= 1.0 - 1e-12:
        raise StatsInputError(f"{where}: within every stratum both classifications have a single "
                              f"class; chance agreement is 1 and kappa is undefined.")
    po = float(np.mean(a == b))
    kappa = (po - pe) / (1.0 - pe)
    plan = PermutationPlan(codes, n_perm, seed)
    ao = a[plan.order]
    t_null = (np.concatenate([(vals == ao).mean(axis=1) for vals in plan.value_chunks(b)])
              if plan.size else np.empty(0))
    p = permutation_pvalue(po, t_null, alternative=alternative, center=pe)
    pooled = cohen_kappa(a, b) if pe < 1 else np.nan
    classes = np.unique(b)
    bal = float(np.mean([np.mean(a[b == c] == c) for c in classes]))

    lo = hi = np.nan
    if n_boot:
        boots = []
        onehot_a, onehot_b = np.eye(k)[a], np.eye(k)[b]  # [n, k]
        slot = np.eye(n_strata)[codes]  # [n, S]: slot membership (fixed layout)
        for idx in BootstrapPlan(codes, n, n_boot, seed + 1, True).chunks():
            pob = (a[idx] == b[idx]).mean(axis=1)
            cab = np.einsum("ns,cnk->csk", slot, onehot_a[idx])
            cbb = np.einsum("ns,cnk->csk", slot, onehot_b[idx])
            peb = ((cab * cbb).sum(axis=2) / ns[None, :]).sum(axis=1) / n
            with np.errstate(invalid="ignore", divide="ignore"):
                boots.append(np.where(peb < 1.0 - 1e-12, (pob - peb) / (1.0 - peb), np.nan))
        lo, hi = v.percentile_ci(np.concatenate(boots), ci)
    return v.frame(AGREEMENT_COLUMNS, {
        C.N: n, C.STATISTIC: po, C.P_VALUE: p, C.EFFECT: kappa, C.CI_LOW: lo, C.CI_HIGH: hi,
        KAPPA_POOLED: pooled, BALANCED_ACCURACY: bal, AGREEMENT: po, CHANCE_AGREEMENT: pe,
        N_CLASSES: int(classes.size), C.N_STRATA: n_strata, C.N_PERM: plan.size,
        C.EXACT: plan.exact, C.NULL_CENTER: pe,
    })


# ----------------------------------------------------------------------------- interaction


def _design(x: np.ndarray, g: np.ndarray, codes: np.ndarray, n_strata: int, full: bool) -> np.ndarray:
    """[..., n, p]: stratum dummies (no intercept), x, g, and x*g when ``full``."""
    dummies = np.broadcast_to(np.eye(n_strata)[codes], (*x.shape, n_strata))
    cols = [x[..., None], g[..., None]] + ([(x * g)[..., None]] if full else [])
    return np.concatenate([*cols, dummies], axis=-1)


def _scaled(a: np.ndarray, ranks: bool) -> np.ndarray:
    """Rows of ``a`` (``[..., n]``) ranked (average ranks, ties averaged) when ``ranks``,
    then standardized to mean 0, SD 1 (population SD); a constant row gives NaN."""
    a = np.asarray(a, dtype=np.float64)
    if ranks:
        a = v.rank(a) if a.ndim == 1 else sps.rankdata(a, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a - a.mean(axis=-1, keepdims=True)) / a.std(axis=-1, keepdims=True)


def class_interaction(
    y: ArrayLike,
    x: ArrayLike,
    group: ArrayLike,
    *,
    strata: ArrayLike | None,
    ranks: bool = True,
    alternative: str = "two-sided",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    min_group: int = 3,
) -> pd.DataFrame:
    """Difference between two groups in the slope of ``y`` on ``x`` (an x-by-group interaction).

    The model is ``y ~ x + g + x:g + stratum`` (OLS, one intercept per stratum: layer fixed
    effects); the interaction's t statistic is tested by the Freedman-Lane permutation:
    the residuals of the reduced model ``y ~ x + g + stratum`` are permuted within strata,
    added back to its fitted values, and the full model refitted.

    Parameters
    ----------
    y, x : array-like, shape ``[n]``
        Response (``change_from_init``) and predictor (``head_contribution``); NaN rows
        are dropped.
    group : array-like of bool, shape ``[n]``
        ``True``: group 1 (e.g. workers); ``False``: group 0 (anchors).
    strata : array-like of length n, or None
        Required keyword: stratum (layer) of each unit (its fixed effect and permutation
        block); ``None``: one intercept, free permutation.
    ranks : bool, default True
        Replace ``x`` and ``y`` by their ranks over the units used, then standardize both
        (mean 0, SD 1): the slopes are then on the scale of a Spearman correlation.
        ``False``: standardize the raw values. Every bootstrap resample is ranked and
        standardized afresh (its units' ranks among themselves).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: group 1's slope larger.
    n_perm, n_boot, ci, seed
        As :func:`class_auc`.
    min_group : int, default 3
        Fewest units a group may have (a slope needs a few points).

    Returns
    -------
    pandas.DataFrame, one row, columns ``INTERACTION_COLUMNS``:

    - ``n``; ``statistic``: t of the interaction coefficient;
    - ``p_value``: Freedman-Lane permutation p of that t;
    - ``effect``: the interaction coefficient, group 1's slope minus group 0's (standardized
      units); ``ci_low``, ``ci_high``: its percentile interval over the two-stage cluster
      bootstrap (resamples where the model is rank-deficient are skipped);
    - ``slope_group0``, ``slope_group1``: the two within-stratum slopes;
      ``group_effect``: group 1 minus group 0 at the mean of ``x``;
      ``p_parametric``: the OLS t-test p of the interaction (descriptive;
      ``statsmodels.formula.api.ols("y ~ x * g + C(layer)")``);
    - ``n_group0``, ``n_group1``, ``n_strata``, ``n_perm``, ``exact`` (0: Monte Carlo).

    Raises
    ------
    StatsInputError
        A group with fewer than ``min_group`` units, a rank-deficient design (``x`` constant
        within a group, a group confined to one stratum's worth of dummies), bad options.

    Notes
    -----
    Freedman & Lane (1983), doi:10.2307/1391660; Anderson & Legendre (1999),
    doi:10.1080/00949659908811936 (its good size among permutation schemes for partial
    regression coefficients); Winkler et al. (2014), doi:10.1016/j.neuroimage.2014.01.060
    (permutation within exchangeability blocks). With ``e`` the reduced model's residuals
    and ``M`` the full model's residual-forming matrix, ``M H_r = 0`` so the permuted
    statistic is ``t* = a'e_pi / sqrt(|M e_pi|^2 c_kk / (n - p))`` (``a'`` the interaction
    row of ``(X'X)^-1 X'``), vectorized over permutations.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=60); g = np.arange(60) % 2 == 0
    >>> y = np.where(g, 1.0, -1.0) * x + 0.3 * rng.normal(size=60)
    >>> res = class_interaction(y, x, g, strata=np.repeat(np.arange(6), 10), n_perm=199, n_boot=0)
    >>> bool(res["effect"].iloc[0] > 1.0), float(res["p_value"].iloc[0])
    (True, 0.005)
    """
    where = "class_interaction"
    n_perm, n_boot, ci, seed = check_correlation_options(where, alternative, n_perm, n_boot, ci, seed)
    min_group = v.positive_int(min_group, name="min_group", where=where, minimum=2)
    yv = v.vector(y, name="y", where=where)
    xv = v.vector(x, name="x", where=where)
    n_all = v.same_length(("y", yv), ("x", xv), where=where)
    g = _binary(group, n_all, name="group", where=where)
    codes = _strata_codes(strata, n_all, where)
    keep = ~(np.isnan(yv) | np.isnan(xv))
    yv, xv, g = yv[keep], xv[keep], g[keep]
    codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1) if keep.any() else codes[:0]
    n1, n0 = int(g.sum()), int((~g).sum())
    if min(n1, n0) < min_group:
        raise StatsInputError(f"{where}: each group needs at least {min_group} complete units, got "
                              f"n_group0={n0}, n_group1={n1} ({n_all - yv.size} rows with NaN dropped).")
    v.not_constant(yv, name="y", where=where)
    v.not_constant(xv, name="x", where=where)
    xs, ys = _scaled(xv, ranks), _scaled(yv, ranks)
    n = ys.size
    n_strata = int(codes.max()) + 1
    gf = g.astype(np.float64)
    X = _design(xs, gf, codes, n_strata, True)
    Xr = _design(xs, gf, codes, n_strata, False)
    p_full = X.shape[1]
    if np.linalg.matrix_rank(X) < p_full or n - p_full < 1:
        raise StatsInputError(f"{where}: the design y ~ x * group + stratum is rank-deficient or has "
                              f"no residual degrees of freedom (n={n}, {p_full} parameters; is x "
                              f"constant within a group?).")
    xtx_inv = np.linalg.inv(X.T @ X)
    A = xtx_inv @ X.T  # [p, n]
    k = 2  # column of x*g
    a_int, c_kk = A[k], xtx_inv[k, k]
    M = np.eye(n) - X @ A
    Hr = Xr @ np.linalg.pinv(Xr)
    e = ys - Hr @ ys
    df = n - p_full

    def _t(E: np.ndarray) -> np.ndarray:
        num = E @ a_int
        me = E @ M
        rss = (me * me).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return num / np.sqrt(rss / df * c_kk)

    beta = A @ ys
    t_obs = float(_t(ys[None, :])[0])
    plan = PermutationPlan(codes, n_perm, seed)
    inv_order = np.argsort(plan.order)
    t_null = (np.concatenate([_t(vals[:, inv_order]) for vals in plan.value_chunks(e)])
              if plan.size else np.empty(0))
    p = permutation_pvalue(t_obs, t_null, alternative=alternative, center=0.0)
    p_param = float(2.0 * sps.t.sf(abs(t_obs), df))

    lo = hi = np.nan
    if n_boot:
        boots = []
        for idx in BootstrapPlan(codes, n, n_boot, seed + 1, True).chunks():
            # each resample is ranked and standardized afresh, as the estimate was on the
            # sample: ranks of the full sample carried into a resample are not its ranks
            xb, yb = _scaled(xv[idx], ranks), _scaled(yv[idx], ranks)
            Xb = np.broadcast_to(np.eye(n_strata)[codes], (*idx.shape, n_strata))  # slot dummies
            Xb = np.concatenate([xb[..., None], gf[idx][..., None],
                                 (xb * gf[idx])[..., None], Xb], axis=-1)
            xtx = np.einsum("cnp,cnq->cpq", Xb, Xb)
            xty = np.einsum("cnp,cn->cp", Xb, yb)
            ok = np.linalg.matrix_rank(xtx, hermitian=True) == p_full
            sol = np.full(idx.shape[0], np.nan)
            if ok.any():
                sol[ok] = np.linalg.solve(xtx[ok], xty[ok][..., None])[:, k, 0]
            boots.append(sol)
        lo, hi = v.percentile_ci(np.concatenate(boots), ci)
    return v.frame(INTERACTION_COLUMNS, {
        C.N: n, C.STATISTIC: t_obs, C.P_VALUE: p, C.EFFECT: float(beta[k]), C.CI_LOW: lo,
        C.CI_HIGH: hi, SLOPE_GROUP0: float(beta[0]), SLOPE_GROUP1: float(beta[0] + beta[k]),
        GROUP_EFFECT: float(beta[1]), P_PARAMETRIC: p_param, C.N_GROUP0: n0, C.N_GROUP1: n1,
        C.N_STRATA: n_strata, C.N_PERM: plan.size, C.EXACT: plan.exact,
    })


# ----------------------------------------------------------------------------- stabilization


def time_to_fraction(
    values: ArrayLike,
    steps: ArrayLike,
    *,
    fraction: float = 0.9,
    scale: str = "log",
) -> np.ndarray:
    """Per unit, when its trajectory first reaches ``fraction`` of its final value.

    Parameters
    ----------
    values : array-like, shape ``[n_steps, n_units]``
        Trajectories (e.g. ``change_from_init``, METRICS.md §5.5), steps in increasing
        order, the final value in the last row.
    steps : array-like, shape ``[n_steps]``
        Training steps, strictly increasing.
    fraction : float, default 0.9
        Target as a fraction of the final value, in (0, 1].
    scale : {"log", "linear"}
        ``"log"``: time in ``log10(step)``, interpolated linearly in it between the two
        checkpoints that bracket the first passage (as METRICS.md §6.2 interpolates the
        crossover); steps <= 0 are left out (``log10`` is undefined there, and
        ``change_from_init`` is 0 at the first checkpoint by definition), so a unit already
        past the target at the first positive step gets that step's ``log10``. ``"linear"``:
        time in steps, interpolated linearly in step, all steps used.

    Returns
    -------
    numpy.ndarray of float, shape ``[n_units]``
        First-passage time (on ``scale``); NaN for a unit whose final value is not positive
        or whose trajectory holds a NaN.

    Raises
    ------
    StatsInputError
        Shapes that do not match, steps not increasing, a bad fraction or scale, fewer than
        2 usable steps.

    Examples
    --------
    >>> vals = np.array([[0.0, 0.0], [0.5, 0.95], [0.8, 1.0], [1.0, 1.0]])
    >>> time_to_fraction(vals, [0, 10, 100, 1000], scale="log").round(3).tolist()
    [2.5, 1.0]
    >>> time_to_fraction(vals, [0, 10, 100, 1000], scale="linear").round(1).tolist()
    [550.0, 9.5]
    """
    where = "time_to_fraction"
    v.choice(scale, TIME_SCALES, name="scale", where=where)
    try:
        f = float(fraction)
    except (TypeError, ValueError):
        f = float("nan")
    if not 0.0 < f <= 1.0:
        raise StatsInputError(f"{where}: fraction must lie in (0, 1], got {fraction!r}.")
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim == 1:
        vals = vals[:, None]
    st = v.vector(steps, name="steps", where=where)
    if vals.ndim != 2 or vals.shape[0] != st.size:
        raise StatsInputError(f"{where}: values must be [n_steps, n_units] with n_steps = "
                              f"len(steps) = {st.size}, got shape {vals.shape}.")
    if np.isnan(st).any() or (np.diff(st) <= 0).any():
        raise StatsInputError(f"{where}: steps must be finite and strictly increasing, got {st.tolist()}.")
    if scale == "log":
        use = st > 0
        coord = np.log10(np.where(use, st, 1.0))[use]
    else:
        use = np.ones(st.size, dtype=bool)
        coord = st
    v.min_n(int(use.sum()), 2, where=where, what=f"steps usable on the {scale} scale")
    final = vals[-1]
    ok = np.isfinite(vals).all(axis=0) & (final > 0)
    sub = vals[use]
    target = f * final
    reached = sub >= target[None, :] - 1e-12 * np.abs(target)[None, :]
    j = np.argmax(reached, axis=0)  # first passage (the last row always reaches it when ok)
    out = np.full(vals.shape[1], np.nan)
    cols = np.flatnonzero(ok)
    jj = j[cols]
    first = jj == 0
    out[cols[first]] = coord[0]
    c2, j2 = cols[~first], jj[~first]
    if c2.size:
        v0, v1 = sub[j2 - 1, c2], sub[j2, c2]
        w = (target[c2] - v0) / (v1 - v0)
        out[c2] = coord[j2 - 1] + w * (coord[j2] - coord[j2 - 1])
    return out
