"""Correlations of head-level metrics with nested (within-layer) permutation inference.

Heads are nested in layers. A layer-level effect shared by two metrics (both are larger in
deep layers) makes the pooled correlation large although no head-level association exists;
freely permuting heads then rejects far too often (0.36 at alpha 0.05 with 12 layers of 8
heads and a layer effect of SD 1.5 in each metric, ``tests/stats/test_correlation.py``;
0.29-0.58 over other layouts). Here the
null distribution comes from permuting *within* strata (layers), which keeps every layer's
values in that layer, and the two-sided p-value is measured from the null's exact
expectation. Intervals come from the two-stage cluster bootstrap (layers, then heads).
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
from lie_stats.stats.permutation import (
    BootstrapPlan,
    strata_codes,
    PermutationPlan,
    permutation_pvalue,
)

__all__ = ["correlation", "partial_correlation", "within_correlation", "WithinCorrelation",
           "check_correlation_options", "correlation_plans", "MIN_PERM_SE"]


def _prepare(
    arrays: dict[str, np.ndarray], strata: ArrayLike | None, where: str, minimum: int
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Pairwise-complete rows; strata codes re-encoded on the kept rows."""
    n = v.same_length(*arrays.items(), where=where)
    codes = None
    if strata is not None:
        codes = strata_codes(strata, n, name="strata", where=where)
    keep = np.ones(n, dtype=bool)
    for a in arrays.values():
        keep &= ~np.isnan(a).reshape(n, -1).any(axis=1)
    arrays = {k: a[keep] for k, a in arrays.items()}
    v.min_n(int(keep.sum()), minimum, where=where,
            what=f"complete observations (rows without NaN; {n - int(keep.sum())} of {n} dropped)")
    if codes is not None:
        codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1)
    return arrays, codes


