"""Model comparison for scaling questions (OLS, AIC/BIC, encompassing F tests) and
random-intercept mixed models with within-group slopes.

The OLS fits of :func:`compare_models` and :func:`added_terms_test` have one row per model
of a scaling family (independent runs); :func:`mixed_model` has one row per head, heads
nested in layers, and accounts for it with a random layer intercept and within-layer slopes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from lie_stats.errors import StatsInputError, did_you_mean
from lie_stats.stats import _validate as v
from lie_stats import columns as C

__all__ = ["R_RANK_TOL", "added_terms_test", "compare_models", "independent_columns", "mixed_model",
           "simple_slope"]

#: Relative tolerance of R's ``qr`` (LINPACK ``dqrdc2``), which ``lm``, ``anova`` and the
#: model frames of ``nlme``/``lme4`` rank designs with: a column whose part orthogonal to the
#: columns kept before it is shorter than this fraction of its own length is collinear.
R_RANK_TOL = 1e-7


def independent_columns(X, tol: float = R_RANK_TOL) -> tuple[np.ndarray, np.ndarray]:
    """Which columns of a design R's ``qr(X, tol = 1e-7)`` keeps, in R's order of preference.

    Columns are taken left to right, as LINPACK's ``dqrdc2`` (R's ``qr``, hence ``lm``)
    does with its limited pivoting: a column is dropped (moved to the end, not counted in
    the rank) when the norm of its part orthogonal to the columns already kept is below
    ``tol`` times its original norm (a zero column is always dropped). numpy's
    ``matrix_rank`` instead counts singular values above ``eps * max(n, p)`` times the
    largest, so a column that is constant up to 1e-9 of its size beside an intercept counts
    as independent there and the fit trades huge opposite coefficients between them.

    Returns
    -------
    (keep, residual)
        ``keep`` a boolean mask of the columns kept; ``residual`` each column's orthogonal
        part's norm relative to its own norm (1 for the first non-zero column).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 3.0, 4.0])
    >>> X = np.column_stack([np.ones(4), x, 0.125 + 1e-9 * x ** 2, 2 * x + 1])
    >>> independent_columns(X)[0].tolist(), int(np.linalg.matrix_rank(X))
    ([True, True, False, False], 3)
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    norms = np.linalg.norm(X, axis=0)
    keep, residual = np.zeros(p, dtype=bool), np.zeros(p)
    basis = np.empty((n, 0))
    for j in range(p):
        r = X[:, j].copy()
        for _ in range(2):  # Gram-Schmidt twice: orthogonal to working precision
            r -= basis @ (basis.T @ r)
        size = float(np.linalg.norm(r))
        residual[j] = size / norms[j] if norms[j] > 0 else 0.0
        if basis.shape[1] < n and norms[j] > 0 and size >= tol * norms[j]:
            keep[j] = True
            basis = np.column_stack([basis, r / size])
    return keep, residual


def _dropped_note(names, residual, kept_before: list[str]) -> str:
    """The note for columns dropped as collinear."""
    parts = [f"{name} (orthogonal part {res:.2g} of its norm)" for name, res in zip(names, residual)]
    return (f"dropped as constant or collinear with {', '.join(kept_before) or 'nothing'} up to R's "
            f"rank tolerance {R_RANK_TOL:g}: {', '.join(parts)}")


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
      ``n_params`` (the rank, intercept included), ``nested_in`` (1 when the F test applies).

    Each model's design is ranked as R's ``lm`` ranks it (:func:`independent_columns`): a
    predictor constant or collinear with those before it up to R's tolerance 1e-7 is
    dropped from that model (as ``lm`` gives it an NA coefficient), with a note in
    ``result.attrs["notes"]``.

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
    notes, fits = [], {}
    for name, terms in models.items():
        terms = list(dict.fromkeys(terms))
        keep, residual = independent_columns(np.column_stack([np.ones(len(sub)), sub[terms].to_numpy()]))
        kept = [t for t, k in zip(terms, keep[1:]) if k]
        if len(kept) < len(terms):
            gone = [i for i, k in enumerate(keep[1:]) if not k]
            notes.append(f"model {name!r}: " + _dropped_note([terms[i] for i in gone], residual[1:][gone],
                                                           ["the intercept", *kept]))
        fits[name] = smf.ols(_formula(response, kept), data=sub).fit()
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
    out = pd.concat(rows)
    out.attrs["notes"] = notes
    return out


