"""Model kinds: ``model_comparison`` and ``mixed_model`` (:mod:`lie_stats.stats.models`).

``model_comparison`` fits OLS models of a per-model response (the selection averaged over
layers and heads) on model-shape predictors (:data:`~lie_stats.spec.tables.MODEL_PREDICTORS`)
and compares them by AIC. ``mixed_model`` is a linear mixed model with a random intercept
per stratum (layer) and a Wald test of one coefficient; it is descriptive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import SpecError, did_you_mean
from ...stats import columns as C
from ...stats.models import compare_models, mixed_model
from ..parts import check_choice, spec_error
from ..registry import register_test
from ..rules import Decision, decide_directional, finite
from ..tables import MODEL_PREDICTORS, TestInput, model_table

__all__ = ["AIC_MARGIN", "decide_model_comparison", "decide_mixed_model"]

#: Extra result column of ``model_comparison``: AIC of the best other model minus the
#: predicted model's (positive when the predicted model is better).
AIC_MARGIN = "aic_margin"
#: Names a ``mixed_model`` formula may use besides the selection's roles.
_FORMULA_WORDS = ("I", "np", "log", "log2", "log10", "exp", "sqrt", "center", "standardize", "scale")
_GROUP_COLUMN = "stratum"


def _run_model_comparison(data: TestInput) -> Any:
    p = data.params
    table = model_table(data)
    models = {str(k): list(v) for k, v in p["models"].items()}
    res = compare_models(table, "response", models)
    pred = p["predicted"]
    others = res.drop(index=pred)
    margin = float(others[C.AIC].min() - res.loc[pred, C.AIC]) if len(others) else float("nan")
    return res.loc[[pred]].reset_index(drop=True).assign(**{AIC_MARGIN: margin})


def decide_model_comparison(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the predicted model's AIC is lower than every other model's by at
    least min_delta_aic (2 by default); refuted when another model's is lower by at least
    that much; inconclusive otherwise (Burnham & Anderson 2002, §2.6).

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("preferred"), 0.05, {}, {"min_delta_aic": 2.0})
    >>> decide_model_comparison({AIC_MARGIN: 5.0}, ctx)[0], decide_model_comparison({AIC_MARGIN: -3.0}, ctx)[0]
    ('supported', 'refuted')
    """
    margin, delta = row.get(AIC_MARGIN), float(ctx.params.get("min_delta_aic", 2.0))
    if not finite(margin):
        return "inconclusive", "no AIC margin (a single model, or fits failed)"
    if margin >= delta:
        return "supported", f"the predicted model's AIC is lower than every other's by >= {delta}"
    if margin <= -delta:
        return "refuted", f"another model's AIC is lower than the predicted one's by >= {delta}"
    return "inconclusive", f"AIC differences below {delta}: the models are not distinguished"


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
    if p["term"] not in res.index:
        terms = [str(t) for t in res.index]
        raise SpecError(f"params['term']: the model has no coefficient {p['term']!r}."
                        f"{did_you_mean(p['term'], terms)} Coefficients: {', '.join(terms)}.")
    return res.loc[[p["term"]]].reset_index(drop=True)


def decide_mixed_model(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """The p-value rule of decide_directional on the Wald test of the term, but a fit that
    did not converge decides nothing.

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("negative"), 0.05, {}, {})
    >>> decide_mixed_model({"p_value": 0.001, "effect": -1.0, C.CONVERGED: 0.0}, ctx)[0]
    'inconclusive'
    """
    if row.get(C.CONVERGED) == 0:
        return "inconclusive", "the mixed model did not converge (statsmodels MixedLM)"
    return decide_directional(row, ctx)


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
        raise spec_error(spec, "params['strata']", "a mixed model needs groups: strata 'layer' or 'model'.")


register_test("model_comparison", _run_model_comparison, decide_model_comparison,
              roles=("response",), params={"models": None, "predicted": None, "min_delta_aic": 2.0},
              required_params=("models", "predicted"), directions=("preferred",),
              validate=_validate_models,
              description="OLS models of a per-model response (the selection averaged over "
                          "layers and heads) on model-shape predictors (MODEL_PREDICTORS), "
                          "compared by AIC (lie_stats.stats.compare_models)")
register_test("mixed_model", _run_mixed_model, decide_mixed_model, roles=("y", "x"),
              optional_roles=("z", "w"),
              params={"formula": None, "term": None, "categorical": (), "strata": "layer"},
              required_params=("formula", "term"), validate=_validate_formula,
              description="linear mixed model with a random intercept per stratum (layer), "
                          "Wald test of one coefficient (params formula over the roles, term; "
                          "roles listed in categorical enter as factors, e.g. term 'z[T.2]'); "
                          "descriptive (lie_stats.stats.mixed_model)")