def _unit(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Centre and scale to unit Euclidean norm along ``axis`` (NaN where constant)."""
    a = a - a.mean(axis=axis, keepdims=True)
    norm = np.sqrt((a * a).sum(axis=axis, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, a / np.where(norm > 0, norm, 1.0), np.nan)


def _stratum_means(a: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
    """Per-unit mean of ``a`` over the unit's stratum (the grand mean without strata)."""
    if codes is None:
        return np.full_like(a, a.mean())
    counts = np.bincount(codes)
    return (np.bincount(codes, weights=a) / counts)[codes]


def _centre_rows(a: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row of ``a`` [c, n] minus its stratum means, strata ``codes`` [c, n] per row."""
    c, n = a.shape
    k = int(codes.max()) + 1
    key = (np.arange(c)[:, None] * k + codes).reshape(-1)
    sums = np.bincount(key, weights=a.reshape(-1), minlength=c * k)
    counts = np.bincount(key, minlength=c * k)
    return a - (sums / np.maximum(counts, 1))[key].reshape(c, n)


def _sign_matrix(a: np.ndarray) -> np.ndarray:
    """``sign(a_i - a_j)`` as int8 (gathers over resamples move 8x less memory)."""
    return np.sign(a[:, None] - a[None, :]).astype(np.int8)


def _dense_ranks(a: np.ndarray) -> np.ndarray:
    """Dense integer ranks (ties share a rank), as small an integer type as fits."""
    r = np.unique(a, return_inverse=True)[1].reshape(-1)
    return r.astype(np.int16 if a.size < 2 ** 15 else np.int32)


def _greater(a: np.ndarray) -> np.ndarray:
    """``[a_bi > a_bj]`` for each row ``b`` of ``a`` [c, n] -> bool [c, n, n]."""
    return a[:, :, None] > a[:, None, :]


class _Kernel:
    """Observed statistic, permutation null (chunked) and bootstrap of one correlation."""

    def __init__(self, x: np.ndarray, y: np.ndarray, method: str, codes: np.ndarray | None):
        self.x, self.y, self.method, self.codes = x, y, method, codes
        if method == "kendall":
            self.sx, self.sy = _sign_matrix(x), _sign_matrix(y)
            self.rx, self.ry = _dense_ranks(x), _dense_ranks(y)
            self.denom = np.sqrt(float(np.abs(self.sx).sum()) * float(np.abs(self.sy).sum()))
            self.t_obs = float((self.sx * self.sy).sum(dtype=np.int64) / self.denom)
        else:
            u = (v.rank(x), v.rank(y)) if method == "spearman" else (x, y)
            self.zx, self.zy = _unit(u[0]), _unit(u[1])
            self.t_obs = float(np.clip(self.zx @ self.zy, -1.0, 1.0))

    def center(self) -> float:
        """Exact expectation of the statistic under within-strata permutation of ``y``."""
        if self.method == "kendall":
            if self.codes is None:
                return 0.0
            k = int(self.codes.max()) + 1
            g = np.eye(k)[self.codes]  # [n, K] one-hot
            sizes = g.sum(axis=0)
            m = (g.T @ self.sy.astype(np.float64) @ g) / np.outer(sizes, sizes)  # mean sign between strata
            return float((self.sx * m[self.codes][:, self.codes]).sum() / self.denom)
        return float(self.zx @ _stratum_means(self.zy, self.codes))

    def within(self, t_null: np.ndarray, plan: PermutationPlan) -> tuple[float, np.ndarray]:
        """The within-strata correlation and its permutation null (the same permutations).

        Pearson / Spearman: the correlation of the scores (values, or pooled ranks) centred
        within strata, an exact rescaling of ``T - center`` (a permutation within strata
        changes only the within-strata part of ``T``). Kendall: tau-b over the pairs of
        units in the same stratum (the stratified tau), whose permutation expectation is 0.
        """
        if self.method != "kendall":
            aw = self.zx - _stratum_means(self.zx, self.codes)
            bw = self.zy - _stratum_means(self.zy, self.codes)
            norm = float(np.sqrt((aw @ aw) * (bw @ bw)))
            if not norm > 0:
                return float("nan"), np.full(t_null.shape, np.nan)
            center = self.center()
            return (float(np.clip((self.t_obs - center) / norm, -1.0, 1.0)),
                    np.clip((t_null - center) / norm, -1.0, 1.0))
        same = (np.ones((self.x.size,) * 2, dtype=bool) if self.codes is None
                else self.codes[:, None] == self.codes[None, :])
        sx, sy = self.sx * same, self.sy * same
        denom = np.sqrt(float(np.abs(sx).sum()) * float(np.abs(sy).sum()))
        if not denom > 0:
            return float("nan"), np.full(t_null.shape, np.nan)
        return float((sx * sy).sum(dtype=np.int64) / denom), self._kendall_null(plan, sx, denom)

    def null(self, plan: PermutationPlan) -> np.ndarray:
        if plan.size == 0:
            return np.empty(0)
        if self.method != "kendall":
            zx = self.zx[plan.order]
            return np.concatenate([vals @ zx for vals in plan.value_chunks(self.zy)])
        return self._kendall_null(plan, self.sx, self.denom)

    def _kendall_null(self, plan: PermutationPlan, sx: np.ndarray, denom: float) -> np.ndarray:
        if plan.size == 0:
            return np.empty(0)
        # sx antisymmetric: sum_ij sx_ij sign(y_pi(i) - y_pi(j)) = 2 sum_ij sx_ij [y_pi(i) > y_pi(j)]
        n = self.x.size
        sx = sx[plan.order][:, plan.order].reshape(-1)
        exact_f32 = n * n < 2 ** 23  # float32 sums of n^2 terms in {-2, 0, 2} stay exact integers
        w = 2.0 * sx.astype(np.float32 if exact_f32 else np.float64)
        out = []
        for vals in plan.value_chunks(self.ry):
            for a, b in v.chunks(vals.shape[0], n * n):
                g = _greater(vals[a:b]).reshape(b - a, -1)
                out.append(g.astype(w.dtype) @ w)
        return np.concatenate(out).astype(np.float64) / denom

    def _kendall(self, idx: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
        """Kendall's tau-b of each resample (rows of ``idx``), over the ordered pairs of heads
        (both ways); with ``codes``, only the pairs within one stratum (the stratified tau)."""
        out = np.empty(idx.shape[0])
        n = self.x.size
        for a, b in v.chunks(idx.shape[0], n * n):
            i = idx[a:b]
            gx, gy = _greater(self.rx[i]), _greater(self.ry[i])
            if codes is not None:
                same = codes[a:b, :, None] == codes[a:b, None, :]
                gx, gy = gx & same, gy & same
            conc = np.count_nonzero(gx & gy, axis=(1, 2))
            disc = np.count_nonzero(gx & gy.transpose(0, 2, 1), axis=(1, 2))
            den = (np.count_nonzero(gx, axis=(1, 2)).astype(np.float64)
                   * np.count_nonzero(gy, axis=(1, 2)))
            with np.errstate(invalid="ignore", divide="ignore"):
                out[a:b] = (conc - disc) / np.sqrt(den)
        return out

    def boot_within(self, idx: np.ndarray) -> np.ndarray:
        """The within-strata correlation (:meth:`within`) of each bootstrap resample
        ``idx`` [c, n]; a stratum drawn twice counts as one stratum."""
        codes = np.zeros(idx.shape, dtype=np.intp) if self.codes is None else self.codes[idx]
        if self.method == "kendall":
            return self._kendall(idx, codes)
        xb, yb = self.x[idx], self.y[idx]
        if self.method == "spearman":
            xb, yb = sps.rankdata(xb, axis=1), sps.rankdata(yb, axis=1)
        xb, yb = _centre_rows(xb, codes), _centre_rows(yb, codes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (xb * yb).sum(axis=1) / np.sqrt((xb * xb).sum(axis=1) * (yb * yb).sum(axis=1))

    def boot(self, idx: np.ndarray) -> np.ndarray:
        if self.method == "kendall":
            return self._kendall(idx, None)
        xb, yb = self.x[idx], self.y[idx]
        if self.method == "spearman":
            xb, yb = sps.rankdata(xb, axis=1), sps.rankdata(yb, axis=1)
        return (_unit(xb, axis=1) * _unit(yb, axis=1)).sum(axis=1)


def _resampled(kernel, plan: PermutationPlan, boot_plan: BootstrapPlan | None):
    t_null = kernel.null(plan)
    boot = (np.concatenate([kernel.boot(i) for i in boot_plan.chunks()])
            if boot_plan is not None else np.empty(0))
    return t_null, boot


def check_correlation_options(method, alternative, n_perm, n_boot, ci, seed, where, methods=v.CORRELATION_METHODS):
    """Check the options every correlation-based test takes (raises StatsInputError)."""
    v.choice(method, methods, name="method", where=where)
    v.choice(alternative, v.ALTERNATIVES, name="alternative", where=where)
    v.positive_int(n_perm, name="n_perm", where=where)
    v.positive_int(n_boot, name="n_boot", where=where, minimum=0)
    v.level(ci, name="ci", where=where)
    v.seed_value(seed, where=where)


def correlation(
    x: ArrayLike,
    y: ArrayLike,
    *,
    strata: ArrayLike | None,
    method: str = "spearman",
    alternative: str = "two-sided",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Correlation with a within-strata permutation p-value and a cluster-bootstrap interval.

    Parameters
    ----------
    x, y : array-like, shape ``[n]``
        Paired observations (one per head). Rows where either is NaN are dropped
        (pairwise complete).
    strata : array-like of length n, or None
        Required keyword: the stratum (layer) of each observation. Permutations shuffle
        ``y`` within strata; the bootstrap resamples strata and then units within them.
        ``None`` (explicitly) permutes and bootstraps freely.
    method : {"spearman", "pearson", "kendall"}
        Spearman's rho (Pearson on average ranks), Pearson's r, or Kendall's tau-b.
    alternative : {"two-sided", "greater", "less"}
    n_perm : int, default 9999
        Monte Carlo permutations; the null is enumerated exactly when the number of distinct
        within-strata permutations minus one is at most ``n_perm``.
    n_boot : int, default 2000
        Bootstrap samples for the interval; ``0`` skips it (``ci_low``/``ci_high`` NaN).
    ci : float, default 0.95
        Level of the percentile interval.
    seed : int, default 0
        Seed of both the permutation (``seed``) and the bootstrap (``seed + 1``) streams.

    Returns
    -------
    pandas.DataFrame, one row, columns ``CORRELATION_COLUMNS``:

    - ``n``: complete observations used;
    - ``statistic``: the pooled correlation over all units (rho, r or tau-b);
    - ``p_value``: permutation p, ``(1 + count) / (1 + B)``; one-sided alternatives count
      ``T >= t`` or ``T <= t``; two-sided counts ``|T - null_center| >= |t - null_center|``;
    - ``effect``: the same pooled correlation (a correlation is its own effect size);
    - ``ci_low``, ``ci_high``: percentile interval of the correlation over the (cluster)
      bootstrap (resamples whose correlation is undefined, a constant resample, are skipped);
    - ``n_strata``: number of strata (1 for free permutation);
    - ``n_perm``: permutations in the null (``B``); ``exact``: 1 when enumerated exactly;
    - ``null_center``: exact expectation of the statistic under the permutation null.

    Raises
    ------
    StatsInputError
        Lengths differ; fewer than 3 complete observations; ``x`` or ``y`` constant; unknown
        method or alternative (with a suggestion); bad ``n_perm``, ``n_boot``, ``ci``, seed.

    Notes
    -----
    With unit-norm centred scores ``a`` (of ``x``) and ``b`` (of ``y``; ranks for Spearman)
    the statistic is :math:`T(\\pi) = \\sum_i a_i b_{\\pi(i)}`. Under permutation within
    strata :math:`E[T] = \\sum_s n_s \\bar a_s \\bar b_s`: the between-strata part of the
    correlation, which no within-strata permutation changes. It is 0 for free permutation and
    for balanced designs without stratum effects; with layer effects in both variables it is
    the part of the pooled correlation explained by layers, and the two-sided test measures
    the within-layer association beyond it. For Kendall's tau-b the expectation is
    :math:`\\sum_{i \\ne j} \\operatorname{sgn}(x_i - x_j) M_{s_i s_j} / D` with ``M`` the
    mean sign of ``y`` differences between two strata (0 within a stratum) and ``D`` the
    tau-b denominator, which permutation does not change. Kendall's null costs
    ``O(B n^2)``. Good (1994), *Permutation Tests*; Davison & Hinkley (1997) §3.8 for the
    two-stage bootstrap.

    Examples
    --------
    >>> x = np.arange(8.0); y = np.array([1.0, 3, 2, 5, 4, 7, 6, 8])
    >>> res = correlation(x, y, strata=[0, 0, 0, 0, 1, 1, 1, 1], n_perm=999, n_boot=0)
    >>> round(float(res["statistic"].iloc[0]), 3), int(res["exact"].iloc[0])
    (0.929, 1)
    """
    where = "correlation"
    check_correlation_options(method, alternative, n_perm, n_boot, ci, seed, where)
    kernel, plan, t_null, boot, center = correlation_plans(x, y, strata, method, n_perm, n_boot, seed, where)
    p = permutation_pvalue(kernel.t_obs, t_null, alternative=alternative, center=center)
    lo, hi = v.percentile_ci(boot, ci) if n_boot else (np.nan, np.nan)
    return v.frame(C.CORRELATION_COLUMNS, {
        C.N: kernel.x.size, C.STATISTIC: kernel.t_obs, C.P_VALUE: p, C.EFFECT: kernel.t_obs,
        C.CI_LOW: lo, C.CI_HIGH: hi, C.N_STRATA: plan.n_strata, C.N_PERM: plan.size,
        C.EXACT: plan.exact, C.NULL_CENTER: center,
    })


def correlation_plans(x, y, strata, method, n_perm, n_boot, seed, where):
    """Validated data -> kernel, permutation plan, null, bootstrap replicates, centre."""
    arrays, codes = _prepare(
        {"x": v.vector(x, name="x", where=where), "y": v.vector(y, name="y", where=where)},
        strata, where, 3)
    xv, yv = arrays["x"], arrays["y"]
    v.not_constant(xv, name="x", where=where)
    v.not_constant(yv, name="y", where=where)
    n = xv.size
    kernel = _Kernel(xv, yv, method, codes)
    plan_codes = codes if codes is not None else np.zeros(n, dtype=np.intp)
    plan = PermutationPlan(plan_codes, n_perm, seed)
    boot_plan = BootstrapPlan(codes, n, n_boot, seed + 1, True) if n_boot else None
    t_null, boot = _resampled(kernel, plan, boot_plan)
    return kernel, plan, t_null, boot, kernel.center()


#: Fewest permutations from which :func:`within_correlation` estimates a standard error.
MIN_PERM_SE = 99


class WithinCorrelation(NamedTuple):
    """The within-strata correlation of :func:`within_correlation` and its inference."""

    #: pooled correlation (the permutation statistic), its exact null centre and the
    #: permutation p's inputs: the pooled null and the plan
    statistic: float
    center: float
    t_null: np.ndarray
    plan: PermutationPlan
    #: within-strata correlation, its permutation null and its cluster-bootstrap replicates
    r: float
    r_null: np.ndarray
    r_boot: np.ndarray
    #: standard deviation of ``atanh`` of ``r_null``: the standard error of Fisher's z of the
    #: within-strata correlation at rho = 0 (NaN below MIN_PERM_SE permutations)
    se_z: float
    n: int


def within_correlation(
    x: ArrayLike,
    y: ArrayLike,
    *,
    strata: ArrayLike | None,
    method: str = "spearman",
    n_perm: int = 9999,
    n_boot: int = 0,
    seed: int = 0,
    where: str = "within_correlation",
) -> WithinCorrelation:
    """The correlation of ``x`` and ``y`` within strata, with a standard error that respects
    the strata (the estimate replications and equivalence tests compare with a bound).

    Parameters
    ----------
    x, y, strata, method, n_perm, seed
        As :func:`correlation` (``strata`` required; ``None`` is one stratum).
    n_boot : int, default 0
        Two-stage cluster-bootstrap replicates of the within-strata correlation (strata, then
        units within them); 0 skips them.
    where : str
        Name used in error messages.

    Returns
    -------
    WithinCorrelation
        ``statistic``, ``center``, ``t_null``, ``plan``: the pooled correlation and its
        within-strata permutation null (as :func:`correlation`); ``r``: the within-strata
        correlation; ``r_null``: its value on each permutation; ``r_boot``: its bootstrap
        replicates; ``se_z``: ``std(atanh(r_null))``; ``n``.

    Notes
    -----
    Pearson and Spearman: the correlation of the scores (values, or ranks over all units)
    centred within strata, :math:`r_w = (T - E_\\pi T) / (\\lVert a_w \\rVert \\lVert b_w
    \\rVert)` in the notation of :func:`correlation`: an exact rescaling of ``effect -
    null_center``, so its permutation p equals :func:`correlation`'s. Layer effects shared
    by both variables (an intra-class correlation, co-varying layer means) leave it
    unchanged, while the pooled correlation carries them. Kendall: the stratified tau-b,
    over the pairs in one stratum only. The standard error of ``atanh(r_w)`` is the standard
    deviation of the within-strata permutation null on Fisher's scale: exact for the design
    (unequal strata, ties, few strata) at rho = 0; Fisher's transformation makes it nearly
    constant in rho (for Spearman see :func:`lie_stats.stats.equivalence.rank_z_factor`).
    """
    check_correlation_options(method, "two-sided", n_perm, n_boot, 0.95, seed, where)
    kernel, plan, t_null, _, center = correlation_plans(x, y, strata, method, n_perm, 0, seed, where)
    r, r_null = kernel.within(t_null, plan)
    boot = np.empty(0)
    if n_boot:
        boot_plan = BootstrapPlan(kernel.codes, kernel.x.size, n_boot, seed + 1, True)
        boot = np.concatenate([kernel.boot_within(i) for i in boot_plan.chunks()])
    se = float("nan")
    if plan.size >= MIN_PERM_SE and np.isfinite(r_null).all():
        se = float(np.std(np.arctanh(np.clip(r_null, -1 + 1e-12, 1 - 1e-12)), ddof=1))
    return WithinCorrelation(kernel.t_obs, center, t_null, plan, r, r_null, boot,
                             se if se > 0 else float("nan"), kernel.x.size)


class _PartialKernel:
    """Partial correlation by residualization; Freedman-Lane permutation of residuals."""

    def __init__(self, x, y, z, method, codes):
        self.method, self.codes = method, codes
        if method == "spearman":
            x, y = v.rank(x), v.rank(y)
            z = np.column_stack([v.rank(c) for c in z.T])
        self.x, self.y, self.z = x, y, z
        # with strata, the strata enter the design as fixed effects (one intercept each)
        self.fixed = (np.ones((x.size, 1)) if codes is None
                      else np.eye(int(codes.max()) + 1)[codes])
        design = np.column_stack([self.fixed, z])
        if np.linalg.matrix_rank(design) < design.shape[1]:
            raise StatsInputError(
                "partial_correlation: covar is constant or its columns are collinear"
                f"{' (with strata: or constant within every stratum)' if codes is not None else ''} "
                f"(design rank {np.linalg.matrix_rank(design)} < {design.shape[1]} columns).")
        self.q = np.linalg.qr(design)[0]
        self.rx, self.ry = self._resid(x), self._resid(y)
        for name, r in (("x", self.rx), ("y", self.ry)):
            if np.sqrt(r @ r) <= 1e-12 * max(1.0, np.abs(getattr(self, name)).max()):
                raise StatsInputError(
                    f"partial_correlation: {name} is fully explained by covar"
                    f"{' and strata' if codes is not None else ''} (zero residual); "
                    f"the partial correlation is undefined.")
        self.ux = self.rx / np.sqrt(self.rx @ self.rx)
        self.t_obs = float(np.clip(self.ux @ self.ry / np.sqrt(self.ry @ self.ry), -1, 1))

    def _resid(self, a: np.ndarray) -> np.ndarray:
        return a - (a @ self.q) @ self.q.T

    def center(self) -> float:
        # exact permutation expectation of the numerator, scaled by the observed norm
        return float(self.ux @ _stratum_means(self.ry, self.codes) / np.sqrt(self.ry @ self.ry))

    def null(self, plan: PermutationPlan) -> np.ndarray:
        if plan.size == 0:
            return np.empty(0)
        q, ux = self.q[plan.order], self.ux[plan.order]
        out = []
        for vals in plan.value_chunks(self.ry):
            yp = vals - (vals @ q) @ q.T  # Freedman-Lane: permuted residuals, re-residualized
            out.append((yp @ ux) / np.sqrt((yp * yp).sum(axis=1)))
        return np.concatenate(out)

    def boot(self, idx: np.ndarray) -> np.ndarray:
        xb, yb, zb = self.x[idx], self.y[idx], self.z[idx]  # zb [c, n, k]
        if self.method == "spearman":
            xb, yb = sps.rankdata(xb, axis=1), sps.rankdata(yb, axis=1)
            zb = sps.rankdata(zb, axis=1)
        d = np.concatenate([np.broadcast_to(self.fixed, xb.shape + (self.fixed.shape[1],)), zb], axis=2)
        pinv = np.linalg.pinv(d)  # [c, k+1, n]
        rx = xb - np.einsum("cnk,ck->cn", d, np.einsum("ckn,cn->ck", pinv, xb))
        ry = yb - np.einsum("cnk,ck->cn", d, np.einsum("ckn,cn->ck", pinv, yb))
        with np.errstate(invalid="ignore", divide="ignore"):
            return (rx * ry).sum(1) / np.sqrt((rx * rx).sum(1) * (ry * ry).sum(1))


def partial_correlation(
    x: ArrayLike,
    y: ArrayLike,
    covar: ArrayLike,
    *,
    strata: ArrayLike | None,
    method: str = "spearman",
    alternative: str = "two-sided",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Partial correlation of ``x`` and ``y`` given ``covar``, nested permutation inference.

    Parameters
    ----------
    x, y : array-like, shape ``[n]``
    covar : array-like, shape ``[n]`` or ``[n, k]``
        Covariates partialled out of both (an intercept is always included).
    strata : array-like of length n, or None
        Required keyword. With strata, the strata are partialled out too (one intercept per
        stratum, i.e. layer fixed effects), residuals are permuted within strata, and the
        bootstrap resamples strata then units. ``None`` (explicitly): one intercept, free
        permutation.
    method, alternative, n_perm, n_boot, ci, seed
        As :func:`correlation`; ``method`` is ``"spearman"`` (everything ranked first, as
        pingouin's ``partial_corr``) or ``"pearson"``.

    Returns
    -------
    pandas.DataFrame, one row, columns ``PARTIAL_CORRELATION_COLUMNS``: ``n``; ``statistic``
    and ``effect``: the partial correlation given ``covar`` (and, with strata, given the
    strata: the within-layer partial association; unlike :func:`correlation`, whose
    statistic is pooled, because no exact centring exists for the pooled partial
    correlation under Freedman-Lane permutation: pooled residuals permuted within layers
    rejected 5.9 % of 6,000 layer-structured nulls at alpha 0.05, the fixed-effects form
    5.2 %); ``p_value``, ``ci_low``, ``ci_high`` as in :func:`correlation`; then
    ``n_covariates``, ``n_strata``, ``n_perm``, ``exact``, ``null_center`` (the exact
    permutation expectation of the numerator over the observed norms; 0 with strata, whose
    fixed effects centre every stratum).

    Raises
    ------
    StatsInputError
        As :func:`correlation`; also ``method="kendall"``, fewer than ``k + 3`` complete rows,
        a constant or collinear covariate, ``x`` or ``y`` fully explained by ``covar``.

    Notes
    -----
    The statistic is the correlation of the residuals :math:`r_x = M x`, :math:`r_y = M y`
    with :math:`M = I - D (D^T D)^{-1} D^T`, ``D = [1, covar]`` (``[stratum indicators,
    covar]`` with strata). The null follows Freedman &
    Lane (1983): residuals ``r_y`` are permuted (within strata) and re-residualized,
    :math:`T(\\pi) = \\langle r_x, M r_{y,\\pi} \\rangle / (\\lVert r_x \\rVert \\lVert M
    r_{y,\\pi} \\rVert)`; Anderson & Legendre (1999, doi:10.1080/00949659908811936) found it
    the best-calibrated residual permutation scheme. ``null_center`` is the exact permutation
    expectation of the numerator, :math:`\\sum_s n_s \\bar r_{x,s} \\bar r_{y,s}`, over the
    observed norms.

    Examples
    --------
    >>> rng = np.random.default_rng(0); z = rng.normal(size=30)
    >>> x = z + rng.normal(size=30); y = z + rng.normal(size=30)
    >>> res = partial_correlation(x, y, z, strata=None, method="pearson", n_perm=199, n_boot=0)
    >>> bool(abs(res["statistic"].iloc[0]) < 0.5)
    True
    """
    where = "partial_correlation"
    check_correlation_options(method, alternative, n_perm, n_boot, ci, seed, where, ("spearman", "pearson"))
    z = np.asarray(covar, dtype=np.float64) if not isinstance(covar, np.ndarray) else covar.astype(np.float64)
    if z.ndim == 1:
        z = z[:, None]
    if z.ndim != 2:
        raise StatsInputError(f"{where}: covar must be [n] or [n, k], got shape {z.shape}.")
    if np.isinf(z).any():
        raise StatsInputError(f"{where}: covar holds infinite values.")
    k = z.shape[1]
    arrays, codes = _prepare(
        {"x": v.vector(x, name="x", where=where), "y": v.vector(y, name="y", where=where),
         "covar": z}, strata, where, k + 3)
    if codes is not None:
        v.min_n(codes.size, k + int(codes.max()) + 3, where=where,
                what=f"complete observations for {k} covariates and {int(codes.max()) + 1} strata")
    xv, yv, zv = arrays["x"], arrays["y"], arrays["covar"]
    v.not_constant(xv, name="x", where=where)
    v.not_constant(yv, name="y", where=where)
    n = xv.size
    kernel = _PartialKernel(xv, yv, zv, method, codes)
    plan = PermutationPlan(codes if codes is not None else np.zeros(n, dtype=np.intp), n_perm, seed)
    boot_plan = BootstrapPlan(codes, n, n_boot, seed + 1, True) if n_boot else None
    t_null, boot = _resampled(kernel, plan, boot_plan)
    center = kernel.center()
    p = permutation_pvalue(kernel.t_obs, t_null, alternative=alternative, center=center)
    lo, hi = v.percentile_ci(boot, ci) if n_boot else (np.nan, np.nan)
    return v.frame(C.PARTIAL_CORRELATION_COLUMNS, {
        C.N: n, C.STATISTIC: kernel.t_obs, C.P_VALUE: p, C.EFFECT: kernel.t_obs,
        C.CI_LOW: lo, C.CI_HIGH: hi, C.N_COVARIATES: k, C.N_STRATA: plan.n_strata,
        C.N_PERM: plan.size, C.EXACT: plan.exact, C.NULL_CENTER: center,
    })