def added_terms_test(data: pd.DataFrame, response: str, base: list[str],
                     added: list[str]) -> tuple[float, float, int, int]:
    """F test of whether ``added`` predictors explain ``response`` beyond ``base`` (OLS).

    The model with the predictors of both lists against the model with ``base`` alone, on
    the rows complete in every column either uses: the partial F test, exact for normal
    errors at any n (``statsmodels.stats.anova.anova_lm(small, big)``). With ``base`` one
    rival model's predictors and ``added`` another's, it is the encompassing test of
    non-nested linear models (Mizon & Richard 1986; Davidson & MacKinnon 1981).

    Both designs are ranked as R's ``lm`` ranks them (:func:`independent_columns`): a
    predictor constant or collinear with those before it (``base`` first) up to R's
    tolerance is dropped, so the test is ``anova(lm(small), lm(big))`` of R.

    Returns
    -------
    (F, p, df_num, df_den)
        ``df_num`` the rank the predictors of ``added`` add to ``base``'s, ``df_den`` the
        rows less the joint rank; F and p NaN when they add none or when the joint model
        leaves no residual degree of freedom (``df_den`` < 1).

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 2.1, 2.9, 4.2, 5.1, 5.8], "x": [1, 2, 3, 4, 5, 6],
    ...                   "z": [0.3, 0.1, 0.4, 0.1, 0.5, 0.9]})
    >>> f, p, k, df = added_terms_test(d, "y", ["z"], ["x"])
    >>> bool(p < 0.01), k, df
    (True, 1, 3)
    """
    from scipy import stats as sps

    where = "added_terms_test"
    base_terms = list(dict.fromkeys(base))
    joint = base_terms + [t for t in dict.fromkeys(added) if t not in base_terms]
    _check_columns(data, [response, *joint], where)
    sub = data[[response, *joint]].dropna().astype(float)
    y = sub[response].to_numpy()
    ones = np.ones((len(sub), 1))

    def rss(terms: list[str]) -> tuple[float, int]:
        X = np.hstack([ones, sub[terms].to_numpy()])
        X = X[:, independent_columns(X)[0]]  # ranked as R's lm ranks it
        beta = np.linalg.lstsq(X, y, rcond=None)[0]
        return float(np.sum((y - X @ beta) ** 2)), X.shape[1]

    (small, rank_small), (big, rank) = rss(base_terms), rss(joint)
    k, df_den = rank - rank_small, len(sub) - rank
    if k == 0 or df_den < 1:
        return float("nan"), float("nan"), k, df_den
    if not big > 1e-12 * max(small, 1e-300):
        return float("nan"), float("nan"), k, df_den  # an exact fit: nothing to test
    f = (small - big) / k / (big / df_den)
    return float(f), float(sps.f.sf(f, k, df_den)), k, df_den


def simple_slope(data: pd.DataFrame, response: str, term: str, *, ci: float = 0.95) -> tuple[float, float, float]:
    """OLS slope of ``response`` on one predictor ``term`` (with an intercept) and its t
    interval (Student, ``n - 2`` df; exact for normal errors).

    Parameters
    ----------
    data : pandas.DataFrame
        One row per observation; rows with a NaN in either column are dropped.
    response, term : str
        The columns.
    ci : float, default 0.95
        Two-sided level of the interval.

    Returns
    -------
    (slope, low, high)
        NaN when fewer than 3 complete rows or ``term`` is constant up to R's rank
        tolerance (:func:`independent_columns`: no slope, as R's ``lm`` gives NA, or no
        residual degree of freedom); the interval is the point when the fit is exact.

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 2.1, 2.9, 4.2, 5.1, 5.8], "x": [1, 2, 3, 4, 5, 6]})
    >>> b, lo, hi = simple_slope(d, "y", "x")
    >>> round(b, 3), bool(lo < b < hi), bool(lo > 0.8)
    (0.98, True, True)
    """
    from scipy import stats as sps

    where = "simple_slope"
    ci = v.level(ci, name="ci", where=where)
    _check_columns(data, [response, term], where)
    sub = data[[response, term]].dropna().astype(float)
    nan = float("nan")
    x, y = sub[term].to_numpy(), sub[response].to_numpy()
    sxx = float(((x - x.mean()) ** 2).sum())
    if len(sub) < 3 or not independent_columns(np.column_stack([np.ones(len(x)), x]))[0][1]:
        return nan, nan, nan
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    resid = y - y.mean() - slope * (x - x.mean())
    df = len(sub) - 2
    se = float(np.sqrt((resid ** 2).sum() / df / sxx))
    half = float(sps.t.ppf(0.5 + ci / 2.0, df)) * se
    return slope, slope - half, slope + half


