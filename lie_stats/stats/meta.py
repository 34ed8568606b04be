"""Random-effects meta-analysis of per-run correlations, and a pooled replication test.

One correlation per independent run (model) of a cube, on Fisher's z scale with sampling
variance ``1 / (n - 3)`` (``1 / (n - 3 - m)`` for a partial correlation on ``m``
covariates; metafor's ``escalc(measure = "ZCOR" / "ZPCOR")``), pooled by a random-effects
model: between-run variance tau^2 by DerSimonian-Laird or REML, I^2, the pooled estimate
with its interval, the prediction interval of a new run's effect and the small-telescopes
test of the pooled effect against the original study's r33 (Simonsohn 2015). The numbers
are metafor's ``rma(yi, vi, method = "DL" | "REML")`` (Viechtbauer 2010,
doi:10.18637/jss.v036.i03); the tests check them against R.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.columns import (I2, K_RUNS, MAX_RUN_R, META_REPLICATION_COLUMNS, MIN_RUN_R,
                                     PI_HIGH, PI_LOW, POOLED_Z, POOLED_Z_SE, P_Q, Q, TAU2, TAU2_DL,
                                     TAU2_REML)
from lie_stats.stats.replication import check_original, r33

__all__ = ["ESTIMATORS", "random_effects", "run_correlations", "meta_replication"]


#: Estimators of the between-run variance tau^2.
ESTIMATORS = ("DL", "REML")
#: Convergence of the REML Fisher scoring on tau^2 (metafor's default is 1e-5).
_REML_TOL = 1e-12
_REML_MAX_ITER = 10_000


def _tau2_dl(y: np.ndarray, vi: np.ndarray) -> float:
    """DerSimonian & Laird (1986): ``max(0, (Q - (k - 1)) / (sum w - sum w^2 / sum w))``."""
    w = 1.0 / vi
    mu = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - mu) ** 2))
    c = float(np.sum(w) - np.sum(w ** 2) / np.sum(w))
    return max(0.0, (q - (y.size - 1)) / c)


def _tau2_reml(y: np.ndarray, vi: np.ndarray, start: float) -> tuple[float, bool]:
    """REML tau^2 by Fisher scoring, metafor's algorithm (``rma.uni``): with
    ``P = W - W 1 (1' W 1)^-1 1' W``, ``W = diag(1 / (v + tau^2))``, the step is
    ``(y' P P y - tr P) / tr(P P)``, halved while it would make tau^2 negative; run to a
    change below 1e-12. Returns (tau^2, converged)."""
    tau2 = max(start, 0.0)
    for _ in range(_REML_MAX_ITER):
        w = 1.0 / (vi + tau2)
        P = np.diag(w) - np.outer(w, w) / np.sum(w)
        Py = P @ y
        step = (float(Py @ Py) - float(np.trace(P))) / float(np.sum(P * P))
        while tau2 + step < 0.0:
            step /= 2.0
        tau2 += step
        if abs(step) < _REML_TOL:
            return tau2, True
    return tau2, False


def random_effects(yi: ArrayLike, vi: ArrayLike, *, method: str = "DL", ci: float = 0.95) -> dict[str, float]:
    """Random-effects pooling of estimates ``yi`` with sampling variances ``vi``.

    Parameters
    ----------
    yi, vi : array-like, shape ``[k]``
        Estimates (e.g. Fisher z) and their sampling variances (positive), ``k >= 2``.
    method : {"DL", "REML"}
        Estimator of tau^2.
    ci : float, default 0.95
        Level of the interval and of the prediction interval.

    Returns
    -------
    dict with ``k``; ``mu``, ``se``, ``z``, ``p`` (two-sided, normal), ``ci_low``,
    ``ci_high`` (normal, as metafor's default ``test = "z"``); ``tau2``; ``i2`` (percent)
    and ``h2``, metafor's ``100 tau^2 / (tau^2 + s^2)`` and ``(tau^2 + s^2) / s^2`` with the
    typical within-run variance ``s^2 = (k - 1) sum w / ((sum w)^2 - sum w^2)``; ``q``,
    ``p_q`` (Cochran's Q on k - 1 df); ``pi_low``, ``pi_high``: the prediction interval
    ``mu -/+ t_{k-2} sqrt(se^2 + tau^2)`` (Higgins, Thompson & Spiegelhalter 2009; metafor's
    ``predict(rma(..., test = "t"), pi.type = "riley")``), NaN for ``k < 3``;
    ``converged`` (1; 0 when REML's scoring did not settle).

    Examples
    --------
    >>> res = random_effects([0.1, 0.3, 0.35, -0.05], [0.01, 0.02, 0.015, 0.01])
    >>> round(res["mu"], 4), round(res["tau2"], 4), round(res["i2"], 1)
    (0.1601, 0.0215, 62.4)
    """
    where = "random_effects"
    v.choice(method, ESTIMATORS, name="method", where=where)
    ci = v.level(ci, name="ci", where=where)
    y, var = np.asarray(yi, dtype=float).reshape(-1), np.asarray(vi, dtype=float).reshape(-1)
    if y.size != var.size:
        raise StatsInputError(f"{where}: yi and vi differ in length ({y.size} vs {var.size}).")
    if y.size < 2:
        raise StatsInputError(f"{where}: needs at least 2 estimates to pool, got {y.size}.")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(var)) and np.all(var > 0)):
        raise StatsInputError(f"{where}: yi must be finite and vi finite and positive.")
    k = y.size
    w = 1.0 / var
    mu_fe = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - mu_fe) ** 2))
    tau2, converged = _tau2_dl(y, var), True
    if method == "REML":
        tau2, converged = _tau2_reml(y, var, tau2)
    ws = 1.0 / (var + tau2)
    mu = float(np.sum(ws * y) / np.sum(ws))
    se = float(np.sqrt(1.0 / np.sum(ws)))
    z = mu / se
    crit = float(sps.norm.ppf(0.5 + ci / 2.0))
    s2 = (k - 1) * float(np.sum(w)) / (float(np.sum(w)) ** 2 - float(np.sum(w ** 2)))
    if k >= 3:
        half = float(sps.t.ppf(0.5 + ci / 2.0, k - 2)) * np.sqrt(se ** 2 + tau2)
        pi_low, pi_high = mu - half, mu + half
    else:
        pi_low = pi_high = float("nan")
    return {"k": k, "mu": mu, "se": se, "z": z, "p": float(2.0 * sps.norm.sf(abs(z))),
            "ci_low": mu - crit * se, "ci_high": mu + crit * se, "tau2": tau2,
            "i2": 100.0 * tau2 / (tau2 + s2), "h2": (tau2 + s2) / s2, "q": q,
            "p_q": float(sps.chi2.sf(q, k - 1)), "pi_low": pi_low, "pi_high": pi_high,
            "converged": int(converged)}


def _ranks_or_values(a: np.ndarray, method: str) -> np.ndarray:
    return sps.rankdata(a, axis=0) if method == "spearman" else a


def run_correlations(x: ArrayLike, y: ArrayLike, runs: ArrayLike, *, covar: ArrayLike | None = None,
                     method: str = "spearman") -> pd.DataFrame:
    """One correlation of ``x`` and ``y`` per run, on Fisher's z scale.

    Rows with a NaN are dropped. With ``covar`` (``[n]`` or ``[n, m]``) it is the partial
    correlation given the covariates: the Pearson correlation of the residuals of ``x``
    and ``y`` on the covariates and an intercept, all ranked first for Spearman (as
    ``pingouin.partial_corr(method="spearman")``).

    Returns
    -------
    pandas.DataFrame, one row per run (index = run label, in order of appearance), columns
    ``n``, ``r``, ``yi`` (``atanh r``), ``vi`` (``1 / (n - 3 - m)``).

    Raises
    ------
    StatsInputError
        Unknown method (``spearman`` or ``pearson``: Fisher's variance 1 / (n - 3) is theirs),
        a run with fewer than ``m + 4`` complete rows, a constant variable in a run, or a
        correlation of +-1 (Fisher's z infinite).
    """
    where = "run_correlations"
    v.choice(method, ("spearman", "pearson"), name="method", where=where)
    xa, ya = np.asarray(x, dtype=float).reshape(-1), np.asarray(y, dtype=float).reshape(-1)
    labels = np.asarray(runs).reshape(-1)
    ca = (np.empty((xa.size, 0)) if covar is None
          else np.asarray(covar, dtype=float).reshape(xa.size, -1))
    if not (xa.size == ya.size == labels.size == ca.shape[0]):
        raise StatsInputError(f"{where}: x, y, runs{' and covar' if covar is not None else ''} differ in length.")
    ok = np.isfinite(xa) & np.isfinite(ya) & np.all(np.isfinite(ca), axis=1)
    m = ca.shape[1]
    rows = {}
    for run in pd.unique(labels[ok]):
        sel = ok & (labels == run)
        n = int(sel.sum())
        if n < m + 4:
            raise StatsInputError(f"{where}: run {str(run)!r} has {n} complete rows; Fisher's z needs at "
                                  f"least {m + 4} with {m} covariate(s).")
        xs, ys = _ranks_or_values(xa[sel], method), _ranks_or_values(ya[sel], method)
        if m:
            D = np.column_stack([np.ones(n), _ranks_or_values(ca[sel], method)])
            xs = xs - D @ np.linalg.lstsq(D, xs, rcond=None)[0]
            ys = ys - D @ np.linalg.lstsq(D, ys, rcond=None)[0]
        xs, ys = xs - xs.mean(), ys - ys.mean()
        sx, sy = float(np.sqrt(xs @ xs)), float(np.sqrt(ys @ ys))
        if not (sx > 1e-12 * (1 + np.abs(xa[sel]).max()) and sy > 1e-12 * (1 + np.abs(ya[sel]).max())):
            raise StatsInputError(f"{where}: x or y is constant in run {str(run)!r}"
                                  f"{' given the covariates' if m else ''}.")
        r = float(np.clip((xs @ ys) / (sx * sy), -1.0, 1.0))
        if not abs(r) < 1.0:
            raise StatsInputError(f"{where}: the correlation in run {str(run)!r} is {r:+.0f}; Fisher's z is infinite.")
        rows[run] = {"n": n, "r": r, "yi": float(np.arctanh(r)), "vi": 1.0 / (n - 3 - m)}
    if not rows:
        raise StatsInputError(f"{where}: no complete rows.")
    return pd.DataFrame.from_dict(rows, orient="index")


def meta_replication(
    x: ArrayLike,
    y: ArrayLike,
    runs: ArrayLike,
    *,
    original_r: float,
    original_n: int,
    covar: ArrayLike | None = None,
    method: str = "spearman",
    estimator: str = "DL",
    ci: float = 0.95,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Replicate a published correlation across runs: pool one estimate per run.

    Each run's correlation of ``x`` and ``y`` (:func:`run_correlations`; partial on
    ``covar`` when given) is one study of a random-effects meta-analysis
    (:func:`random_effects` with ``estimator``). The pooled effect is tested against 0
    and, by the small-telescopes test (Simonsohn 2015, doi:10.1177/0956797614567341),
    against ``r33``, the correlation the original (``original_n`` pairs) had 33 % power to
    detect at two-sided ``alpha``: :math:`p = \\Phi((s \\hat\\mu - \\operatorname{atanh}
    r_{33}) / se)` with ``s`` the sign of ``original_r`` and ``mu``, ``se`` the pooled
    Fisher z and its standard error; small p means the pooled effect is smaller than the
    original could have seen. ``r33`` is on Pearson's scale, as in Simonsohn's code and
    :func:`lie_stats.stats.replication.replicate_correlation`.

    Returns
    -------
    pandas.DataFrame, one row, columns ``META_REPLICATION_COLUMNS``:

    - ``n`` (rows over all runs), ``statistic`` (z of the pooled Fisher z), ``p_value``
      (two-sided), ``effect`` (the pooled correlation, ``tanh mu``), ``ci_low``,
      ``ci_high`` (``tanh`` of the normal interval of ``mu``);
    - ``k_runs``, ``pooled_z``, ``pooled_z_se``, ``tau2`` (the declared estimator's),
      ``tau2_dl``, ``tau2_reml`` (both, for the reader), ``i2`` (percent, the declared
      estimator's), ``q``, ``p_q``, ``pi_low``, ``pi_high`` (``tanh`` of the prediction
      interval, NaN for fewer than 3 runs), ``min_run_r``, ``max_run_r``;
    - ``p_original_direction`` (one-sided p of the pooled z in the original's direction),
      ``r33``, ``p_small_telescopes``, ``original_r``, ``original_n``, ``n_covariates``,
      ``converged`` (0 when REML's scoring did not settle).

    Raises
    ------
    StatsInputError
        As :func:`run_correlations` and :func:`random_effects` (fewer than 2 runs);
        ``original_r`` zero or outside (-1, 1); ``original_n`` below 5.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> runs = np.repeat(["a", "b", "c", "d"], 96); x = rng.normal(size=384)
    >>> y = -0.3 * x + rng.normal(size=384)
    >>> row = meta_replication(x, y, runs, original_r=-0.274, original_n=96)
    >>> int(row["k_runs"].iloc[0]), bool(row["ci_high"].iloc[0] < 0)
    (4, True)
    """
    where = "meta_replication"
    v.choice(estimator, ESTIMATORS, name="estimator", where=where)
    alpha = v.level(alpha, name="alpha", where=where)
    r0 = check_original(original_r, original_n, where)
    per_run = run_correlations(x, y, runs, covar=covar, method=method)
    if len(per_run) < 2:
        raise StatsInputError(f"{where}: needs at least 2 runs to pool, got {len(per_run)}.")
    yi, vi = per_run["yi"].to_numpy(), per_run["vi"].to_numpy()
    fit = random_effects(yi, vi, method=estimator, ci=ci)
    other = random_effects(yi, vi, method="REML" if estimator == "DL" else "DL", ci=ci)
    dl, reml = (fit, other) if estimator == "DL" else (other, fit)
    sign = 1.0 if r0 > 0 else -1.0
    r_33 = r33(int(original_n), alpha=alpha)
    p_st = float(sps.norm.cdf((sign * fit["mu"] - np.arctanh(r_33)) / fit["se"]))
    n_cov = 0 if covar is None else int(np.asarray(covar).reshape(len(np.asarray(x).reshape(-1)), -1).shape[1])
    return v.frame(META_REPLICATION_COLUMNS, {
        C.N: int(per_run["n"].sum()), C.STATISTIC: fit["z"], C.P_VALUE: fit["p"],
        C.EFFECT: float(np.tanh(fit["mu"])), C.CI_LOW: float(np.tanh(fit["ci_low"])),
        C.CI_HIGH: float(np.tanh(fit["ci_high"])), K_RUNS: fit["k"], POOLED_Z: fit["mu"],
        POOLED_Z_SE: fit["se"], TAU2: fit["tau2"], TAU2_DL: dl["tau2"],
        TAU2_REML: reml["tau2"], I2: fit["i2"], Q: fit["q"], P_Q: fit["p_q"],
        PI_LOW: float(np.tanh(fit["pi_low"])), PI_HIGH: float(np.tanh(fit["pi_high"])),
        MIN_RUN_R: float(per_run["r"].min()), MAX_RUN_R: float(per_run["r"].max()),
        C.P_ORIGINAL_DIRECTION: float(sps.norm.sf(sign * fit["z"])), C.R33: r_33,
        C.P_SMALL_TELESCOPES: p_st, C.ORIGINAL_R: r0, C.ORIGINAL_N: int(original_n),
        C.N_COVARIATES: n_cov, C.CONVERGED: fit["converged"],
    })
