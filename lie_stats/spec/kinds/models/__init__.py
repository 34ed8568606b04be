"""Model kinds: ``model_comparison`` and ``mixed_model`` (:mod:`lie_stats.stats.models`).

``model_comparison`` fits OLS models of a per-model response (the selection averaged over
layers and heads) on model-shape predictors (:data:`~lie_stats.spec.tables.MODEL_PREDICTORS`)
and decides by encompassing F tests (does the predicted model's predictor explain the
response beyond each rival's, and the reverse); AIC is reported beside them. With 5-6 runs
an AIC margin of 2 picked a model in 41 % of null data sets; the F tests hold alpha.
``mixed_model`` is a linear mixed model with a random intercept per stratum (layer),
within-layer slopes (group means added, Mundlak 1978) and a t test of one coefficient.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ....errors import SpecError, StatsInputError, did_you_mean
from .... import columns as C
from ....columns import (AIC_MARGIN, PREDICTED_SLOPE, PREDICTED_SLOPE_CI_HIGH,
                              PREDICTED_SLOPE_CI_LOW, P_PREDICTED_ADDS, P_RIVAL_ADDS, RIVAL)
from ....stats.models import added_terms_test, compare_models, mixed_model, simple_slope
from ...parts import check_choice, spec_error
from ...registry import register_test
from ...rules import Decision, decide_directional, finite
from ...tables import MODEL_PREDICTORS, TestInput, model_table

__all__ = ["decide_model_comparison",
           "decide_mixed_model", "encompassing_tests"]

#: Level of the slope's interval.
SLOPE_CI = 0.95
#: Names a ``mixed_model`` formula may use besides the selection's roles.
_FORMULA_WORDS = ("I", "np", "log", "log2", "log10", "exp", "sqrt", "center", "standardize", "scale")
_GROUP_COLUMN = "stratum"


def encompassing_tests(table: Any, models: Mapping[str, Sequence[str]], predicted: str) -> dict[str, float]:
    """The F tests ``decide_model_comparison`` reads, on the rows of ``table`` complete in
    every column a model uses: ``p_predicted_adds`` (the largest p of the predicted model's
    predictors added to a rival's), ``p_rival_adds`` (the smallest Bonferroni-adjusted p of
    a rival's added to the predicted model's), ``statistic`` (F of the former), ``n_rivals``.
    """
    rivals = [m for m in models if m != predicted]
    used = sorted({t for terms in models.values() for t in terms})
    rows = table[["response", *used]].dropna()
    adds = {m: added_terms_test(rows, "response", list(models[m]), list(models[predicted])) for m in rivals}
    back = [added_terms_test(rows, "response", list(models[predicted]), list(models[m]))[1] for m in rivals]
    p_adds = [adds[m][1] for m in rivals]
    defined = bool(rivals) and all(math.isfinite(q) for q in p_adds)
    worst = max(rivals, key=lambda m: adds[m][1]) if defined else None
    adjusted = [min(1.0, q * len(rivals)) for q in back if math.isfinite(q)]
    return {C.STATISTIC: adds[worst][0] if worst else float("nan"),
            P_PREDICTED_ADDS: max(p_adds) if defined else float("nan"),
            P_RIVAL_ADDS: min(adjusted) if adjusted else float("nan"), RIVAL: len(rivals)}


def _run_model_comparison(data: TestInput) -> Any:
    p = data.params
    table = model_table(data)
    models = {str(k): list(v) for k, v in p["models"].items()}
    res = compare_models(table, "response", models)
    pred = p["predicted"]
    others = res.drop(index=pred)
    margin = float(others[C.AIC].min() - res.loc[pred, C.AIC]) if len(others) else float("nan")
    tests = encompassing_tests(table, models, pred)
    nan = float("nan")
    used = sorted({t for terms in models.values() for t in terms})
    rows = table[["response", *used]].dropna()  # the rows the models are compared on
    slope = (simple_slope(rows, "response", models[pred][0], ci=SLOPE_CI)
             if len(models[pred]) == 1 else (nan, nan, nan))
    # the p that decides "supported": an intersection-union test over the rivals
    return res.loc[[pred]].reset_index(drop=True).assign(
        **tests, **{C.P_VALUE: tests[P_PREDICTED_ADDS], AIC_MARGIN: margin,
                    PREDICTED_SLOPE: slope[0], PREDICTED_SLOPE_CI_LOW: slope[1],
                    PREDICTED_SLOPE_CI_HIGH: slope[2]})


def decide_model_comparison(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Encompassing F tests of the predicted model against each rival (OLS over runs).

    Supported when the predicted model's predictors explain the response beyond every
    rival's (partial F test of rival + predicted against the rival, p < alpha for each
    rival: an intersection-union test) and no rival's predictors add beyond the predicted
    model's (Bonferroni over the rivals); refuted when some rival's predictors add beyond
    the predicted model's (Bonferroni-adjusted p < alpha) and the predicted ones do not add
    beyond every rival; inconclusive otherwise, also when a test is undefined (the predicted
    model nested in a rival, no residual degrees of freedom: 5 runs leave 2 for two
    one-predictor rivals). The F tests are exact for normal errors at any number of runs;
    an AIC margin is not a test and on 5-6 runs picked a model in 41 % of null data sets
    (Burnham & Anderson 2002 give no error rate for it), so it is reported, not used.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("preferred"), 0.05, {}, {})
    >>> decide_model_comparison({P_PREDICTED_ADDS: 0.01, P_RIVAL_ADDS: 0.6}, ctx)[0]
    'supported'
    >>> decide_model_comparison({P_PREDICTED_ADDS: 0.4, P_RIVAL_ADDS: 0.02}, ctx)[0]
    'refuted'
    >>> decide_model_comparison({P_PREDICTED_ADDS: 0.01, P_RIVAL_ADDS: 0.02}, ctx)[1]
    'both the predicted and a rival model explain what the other leaves (p 0.01 and 0.02 < alpha 0.05): neither is preferred'
    """
    a = ctx.alpha
    mine, rival = row.get(P_PREDICTED_ADDS), row.get(P_RIVAL_ADDS)
    mine_ok, rival_ok = finite(mine), finite(rival)
    if not mine_ok and not rival_ok:
        return "inconclusive", ("no F test is defined on these data (a single model, the predicted one "
                                "nested in a rival, or no residual degrees of freedom)")
    wins = mine_ok and mine < a
    loses = rival_ok and rival < a
    if wins and loses:
        return "inconclusive", (f"both the predicted and a rival model explain what the other leaves "
                                f"(p {mine:.3g} and {rival:.3g} < alpha {a}): neither is preferred")
    if wins:
        return "supported", (f"the predicted model's predictors explain the response beyond every "
                             f"rival's (F test p {mine:.3g} < alpha {a}) and no rival's add beyond them")
    if loses:
        return "refuted", (f"a rival's predictors explain the response beyond the predicted model's "
                           f"(F test p {rival:.3g} < alpha {a}, Bonferroni over the rivals)")
    if not mine_ok:
        return "inconclusive", (f"the predicted model is nested in a rival, so it cannot be shown to explain "
                                f"more; no rival adds beyond it (p {rival:.3g} >= alpha {a})")
    return "inconclusive", (f"no model explains the response beyond the other (F test p "
                            f"{mine:.3g} and {rival if rival_ok else float('nan'):.3g} >= alpha {a}): "
                            f"the runs do not distinguish the models")