#: Relative size under which a column's deviations from its group means count as zero (the
#: column is constant within groups: a group-level term).
_WITHIN_TOL = 1e-10
#: Search range of log(group variance / residual variance) for the REML optimum.
_LOG_RATIO_RANGE = (-18.0, 14.0)


def _group_sums(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Sums of the rows of ``values`` ([N] or [N, p]) per group code."""
    if values.ndim == 1:
        return np.bincount(codes, weights=values, minlength=n_groups)
    return np.stack([np.bincount(codes, weights=col, minlength=n_groups) for col in values.T], axis=1)


def _mundlak(X: pd.DataFrame, codes: np.ndarray, n_groups: int, notes: list[str],
             dropped: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Add the group mean of every column that varies within groups (Mundlak 1978).

    With its group mean beside it, a column's coefficient in the random-intercept GLS fit is
    its within-group slope exactly (the fixed-effects estimate, balanced or not), and the
    group mean's coefficient is the between-group slope minus the within one. Group-level
    columns (constant within every group) and the intercept are left as they are. A group
    mean that the design already spans up to R's rank tolerance (:func:`independent_columns`;
    e.g. the layer mean of a within-layer share, the same in every layer up to rounding) is
    left out, its name appended to ``dropped`` and a note to ``notes``. Returns the augmented design and the names
    of the within-group (inner) columns.
    """
    counts = np.bincount(codes, minlength=n_groups).astype(float)
    out, inner = X.copy(), []
    for name in X.columns:
        col = X[name].to_numpy(dtype=float)
        means = _group_sums(col, codes, n_groups)[codes] / counts[codes]
        if np.max(np.abs(col - means)) <= _WITHIN_TOL * (np.max(np.abs(col)) + 1.0):
            continue  # intercept or a group-level column
        inner.append(str(name))
        trial = out.assign(**{f"mean[{name}]": means})
        keep, residual = independent_columns(trial.to_numpy())
        if keep[-1]:
            out = trial
        else:  # a group mean collinear with the others (few groups, a within-group share) adds nothing
            dropped.append(f"mean[{name}]")
            notes.append(_dropped_note(dropped[-1:], residual[-1:], [str(c) for c in out.columns]))
    return out, inner


def _reml_fit(y: np.ndarray, X: np.ndarray, codes: np.ndarray, n_groups: int) -> dict:
    """REML fit of ``y = X b + u[group] + e``, ``u ~ N(0, tau2)``, ``e ~ N(0, sigma2)``.

    The restricted likelihood is profiled over ``gamma = tau2 / sigma2`` (``sigma2`` and ``b``
    in closed form given ``gamma``; Pinheiro & Bates 2000, 2.2): a one-dimensional problem,
    searched on a grid of ``log gamma`` and refined by bounded Brent, with ``gamma = 0``
    (the boundary) compared explicitly. ``b`` is the GLS estimate and ``cov`` its covariance
    ``(X' V^-1 X)^-1`` at the estimated variances (as lme4, nlme and SAS report it; Laird &
    Ware 1982).
    """
    from scipy.optimize import minimize_scalar

    n, p = X.shape
    sizes = np.bincount(codes, minlength=n_groups).astype(float)
    S, t = _group_sums(X, codes, n_groups), _group_sums(y, codes, n_groups)
    XtX, Xty, yty = X.T @ X, X.T @ y, float(y @ y)

    def pieces(gamma: float):
        c = gamma / (1.0 + gamma * sizes)  # V_g^-1 sigma2 = I - c_g 1 1'
        A = XtX - (S * c[:, None]).T @ S
        bvec = Xty - S.T @ (c * t)
        beta = np.linalg.solve(A, bvec)
        rss = yty - float(c @ t ** 2) - float(beta @ bvec)
        return A, beta, max(rss, 0.0)

    def objective(gamma: float) -> float:  # -2 restricted log-likelihood, constants dropped
        A, _, rss = pieces(gamma)
        if rss <= 0:
            return -np.inf
        sign, logdet = np.linalg.slogdet(A)
        return (n - p) * np.log(rss / (n - p)) + float(np.log1p(gamma * sizes).sum()) + logdet

    grid = np.arange(_LOG_RATIO_RANGE[0], _LOG_RATIO_RANGE[1] + 1e-9, 1.0)
    values = np.array([objective(np.exp(g)) for g in grid])
    k = int(np.argmin(values))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    ref = minimize_scalar(lambda g: objective(np.exp(g)), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-8})
    gamma, best = (float(np.exp(ref.x)), float(ref.fun)) if ref.fun <= values[k] else (
        float(np.exp(grid[k])), float(values[k]))
    at_zero = objective(0.0)
    boundary = at_zero <= best + 1e-9
    if boundary:
        gamma = 0.0
    A, beta, rss = pieces(gamma)
    sigma2 = rss / (n - p)
    # an optimum at the top of the range means no residual variance is left within groups
    degenerate = not boundary and np.log(gamma) >= _LOG_RATIO_RANGE[1] - 1.0
    return {"beta": beta, "cov": sigma2 * np.linalg.inv(A), "sigma2": sigma2,
            "tau2": gamma * sigma2, "boundary": bool(boundary),
            "converged": bool(np.isfinite(best) and not degenerate and sigma2 > 0)}


