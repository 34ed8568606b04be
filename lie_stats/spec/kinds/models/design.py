"""Model kinds: ``model_comparison`` (a per-model response on model-shape predictors) and
``mixed_model`` (a within-layer slope).

``model_comparison``: the null gives each run the response the best-fitting rival model
predicts plus that fit's residuals resampled across runs (leverage-adjusted, permuted with
random signs), so the predicted model's predictors explain nothing beyond that rival's (the
F test's null) while the runs keep the real residual spread; the planted effect adds the
slope the declaration states for the predicted model's one predictor (its magnitude on
``predicted_slope``), or else the slope through the reference's figures of two models the
selection holds. A declaration without either plants nothing, with the reason. A run's response is
moved by shifting all its layers and heads by one constant, so each run keeps its own layer
profile.

``mixed_model``: the term's predictor permuted over heads within layers (the layer means of
``x`` and ``y`` stay, so their between-layer association does too); the planted effect adds a
within-layer slope given by the reference (``slope``, or ``rho`` turned into a slope).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...simulate import (Arrays, Design, NotPlantable, aligned_xy, layer_slices, permute_heads,
                        prediction_value, zero_or_null_center)

__all__ = ["DESIGNS", "shift_run_means", "rival_null_response",
           "reference_slope", "add_within_slope"]

# ----------------------------------------------------------------------------- model_comparison


def _table(arrays: Arrays, spec: Any) -> Any:
    """The kind's per-run table (response and predictors), as the kind builds it."""
    from ...tables import TestInput, model_table

    return model_table(TestInput(arrays=arrays, params=spec.resolved_params(),
                                 prediction=spec.prediction, reference=dict(spec.reference)))


def _models(spec: Any) -> tuple[dict[str, list[str]], str]:
    p = spec.resolved_params()
    return {str(k): list(v) for k, v in p["models"].items()}, str(p["predicted"])


