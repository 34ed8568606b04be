"""Model comparison for scaling questions (nested OLS, AIC/BIC) and descriptive mixed models.

These are reported as descriptive: heads are nested in layers and models, so OLS p-values
over heads ignore that structure; the nested permutation tests of
:mod:`lie_stats.stats.correlation` carry the inference.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from lie_stats.errors import StatsInputError, did_you_mean
from lie_stats.stats import _validate as v
from lie_stats.stats import columns as C

__all__ = ["compare_models", "mixed_model"]


def _check_columns(data: pd.DataFrame, names, where: str) -> None:
    if not isinstance(data, pd.DataFrame):
        raise StatsInputError(f"{where}: data must be a pandas DataFrame, got {type(data).__name__}.")
    for name in names:
        if name not in data.columns:
            raise StatsInputError(
                f"{where}: no column {name!r} in data.{did_you_mean(str(name), map(str, data.columns))} "
                f"Columns: {', '.join(map(str, data.columns))}.")


def _formula(response: str, terms: list[str]) -> str:
    q = [f"Q('{t}')" for t in terms]
    return f"Q('{response}') ~ " + (" + ".join(q) if q else "1")


def compare_models(data: pd.DataFrame, response: str, models: dict[str, list[str]]) -> pd.DataFrame:
    """Fit OLS models of ``response`` on numeric predictors and compare them.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per observation (e.g. per model of a scaling family).
    response : str
        Column to explain.
    models : dict of str to list of str
        Model name to its predictor columns (an intercept is always included; an empty list
        is the intercept-only model).

    Returns
    -------
    pandas.DataFrame, one row per model, index = model name, columns
    ``COMPARE_MODELS_COLUMNS``:

    - ``n``: rows used (the rows complete in every column any model uses, so that AIC values
      are comparable);
    - ``statistic``, ``p_value``: F test of the smallest model (fewest parameters, first in
      order on ties) against this one, when the smallest is nested in it (its predictors a
      subset); NaN for the smallest itself and for non-nested models
      (``statsmodels.stats.anova.anova_lm(small, big)``);
    - ``effect``: R^2; ``ci_low``, ``ci_high``: NaN (no interval for R^2 here);
    - ``aic``, ``bic``, ``delta_aic`` (AIC minus the smallest AIC), ``adj_r2``,
      ``n_params`` (including the intercept), ``nested_in`` (1 when the F test applies).

    Raises
    ------
    StatsInputError
        Unknown column (with a suggestion), no models, non-numeric predictor, fewer complete
        rows than the largest model has parameters plus one.

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 2.1, 2.9, 4.2, 5.1, 5.8], "x": [1, 2, 3, 4, 5, 6],
    ...                   "z": [0.3, 0.1, 0.4, 0.1, 0.5, 0.9]})
    >>> res = compare_models(d, "y", {"null": [], "x": ["x"], "xz": ["x", "z"]})
    >>> res.index.tolist(), bool(res.loc["x", "effect"] > 0.98)
    (['null', 'x', 'xz'], True)
    """
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    where = "compare_models"
    if not isinstance(models, dict) or not models:
        raise StatsInputError(f"{where}: models must be a non-empty dict of name -> predictor list.")
    used = [response] + sorted({t for terms in models.values() for t in terms})
    _check_columns(data, used, where)
    sub = data[used]
    for col in used:
        if not pd.api.types.is_numeric_dtype(sub[col]):
            raise StatsInputError(f"{where}: column {col!r} is not numeric ({sub[col].dtype}).")
    sub = sub.dropna().astype(float)
    max_params = 1 + max(len(t) for t in models.values())
    v.min_n(len(sub), max_params + 1, where=where, what="complete rows (one more than the largest model's parameters)")
    if sub[response].nunique() < 2:
        raise StatsInputError(f"{where}: response {response!r} is constant.")
    fits = {name: smf.ols(_formula(response, list(terms)), data=sub).fit() for name, terms in models.items()}
    smallest = min(models, key=lambda k: len(models[k]))
    small_fit, small_terms = fits[smallest], set(models[smallest])
    aics = {k: f.aic for k, f in fits.items()}
    best = min(aics.values())
    rows = []
    for name, fit in fits.items():
        nested = name != smallest and small_terms < set(models[name])
        f_stat = p = np.nan
        if nested:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                table = anova_lm(small_fit, fit)
            f_stat, p = float(table["F"].iloc[1]), float(table["Pr(>F)"].iloc[1])
        rows.append(v.frame(C.COMPARE_MODELS_COLUMNS, {
            C.N: int(fit.nobs), C.STATISTIC: f_stat, C.P_VALUE: p, C.EFFECT: float(fit.rsquared),
            C.CI_LOW: np.nan, C.CI_HIGH: np.nan, C.AIC: float(fit.aic), C.BIC: float(fit.bic),
            C.DELTA_AIC: float(fit.aic - best), C.ADJ_R2: float(fit.rsquared_adj),
            C.N_PARAMS: int(fit.df_model) + 1, C.NESTED_IN: nested,
        }, index=[name]))
    return pd.concat(rows)


def mixed_model(data: pd.DataFrame, formula: str, *, groups: str) -> pd.DataFrame:
    """Linear mixed model with a random intercept per group (layer), reported descriptively.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per observation (head).
    formula : str
        A patsy formula for the fixed effects, e.g. ``"change ~ contribution"``.
    groups : str
        Column of the grouping factor (``layer``): random intercept per group.

    Returns
    -------
    pandas.DataFrame, one row per fixed-effect coefficient, index = term name, columns
    ``MIXED_MODEL_COLUMNS``: ``n`` (observations), ``statistic`` (Wald z), ``p_value``,
    ``effect`` (coefficient), ``ci_low``, ``ci_high`` (Wald 95 %), ``std_err``,
    ``n_groups``, ``converged`` (1/0; a non-converged fit is returned, flagged, not
    hidden). Fitted by REML with ``statsmodels.formula.api.mixedlm``.

    Raises
    ------
    StatsInputError
        Unknown group column (with a suggestion), a formula statsmodels cannot build, fewer
        than 2 groups.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = pd.DataFrame({"layer": np.repeat(np.arange(6), 8), "x": rng.normal(size=48)})
    >>> d["y"] = 0.5 * d["x"] + np.repeat(rng.normal(size=6), 8) + rng.normal(size=48)
    >>> res = mixed_model(d, "y ~ x", groups="layer")
    >>> res.index.tolist()
    ['Intercept', 'x']
    """
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    where = "mixed_model"
    _check_columns(data, [groups], where)
    n_groups = int(data[groups].nunique())
    if n_groups < 2:
        raise StatsInputError(f"{where}: needs at least 2 groups in {groups!r}, got {n_groups}.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = smf.mixedlm(formula, data, groups=data[groups]).fit(reml=True)
        except Exception as e:  # patsy / statsmodels errors: bad formula, unknown column
            raise StatsInputError(f"{where}: cannot fit {formula!r} grouped by {groups!r}: {e}") from e
    converged = bool(getattr(fit, "converged", True)) and not any(
        issubclass(w.category, ConvergenceWarning) for w in caught)
    fe = fit.fe_params.index
    ci = fit.conf_int().loc[fe]
    rows = [v.frame(C.MIXED_MODEL_COLUMNS, {
        C.N: int(fit.nobs), C.STATISTIC: float(fit.tvalues[t]), C.P_VALUE: float(fit.pvalues[t]),
        C.EFFECT: float(fit.fe_params[t]), C.CI_LOW: float(ci.loc[t, 0]),
        C.CI_HIGH: float(ci.loc[t, 1]), C.STD_ERR: float(fit.bse[t]), C.N_GROUPS: n_groups,
        C.CONVERGED: converged,
    }, index=[t]) for t in fe]
    return pd.concat(rows)
