"""Replication of a published correlation, done as the field does it (DESIGN.md, replication).

A replication is judged by the new estimate and its interval, the one-sided test in the
original's direction, the test of difference from the original, the small-telescopes test
and the replication Bayes factor, never by "p < alpha again" alone.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import optimize
from scipy import stats as sps

from lie_stats.errors import StatsInputError
from lie_stats.stats import _validate as v
from lie_stats import columns as C
from lie_stats.stats.correlation import check_correlation_options, within_correlation
from lie_stats.stats.equivalence import fisher_z_se, rank_z_factor
from lie_stats.stats.permutation import permutation_pvalue

__all__ = ["replicate_correlation", "power_correlation", "r33", "check_original"]


def power_correlation(r: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided test of a Pearson correlation ``r`` on ``n`` pairs.

    The approximation of R's ``pwr::pwr.r.test`` (Cohen 1988; the form Simonsohn 2015 uses):
    :math:`r_c = \\sqrt{t^2 / (t^2 + n - 2)}` with ``t`` the two-sided critical t on
    ``n - 2`` df, :math:`z_r = \\operatorname{atanh} r + r / (2 (n - 1))`,
    :math:`\\text{power} = \\Phi((z_r - z_c)\\sqrt{n-3}) + \\Phi((-z_r - z_c)\\sqrt{n-3})`.

    Examples
    --------
    >>> round(power_correlation(0.3, 84), 3)  # pingouin.power_corr(r=0.3, n=84)
    0.8
    """
    tcrit = sps.t.isf(alpha / 2.0, n - 2)
    rc = np.sqrt(tcrit ** 2 / (tcrit ** 2 + n - 2))
    zr = np.arctanh(r) + r / (2.0 * (n - 1))
    zc = np.arctanh(rc)
    s = np.sqrt(n - 3)
    return float(sps.norm.cdf((zr - zc) * s) + sps.norm.cdf((-zr - zc) * s))