def _ols(y: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fitted values, residuals and leverages of ``y`` on an intercept and ``columns`` [n, k]."""
    X = np.column_stack([np.ones(len(y)), columns])
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    fit = X @ beta
    leverage = np.einsum("ij,ji->i", X, np.linalg.pinv(X))
    return fit, y - fit, leverage


def shift_run_means(da: Any, targets: Mapping[str, float]) -> Any:
    """``da`` with each run's values shifted by one constant so that its mean over layers
    and heads (the kind's response) is ``targets[run]``; runs not named are left as they
    are, padding stays NaN.

    >>> import xarray as xr
    >>> da = xr.DataArray([[0.0, 1.0], [2.0, np.nan]], dims=("model", "layer"),
    ...                   coords={"model": ["a", "b"]})
    >>> shift_run_means(da, {"a": 5.0, "b": 0.0}).values.tolist()
    [[4.5, 5.5], [0.0, nan]]
    """
    from .... import schema

    over = [d for d in da.dims if d != schema.MODEL]
    current = da.mean(dim=over, skipna=True) if over else da
    names = [str(m) for m in np.asarray(da[schema.MODEL].values).reshape(-1)]
    shift = np.array([targets[n] - float(c) if n in targets else 0.0
                      for n, c in zip(names, np.asarray(current.values, dtype=float).reshape(-1))])
    delta = current.copy(data=shift)
    return (da + delta).transpose(*da.dims).assign_attrs(da.attrs)


def _usable(table: Any, models: Mapping[str, Sequence[str]]) -> Any:
    used = sorted({t for terms in models.values() for t in terms})
    missing = [t for t in used if t not in table.columns]
    if missing:
        raise NotPlantable(f"the selection's runs carry no {', '.join(missing)} (model-shape coordinates)")
    rows = table[["response", *used]].replace([np.inf, -np.inf], np.nan).dropna()
    if len(rows) < 3:
        raise NotPlantable(f"{len(rows)} runs with a response and every predictor: too few to fit a rival")
    return rows


def rival_null_response(table: Any, models: Mapping[str, Sequence[str]], predicted: str,
                        rng: np.random.Generator) -> tuple[dict[str, float], str]:
    """Per-run responses under the null that the predicted model adds nothing beyond a rival.

    The rival is the one that fits the real responses best (smallest residual sum of
    squares, on the runs complete in every model's predictors, as the F tests use them):
    when some rival is true, the predicted model's F test against it is the one whose level
    the rule (an intersection-union test) rests on. Each run gets that rival's fitted value
    plus a residual of the fit drawn without replacement across runs with a random sign;
    the residuals are leverage-adjusted, ``r_i / sqrt(1 - h_ii)`` and centred (Davison &
    Hinkley 1997, eq. 6.9), so that each has the fit's error variance, a high-leverage run's
    near-zero residual included. Without a rival the response is the mean plus the same
    resampled residuals (no predictor explains anything).

    Returns the responses by run name and the rival's name ("" without one).
    """
    rows = _usable(table, models)
    y = rows["response"].to_numpy(float)
    n = len(y)
    fits = {m: _ols(y, rows[list(models[m])].to_numpy(float).reshape(n, -1))
            for m in models if m != predicted}
    best = min(fits, key=lambda m: float(fits[m][1] @ fits[m][1]), default="")
    fit, resid, leverage = fits[best] if best else _ols(y, np.empty((n, 0)))
    spare = 1.0 - leverage
    adjusted = np.where(spare > 1e-8, resid / np.sqrt(np.clip(spare, 1e-8, None)), 0.0)
    adjusted = adjusted - adjusted.mean()
    if not np.any(np.abs(adjusted) > 1e-12 * (np.abs(y).max() + 1e-300)):
        raise NotPlantable(f"the rival model {best!r} fits the {n} runs exactly: no residuals to resample")
    draw = adjusted[rng.permutation(n)] * rng.choice((-1.0, 1.0), size=n)
    return dict(zip(map(str, rows.index), fit + draw)), best


def _null_model_comparison(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    models, predicted = _models(spec)
    table = _table(arrays, spec)
    targets, _ = rival_null_response(table, models, predicted, rng)
    return {**arrays, "response": shift_run_means(arrays["response"], targets)}


def _predictor_of(shape: Mapping[str, float], name: str) -> float:
    """A model-shape predictor (``d_head``, ``log2_d_head``, ``d_head_over_d_model``) of a shape."""
    from ...tables import D_HEAD, D_MODEL, RATIO

    if name == RATIO:
        return float(shape[D_HEAD]) / float(shape[D_MODEL])
    if name.startswith("log2_"):
        return math.log2(float(shape[name[len("log2_"):]]))
    return float(shape[name])


def _shape_of(model: str, table: Any) -> Mapping[str, float] | None:
    """The shape of a model the reference names, when the selection's runs hold that model."""
    if model in table.index:
        return {c: float(table.loc[model, c]) for c in table.columns if c != "response"}
    return None


def reference_slope(spec: Any, table: Any, predictor: str) -> tuple[float, list[str]]:
    """The slope of the response on ``predictor`` to plant: the declared magnitude's
    reference when the prediction states one on the slope of the predicted model's predictor
    (``Magnitude(estimate="predicted_slope")``), else the slope fixed by the reference's
    figures of two named models of the selection with different values of ``predictor``.

    Raises NotPlantable when neither gives a slope.
    """
    mag = spec.prediction.magnitude
    if mag is not None and getattr(mag, "estimate", None) == "predicted_slope" and math.isfinite(
            float(mag.reference)):
        return float(mag.reference), []
    named = {k: float(v) for k, v in spec.reference.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
             and _shape_of(str(k), table) is not None}
    if len(named) < 2:
        raise NotPlantable(
            f"neither a declared magnitude on the predicted model's slope nor the reference "
            f"{dict(spec.reference)!r} (figures of two models of the selection) gives an effect "
            f"size of {predictor!r}")
    points = sorted(((_predictor_of(_shape_of(k, table), predictor), v, k) for k, v in named.items()))
    xs = np.array([p[0] for p in points])
    if np.ptp(xs) == 0:
        raise NotPlantable(f"the reference's models ({', '.join(named)}) share {predictor} = {xs[0]:g}: "
                           f"no effect of it to plant")
    ys = np.array([p[1] for p in points])
    slope = float(np.polyfit(xs, ys, 1)[0]) if len(xs) > 2 else float((ys[1] - ys[0]) / (xs[1] - xs[0]))
    return slope, [p[2] for p in points]


def _plant_model_comparison(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    models, predicted = _models(spec)
    terms = models[predicted]
    if len(terms) != 1:
        raise NotPlantable(f"the predicted model {predicted!r} has {len(terms)} predictors; a reference "
                           f"of two models fixes the slope of one")
    table = _table(arrays, spec)
    rows = _usable(table, models)
    slope, _ = reference_slope(spec, table, terms[0])
    x = rows[terms[0]].to_numpy(float)
    added = slope * (x - x.mean())
    targets = dict(zip(map(str, rows.index), rows["response"].to_numpy(float) + added))
    planted = {**arrays, "response": shift_run_means(arrays["response"], targets)}
    return planted, _population_r2(rows, models, predicted, added)


def _population_r2(rows: Any, models: Mapping[str, Sequence[str]], predicted: str,
                   added: np.ndarray) -> float:
    """The predicted model's R^2 (the kind's ``effect``) when the planted effect is the only
    signal and the rival fit's residual variance the noise: ``ss / (ss + (n - 1) s^2)``,
    ``ss`` the planted effect's sum of squares about its mean."""
    y = rows["response"].to_numpy(float)
    n = len(y)
    rivals = [m for m in models if m != predicted] or [predicted]
    rss = min(float(r @ r) for r in (_ols(y, rows[list(models[m])].to_numpy(float).reshape(n, -1))[1]
                                     for m in rivals))
    k = 1 + min(len(models[m]) for m in rivals)
    s2 = rss / max(n - k, 1)
    ss = float(np.sum((added - added.mean()) ** 2))
    return ss / (ss + (n - 1) * s2) if ss + s2 > 0 else 0.0


_MODEL_COMPARISON = Design(
    null=_null_model_comparison, plant=_plant_model_comparison, null_value=zero_or_null_center, sign=False,
    what="null: each run's response (its layers shifted together) set to the best-fitting rival "
         "model's fit plus that fit's leverage-adjusted residuals permuted across runs with "
         "random signs; "
         "planted: the slope the declaration states for the predicted model's predictor (its "
         "magnitude's reference, else the slope through the reference's figures of two models "
         "of the selection) added (effect: the predicted model's R^2, no interval)")


# ----------------------------------------------------------------------------- mixed_model


def _term_role(spec: Any) -> str:
    """The role whose within-layer association the term measures (the first predictor role
    the term names); NotPlantable for a layer-level term."""
    term = str(spec.resolved_params()["term"])
    if term.startswith("mean["):
        raise NotPlantable(f"the term {term!r} is a between-layer coefficient: permuting heads "
                           f"within layers keeps it")
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", term)
    roles = [r for r in spec.selection if r != "y" and r in words]
    if not roles:
        raise NotPlantable(f"the term {term!r} names no predictor role of the selection")
    return roles[0]


def _null_mixed_model(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    role = _term_role(spec)
    return {**arrays, role: permute_heads(arrays[role], rng)}


def _within(values: np.ndarray, index: list[tuple[int, ...]]) -> np.ndarray:
    """``values`` (lead dims first) less each (model, layer) block's mean."""
    out = np.full_like(values, np.nan)
    for ix in index:
        block = values[ix]
        if np.isfinite(block).any():
            out[ix] = block - np.nanmean(block)
    return out


def add_within_slope(arrays: Arrays, slope: float) -> Arrays:
    """``y`` plus ``slope`` times ``x`` centred within each (model, layer): a within-layer
    slope of ``slope`` added, the layer means of both unchanged."""
    x, y = aligned_xy(arrays)
    xa, xv, index = layer_slices(x)
    ya, yv, _ = layer_slices(y)
    new = dict(arrays)
    new["x"] = x
    new["y"] = ya.copy(data=yv + slope * _within(xv, index)).transpose(*y.dims)
    return new


def _within_sd(da: Any) -> float:
    _, values, index = layer_slices(da)
    w = _within(values, index)
    ok = np.isfinite(w)
    return float(np.sqrt(np.sum(w[ok] ** 2) / max(ok.sum() - len(index), 1)))


def _plant_mixed_model(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    term = str(spec.resolved_params()["term"])
    if _term_role(spec) != "x" or term != "x":
        raise NotPlantable(f"a slope is planted for the term 'x' only (the spec tests {term!r})")
    ref = spec.reference
    key = next((k for k in ("slope", "rho", "r") if isinstance(ref.get(k), (int, float))
                and not isinstance(ref.get(k), bool) and math.isfinite(ref[k])), None)
    if key is None:
        raise NotPlantable(f"the reference {dict(ref)!r} gives no within-layer slope or rho to plant")
    value = float(ref[key])
    if key == "slope":
        slope = value
    else:
        if not -1 < value < 1:
            raise NotPlantable(f"the reference correlation {value} is not inside (-1, 1)")
        x, y = aligned_xy(arrays)
        sx, sy = _within_sd(x), _within_sd(y)
        if not sx > 0:
            raise NotPlantable("x does not vary within layers")
        # y (with no within-layer association left) plus b x: correlation b sx / sqrt(b^2 sx^2 + sy^2)
        slope = value * sy / (sx * math.sqrt(1.0 - value * value))
    return add_within_slope(arrays, slope), slope


_MIXED_MODEL = Design(
    null=_null_mixed_model, plant=_plant_mixed_model, null_value=prediction_value,
    what="null: the term's predictor permuted over heads within layers (layer means of x and y "
         "kept); planted: the reference's within-layer slope (or rho as a slope) added to y")


DESIGNS = {
    "model_comparison": _MODEL_COMPARISON,
    "mixed_model": _MIXED_MODEL,
}