def _validate_models(spec: Any, params: Mapping[str, Any]) -> None:
    """``models`` maps names to lists of known predictors; ``predicted`` names one of them."""
    models = params.get("models")
    if not isinstance(models, Mapping) or not models:
        raise spec_error(spec, "params['models']", "expected a mapping of model name -> list of predictors.")
    for name, terms in models.items():
        if isinstance(terms, str) or not isinstance(terms, Sequence):
            raise spec_error(spec, f"params['models'][{name!r}]", f"expected a list of predictors, got {terms!r}.")
        for t in terms:
            check_choice(t, MODEL_PREDICTORS, spec, f"params['models'][{name!r}]", "predictor")
    if params.get("predicted") not in models:
        raise spec_error(spec, "params['predicted']",
                         f"must name one of the models {', '.join(map(repr, models))}, got "
                         f"{params.get('predicted')!r}.{did_you_mean(str(params.get('predicted')), models)}")


def _run_mixed_model(data: TestInput) -> Any:
    p = data.params
    roles = list(data.arrays)
    table = data.table(*roles)
    frame = table[roles].copy()
    for role in p.get("categorical") or ():  # labels as categories (coefficients per level)
        frame[role] = frame[role].map(lambda v: f"{v:g}").astype("category")
    frame[_GROUP_COLUMN] = data.strata(table)
    res = mixed_model(frame, p["formula"], groups=_GROUP_COLUMN)
    if p["term"] in res.attrs.get("dropped", ()):
        raise StatsInputError(f"the coefficient {p['term']!r} is not estimable on these data: "
                              f"{'; '.join(res.attrs['notes'])}.")
    if p["term"] not in res.index:
        terms = [str(t) for t in res.index]
        raise SpecError(f"params['term']: the model has no coefficient {p['term']!r}."
                        f"{did_you_mean(p['term'], terms)} Coefficients: {', '.join(terms)}.")
    return res.loc[[p["term"]]].reset_index(drop=True)