def mixed_model(data: pd.DataFrame, formula: str, *, groups: str) -> pd.DataFrame:
    """Linear mixed model with a random intercept per group (layer), within-group slopes.

    Every column of the fixed-effects design that varies within groups gets its group mean
    as an extra covariate (Mundlak 1978; the "within-between" model): its coefficient is
    then the within-group slope, which layer effects shared by ``y`` and ``x`` cannot
    produce, and the group mean's coefficient (row ``mean[x]``) the difference between the
    between-group and the within-group slopes. Without it, the random-intercept slope is a
    precision-weighted mix of the two, and co-varying layer means made it "significant" in
    11-18 % of null data sets.

    The fit is REML, profiled over the variance ratio (:func:`_reml_fit`), so it is the
    same for ``y`` and ``20 * y``. A group variance estimated at 0 is a converged fit at
    the boundary (``boundary`` 1), not a failure. Standard errors are the GLS
    ``(X' V^-1 X)^-1`` at the REML variances (lme4, nlme, SAS; Laird & Ware 1982), and the
    reference is a t distribution with the between-within degrees of freedom of nlme
    (Pinheiro & Bates 2000, 2.4.2; SAS DDFM=BETWITHIN): ``N - G - p_inner`` for the
    intercept and the within-group columns (``p_inner`` of them), ``G - 1 - p_outer`` for
    the group-level columns (group means included, ``p_outer`` of them).

    The design is ranked as R ranks it (:func:`independent_columns`, relative tolerance
    1e-7): a column constant or collinear with the columns before it up to the data's
    precision is dropped, with a note in ``result.attrs["notes"]``, as R's ``lm`` and
    ``lme4`` drop it; the layer mean of a within-layer share (equal in every layer up to
    rounding) is such a column beside the intercept, and kept, it traded intercepts of
    order 1e5 against its own coefficient.

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
    pandas.DataFrame, one row per fixed-effect coefficient (the formula's, then the added
    group means, less the columns dropped as collinear), index = term name, columns
    ``MIXED_MODEL_COLUMNS``: ``n``
    (observations), ``statistic`` (t), ``p_value`` (two-sided), ``effect`` (coefficient),
    ``ci_low``, ``ci_high`` (t 95 %), ``std_err``, ``df``, ``n_groups``, ``converged``
    (1/0), ``boundary`` (1 when the group variance is 0), ``group_variance``,
    ``residual_variance``. ``attrs["dropped"]``: the names of the columns dropped;
    ``attrs["notes"]``: one sentence per set of them.

    Raises
    ------
    StatsInputError
        Unknown group column (with a suggestion), a formula patsy cannot build, fewer than 2
        groups or too few observations for the design.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = pd.DataFrame({"layer": np.repeat(np.arange(6), 8), "x": rng.normal(size=48)})
    >>> d["y"] = 0.5 * d["x"] + np.repeat(rng.normal(size=6), 8) + rng.normal(size=48)
    >>> res = mixed_model(d, "y ~ x", groups="layer")
    >>> res.index.tolist(), int(res.loc["x", "df"])  # 48 - 6 groups - 1 within column
    (['Intercept', 'x', 'mean[x]'], 41)
    """
    import patsy
    from scipy import stats as sps

    where = "mixed_model"
    _check_columns(data, [groups], where)
    # columns as arrays (categoricals kept as such): patsy is several times faster on them
    # than on a DataFrame, and the rows it keeps are then numbered by position
    source = {str(c): (data[c].array if isinstance(data[c].dtype, pd.CategoricalDtype)
                       else data[c].to_numpy()) for c in data.columns}
    try:
        y_frame, X = patsy.dmatrices(formula, source, return_type="dataframe", NA_action="drop")
    except Exception as e:  # patsy errors: bad formula, unknown column
        raise StatsInputError(f"{where}: cannot fit {formula!r} grouped by {groups!r}: {e}") from e
    labels = data[groups].iloc[X.index.to_numpy()]
    if labels.isna().any():
        raise StatsInputError(f"{where}: the group column {groups!r} has missing labels.")
    codes = np.unique(labels.to_numpy(), return_inverse=True)[1].reshape(-1)
    n_groups = int(codes.max()) + 1 if codes.size else 0
    if n_groups < 2:
        raise StatsInputError(f"{where}: needs at least 2 groups in {groups!r}, got {n_groups}.")
    notes: list[str] = []
    keep, residual = independent_columns(X.to_numpy())
    dropped = [str(c) for c in X.columns[~keep]]
    if dropped:
        notes.append(_dropped_note(dropped, residual[~keep], [str(c) for c in X.columns[keep]]))
        X = X.loc[:, keep]
    X, inner = _mundlak(X, codes, n_groups, notes, dropped)
    n, p = X.shape
    n_outer = sum(1 for c in X.columns if c not in inner and c != "Intercept")
    df_inner, df_outer = n - n_groups - len(inner), n_groups - 1 - n_outer
    if n - p < 1 or df_inner < 1:
        raise StatsInputError(f"{where}: {n} observations in {n_groups} groups leave no degrees of "
                              f"freedom for {p} fixed effects.")
    y = y_frame.iloc[:, 0].to_numpy(dtype=float)
    # fitted on a standardized response (an intercept absorbs the centring), so that the
    # fit is the same in any units of y
    centre = float(y.mean()) if "Intercept" in X.columns else 0.0
    spread = float(np.sqrt(np.mean((y - centre) ** 2)))
    if not spread > 0:
        raise StatsInputError(f"{where}: the response of {formula!r} is constant.")
    fit = _reml_fit((y - centre) / spread, X.to_numpy(dtype=float), codes, n_groups)
    beta = fit["beta"] * spread
    if "Intercept" in X.columns:
        beta[list(X.columns).index("Intercept")] += centre
    se = np.sqrt(np.diag(fit["cov"])) * spread
    terms = [str(t) for t in X.columns]
    df = np.array([df_inner if t in inner or t == "Intercept" else df_outer for t in terms], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, beta / se, np.nan)
    ok = (df >= 1) & np.isfinite(t)
    safe_df = np.where(ok, df, 1.0)
    p_value = np.where(ok, 2 * sps.t.sf(np.abs(np.nan_to_num(t)), safe_df), np.nan)
    q = np.where(ok, sps.t.ppf(0.975, safe_df), np.nan)
    k = len(terms)
    columns = {
        C.N: np.full(k, n), C.STATISTIC: t, C.P_VALUE: p_value, C.EFFECT: beta,
        C.CI_LOW: beta - q * se, C.CI_HIGH: beta + q * se, C.STD_ERR: se, C.DF: df,
        C.N_GROUPS: np.full(k, n_groups), C.CONVERGED: np.full(k, int(fit["converged"])),
        C.BOUNDARY: np.full(k, int(fit["boundary"])),
        C.GROUP_VARIANCE: np.full(k, fit["tau2"] * spread ** 2),
        C.RESIDUAL_VARIANCE: np.full(k, fit["sigma2"] * spread ** 2),
    }
    out = pd.DataFrame({c: columns[c] for c in C.MIXED_MODEL_COLUMNS}, index=terms)
    out.attrs["notes"], out.attrs["dropped"] = notes, dropped
    return out