def r33(n: int, *, alpha: float = 0.05) -> float:
    """Correlation an original study of ``n`` pairs had 33 % power to detect (two-sided).

    Simonsohn (2015), "Small telescopes", doi:10.1177/0956797614567341; solves
    :func:`power_correlation` ``= 1/3`` for ``r > 0``.

    Examples
    --------
    >>> round(r33(96), 4)  # pingouin.power_corr(n=96, power=1/3) = 0.15653
    0.1565
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 5:
        raise StatsInputError(f"r33: n must be an integer >= 5, got {n!r}.")
    return _r33(int(n), float(alpha))


@functools.lru_cache(maxsize=256)
def _r33(n: int, alpha: float) -> float:
    return float(optimize.brentq(lambda r: power_correlation(r, n, alpha=alpha) - 1.0 / 3.0,
                                 1e-9, 1.0 - 1e-12, xtol=1e-14))


def check_original(original_r: object, original_n: object, where: str) -> float:
    """The original study's correlation as a float, after checking it and its size.

    ``original_r`` must be a number, non-zero and in (-1, 1); ``original_n`` an integer
    (not a bool) of at least 5, the smallest study :func:`r33` is defined for.

    Raises
    ------
    StatsInputError
        Naming ``where``, the argument and what was expected.

    Examples
    --------
    >>> check_original(-0.274, 96, "example")
    -0.274
    """
    try:
        r0 = float(original_r)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        r0 = float("nan")
    if not (-1.0 < r0 < 1.0) or r0 == 0.0:
        raise StatsInputError(f"{where}: original_r must be non-zero and in (-1, 1), got {original_r!r}.")
    if isinstance(original_n, bool) or not isinstance(original_n, (int, np.integer)) or original_n < 5:
        raise StatsInputError(f"{where}: original_n must be an integer >= 5, got {original_n!r}.")
    return r0


def replicate_correlation(
    x: ArrayLike,
    y: ArrayLike,
    *,
    original_r: float,
    original_n: int,
    strata: ArrayLike | None,
    method: str = "spearman",
    n_perm: int = 9999,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Replicate a published correlation ``original_r`` (on ``original_n`` pairs) on new data.

    The new estimate is the correlation *within strata* (layers;
    :func:`lie_stats.stats.correlation.within_correlation`): layer effects shared by both
    variables make the pooled correlation a between-layer figure, which the within-layer
    permutation p does not test. Its standard error respects the strata: the standard
    deviation of the within-strata permutation null on Fisher's scale, not the
    independent-units formula (heads of a layer are not independent units of a pooled
    correlation).

    Parameters
    ----------
    x, y : array-like, shape ``[n]``
        New data; NaN pairs dropped.
    original_r : float
        The original correlation, non-zero, in (-1, 1) (its sign is the direction tested),
        on the scale of ``method`` (a Kendall replication replicates a Kendall tau).
    original_n : int
        The original number of pairs.
    strata, method, n_perm, n_boot, ci, seed
        As :func:`lie_stats.stats.correlation` (within-strata permutation, cluster bootstrap).
    alpha : float, default 0.05
        Level at which ``r33`` is defined (two-sided, as in Simonsohn 2015).

    Returns
    -------
    pandas.DataFrame, one row, columns ``REPLICATION_COLUMNS``:

    - ``n``; ``statistic``: the pooled correlation (the permutation statistic);
      ``effect``: the within-strata correlation ``r_w`` (the pooled one without strata);
      ``p_value``: its two-sided within-strata permutation p; ``ci_low``, ``ci_high``: the
      percentile interval of ``r_w`` over the cluster bootstrap;
    - ``p_original_direction``: one-sided permutation p in the original's direction (same
      permutations);
    - ``z_difference``, ``p_difference``: Fisher z test of new vs original,
      :math:`(z_{new} - z_{orig}) / \\sqrt{se_{new}^2 + se_{orig}^2}`, two-sided;
      :math:`z_{new} = \\operatorname{atanh} r_w`, ``se_new`` the permutation standard error
      (times :func:`lie_stats.stats.equivalence.rank_z_factor` at ``r_w``), ``se_orig`` the
      independent-pairs one of the original (:func:`lie_stats.stats.equivalence.fisher_z_se`:
      Spearman ``1.06 / (n - 3)``, Fieller et al. 1957);
    - ``r33``: the (positive) Pearson correlation the original had 33 % power to detect
      (:func:`r33`, Pearson power formula as in Simonsohn's own code);
    - ``p_small_telescopes``: one-sided test that the new effect, signed in the original's
      direction, is smaller than ``r33``: :math:`\\Phi((\\operatorname{atanh}(s r_w) -
      \\operatorname{atanh} c_{33}) / se_{new})`, ``s = sign(original_r)``; small p means
      the original could hardly have seen an effect this small. ``c33 = r33`` for Pearson and
      Spearman; for Kendall the threshold is put on tau's own scale by Greiner's relation,
      :math:`c_{33} = (2/\\pi) \\arcsin r_{33}` (Greiner 1909;
      Kruskal 1958, doi:10.1080/01621459.1958.10501481; exact for bivariate normal data), so that tau is never compared with a Pearson r;
    - ``bf_replication``: replication Bayes factor (Verhagen & Wagenmakers 2014,
      doi:10.1037/a0036731), the original's posterior as prior, in the **Fisher-z normal
      approximation**: with a flat prior the posterior after the original is
      :math:`N(z_{orig}, se_{orig}^2)`; the replication ``z_new ~ N(zeta, se_new^2)``; so
      :math:`BF_{r0} = N(z_{new}; z_{orig}, se_{orig}^2 + se_{new}^2) / N(z_{new}; 0, se_{new}^2)`;
      above 1 favours the original's effect over the null;
    - ``original_r``, ``original_n``, ``n_strata``, ``n_perm``, ``exact``.

    The tests that need ``se_new`` (difference, small telescopes, Bayes factor) are NaN
    when the permutation null has fewer than ``MIN_PERM_SE`` (99) permutations.

    Raises
    ------
    StatsInputError
        As :func:`lie_stats.stats.correlation`; ``original_r`` zero or outside (-1, 1);
        ``original_n`` below 5; a new ``|r_w| = 1`` (Fisher z undefined).

    Examples
    --------
    >>> rng = np.random.default_rng(0); x = rng.normal(size=100)
    >>> y = -0.4 * x + rng.normal(size=100)
    >>> res = replicate_correlation(x, y, original_r=-0.274, original_n=96, strata=None,
    ...                             n_perm=999, n_boot=0)
    >>> bool(res["p_original_direction"].iloc[0] < 0.01)
    True
    """
    where = "replicate_correlation"
    check_correlation_options(method, "two-sided", n_perm, n_boot, ci, seed, where)
    alpha = v.level(alpha, name="alpha", where=where)
    r0 = check_original(original_r, original_n, where)
    w = within_correlation(x, y, strata=strata, method=method, n_perm=n_perm, n_boot=n_boot,
                           seed=seed, where=where)
    r_new, n = w.r, w.n
    if not abs(r_new) < 1.0:
        raise StatsInputError(f"{where}: the new within-strata correlation is {r_new:+.0f}; "
                              f"Fisher's z is undefined.")
    if n < (5 if method == "kendall" else 4):
        raise StatsInputError(f"{where}: needs at least {5 if method == 'kendall' else 4} pairs for "
                              f"Fisher's z, got {n}.")
    sign = 1.0 if r0 > 0 else -1.0
    p_two = permutation_pvalue(w.statistic, w.t_null, alternative="two-sided", center=w.center)
    p_dir = permutation_pvalue(w.statistic, w.t_null, alternative="greater" if sign > 0 else "less")
    se_new = w.se_z * rank_z_factor(r_new, method)
    se_orig = fisher_z_se(int(original_n), method)
    z_new, z_orig = float(np.arctanh(r_new)), float(np.arctanh(r0))
    z_diff = (z_new - z_orig) / np.hypot(se_new, se_orig)
    r_33 = r33(int(original_n), alpha=alpha)
    c_33 = 2.0 / np.pi * np.arcsin(r_33) if method == "kendall" else r_33
    p_st = float(sps.norm.cdf((np.arctanh(sign * r_new) - np.arctanh(c_33)) / se_new))
    log_bf = (sps.norm.logpdf(z_new, z_orig, np.hypot(se_new, se_orig))
              - sps.norm.logpdf(z_new, 0.0, se_new))
    lo, hi = v.percentile_ci(w.r_boot, ci) if n_boot else (np.nan, np.nan)
    return v.frame(C.REPLICATION_COLUMNS, {
        C.N: n, C.STATISTIC: w.statistic, C.P_VALUE: p_two, C.EFFECT: r_new, C.CI_LOW: lo,
        C.CI_HIGH: hi, C.P_ORIGINAL_DIRECTION: p_dir, C.Z_DIFFERENCE: z_diff,
        C.P_DIFFERENCE: float(2.0 * sps.norm.sf(abs(z_diff))), C.R33: r_33,
        C.P_SMALL_TELESCOPES: p_st, C.BF_REPLICATION: float(np.exp(log_bf)),
        C.ORIGINAL_R: r0, C.ORIGINAL_N: int(original_n), C.N_STRATA: w.plan.n_strata,
        C.N_PERM: w.plan.size, C.EXACT: w.plan.exact,
    })