def decide_mixed_model(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """The p-value rule of decide_directional on the t test of the term (a within-layer
    slope for a predictor that varies within layers), but a degenerate fit decides nothing.
    A layer variance estimated at 0 is a fit like any other (it is the boundary of the
    parameter space, not a failure), and the reason says so.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("negative"), 0.05, {}, {})
    >>> decide_mixed_model({"p_value": 0.001, "effect": -1.0, C.CONVERGED: 0.0}, ctx)[0]
    'inconclusive'
    >>> decide_mixed_model({"p_value": 0.001, "effect": -1.0, C.CONVERGED: 1.0, C.BOUNDARY: 1.0}, ctx)
    ('supported', 'p < alpha (0.05) with the predicted sign (negative); the layer variance is estimated at 0')
    """
    if row.get(C.CONVERGED) == 0:
        return "inconclusive", ("the mixed model fit is degenerate (no residual variance left within "
                                "layers)")
    verdict, reason = decide_directional(row, ctx)
    if row.get(C.BOUNDARY) == 1:
        reason += "; the layer variance is estimated at 0"
    return verdict, reason


def _validate_formula(spec: Any, params: Mapping[str, Any]) -> None:
    """The formula's names are roles (or transform words), ``term`` is named, categorical
    roles exist, and the strata give groups."""
    formula, term = params.get("formula"), params.get("term")
    roles = list(spec.selection)
    if not isinstance(formula, str) or "~" not in formula:
        raise spec_error(spec, "params['formula']", f"expected a formula 'y ~ x + ...', got {formula!r}.")
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula):
        if word not in roles and word not in _FORMULA_WORDS:
            raise spec_error(spec, "params['formula']",
                             f"unknown name {word!r}: the formula's variables are the selection's roles "
                             f"({', '.join(roles)}).{did_you_mean(word, roles)}")
    if not isinstance(term, str) or not term:
        raise spec_error(spec, "params['term']", "name the coefficient the prediction is about (e.g. 'x:z').")
    categorical = params.get("categorical") or ()
    if isinstance(categorical, str) or not all(c in roles for c in categorical):
        raise spec_error(spec, "params['categorical']",
                         f"expected a tuple of roles among {', '.join(roles)}, got {categorical!r}.")
    if params.get("strata") == "none":
        raise spec_error(spec, "params['resample_by']", "a mixed model needs groups: resample_by 'layer' or 'model'.")


register_test("model_comparison", _run_model_comparison, decide_model_comparison,
              roles=("response",), params={"models": None, "predicted": None},
              required_params=("models", "predicted"), directions=("preferred",),
              validate=_validate_models,
              description="OLS models of a per-model response (the selection averaged over "
                          "layers and heads) on model-shape predictors (MODEL_PREDICTORS), "
                          "compared by encompassing F tests (the predicted model's predictors "
                          "beyond each rival's and the reverse; AIC reported; the predicted "
                          "model's slope with its 95 % t interval when it has one predictor) "
                          "(lie_stats.stats.models.added_terms_test)")
register_test("mixed_model", _run_mixed_model, decide_mixed_model, roles=("y", "x"),
              optional_roles=("z", "w"),
              params={"formula": None, "term": None, "categorical": (), "strata": "layer"},
              required_params=("formula", "term"), validate=_validate_formula,
              description="linear mixed model with a random intercept per stratum (layer) and "
                          "within-layer slopes (layer means of the predictors added, Mundlak), "
                          "REML, GLS standard error, t test with nlme's between-within df of "
                          "one coefficient (params formula over the roles, term; roles listed "
                          "in categorical enter as factors, e.g. term 'z[T.2]') "
                          "(lie_stats.stats.mixed_model)")
