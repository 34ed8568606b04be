"""Nulls other than a test's own: the data a verdict rule may meet when its assumptions fail.

A design's null (the ``design`` module of the kind's family folder in
:mod:`lie_stats.spec.kinds`) is built from the symmetry the kind's own test assumes (heads
exchangeable within a layer, runs symmetric in time, residuals symmetric by layer), so its
false-positive rate can only show that the rule keeps its level when that assumption holds.
The alternative nulls here start from the same null draw and break one assumption more,
without adding the effect the spec tests:

- ``heavy_tails``: every numeric value's deviation from its (model, layer) mean multiplied by
  an independent weight ``sqrt(3 / chi2_3) / E[.]``, the scale mixture that makes normal
  deviations Student t with 3 degrees of freedom. The weights have mean 1 and are independent
  of everything, so each block's mean and every association stay as they were in expectation;
  only the tails grow (finite variance, infinite kurtosis).
- ``stronger_dependence``: each role, independently of the others, gets one offset per
  (model, layer), drawn with the spread of the data's own layer means (the layer effect's
  variance doubled), and, over checkpoints, one random walk per (model, layer) whose steps
  have the spread of the data's own step-to-step changes of the layer means (more persistent
  layer trajectories: the autocorrelation a trend test must not mistake for a trend).
- ``shared_effect``: where a kind compares heads within layers (a label or group role, or two
  numeric roles ``x`` and ``y``), a difference BETWEEN layers that mimics the tested one with
  no signal within any layer: every head of a layer moves together, by the layer's share of
  labelled heads (or the layer's mean of ``x``), standardised, times the spread of the
  layer means, in the direction the spec predicts, after the layer means' own linear
  association with that score is taken out (so the data's between-layer pattern cannot
  cancel it). A rule that conditions on layers keeps its level; one that pools heads across
  layers does not.

Each alternative is a function ``(arrays, spec, rng) -> arrays`` applied to a design's null
draw; it raises :class:`NotApplicable` (with the reason) where the data or kind give it no
meaning, and the diagnosis records that reason instead of a figure.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.simulate import Arrays

__all__ = ["ALTERNATIVES", "Alternative", "NotApplicable", "numeric_roles", "CATEGORICAL_ROLES"]

#: Roles that hold codes (labels, groups, a mask), never perturbed.
CATEGORICAL_ROLES = ("label", "labels", "group", "mask")
#: A role of whole numbers with fewer distinct values than this is a code, not a measurement.
MIN_DISTINCT = 11
#: Degrees of freedom of the heavy-tailed deviations.
TAIL_DF = 3
#: E[sqrt(nu / chi2_nu)] for nu = 3: sqrt(3/2) * Gamma(1) / Gamma(3/2).
_TAIL_MEAN = math.sqrt(TAIL_DF / 2.0) * math.gamma((TAIL_DF - 1) / 2.0) / math.gamma(TAIL_DF / 2.0)


class NotApplicable(Exception):
    """This alternative null has no meaning for these data or this kind (the message says why)."""


@dataclass(frozen=True)
class Alternative:
    """One alternative null: its name, the transformation of a null draw, and its words."""

    name: str
    apply: Callable[[Arrays, Any, np.random.Generator], Arrays]
    what: str


def _base_role(role: str) -> str:
    return role.split("__", 1)[0]


def _is_categorical(role: str) -> bool:
    return _base_role(role) in CATEGORICAL_ROLES


def numeric_roles(arrays: Arrays) -> list[str]:
    """The roles whose values are measurements: floating point, not a label, group or mask
    role, and not a code (whole numbers taking fewer than :data:`MIN_DISTINCT` values; a
    small selection of fractional values, e.g. eight heads' scores, is a measurement)."""
    out = []
    for role, da in arrays.items():
        if _is_categorical(role) or not hasattr(da, "dims"):
            continue
        values = np.asarray(da.values)
        if not np.issubdtype(values.dtype, np.floating):
            continue
        finite = values[np.isfinite(values)]
        if finite.size < 2:
            continue
        if np.all(finite == np.round(finite)) and np.unique(finite).size < MIN_DISTINCT:
            continue
        out.append(role)
    return out


def _blocked(da: Any) -> tuple[Any, np.ndarray, int]:
    """``da`` arranged as (model?, layer?, rest...), its float values (a copy), and how many
    leading dimensions make a block."""
    lead = [d for d in ("model", "layer") if d in da.dims]
    rest = [d for d in da.dims if d not in lead]
    arranged = da.transpose(*lead, *rest)
    return arranged, np.array(arranged.values, dtype=float), len(lead)


def _block_means(values: np.ndarray, lead: int) -> np.ndarray:
    flat = values.reshape(*values.shape[:lead], -1) if lead else values.reshape(1, -1)
    with np.errstate(invalid="ignore"), warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        return np.nanmean(flat, axis=-1)


def _expand(means: np.ndarray, values: np.ndarray, lead: int) -> np.ndarray:
    """Block values broadcast over a block's cells."""
    if not lead:
        return np.full_like(values, float(means.reshape(-1)[0]))
    return means.reshape(*means.shape, *([1] * (values.ndim - lead)))


def _finish(arranged: Any, values: np.ndarray, original: Any) -> Any:
    return arranged.copy(data=values).transpose(*original.dims)


def heavy_tails(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    """Every numeric role's deviations from its (model, layer) means made Student-t-tailed by
    independent mean-one scale-mixture weights (see the module's docstring)."""
    roles = numeric_roles(arrays)
    if not roles:
        raise NotApplicable("no numeric role to give heavier tails (every role is a code)")
    out = dict(arrays)
    for role in roles:
        da = arrays[role]
        arranged, values, lead = _blocked(da)
        centre = _expand(_block_means(values, lead), values, lead)
        weights = np.sqrt(TAIL_DF / rng.chisquare(TAIL_DF, size=values.shape)) / _TAIL_MEAN
        out[role] = _finish(arranged, centre + (values - centre) * weights, da)
    return out


def _spread(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(np.std(x, ddof=1)) if x.size >= 2 else 0.0


def stronger_dependence(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    """Each numeric role, independently, with a (model, layer) offset and, over checkpoints,
    a (model, layer) random walk, each with the spread the data's own layer means show."""
    out = dict(arrays)
    changed = []
    for role in numeric_roles(arrays):
        da = arrays[role]
        if "layer" not in da.dims:
            continue
        arranged, values, lead = _blocked(da)
        means = _block_means(values, lead)
        shift = rng.normal(0.0, 1.0, size=means.shape) * _spread(means.reshape(-1))
        total = _expand(shift, values, lead)
        if "step" in arranged.dims and arranged.sizes["step"] >= 2:
            axis = list(arranged.dims).index("step")
            other = tuple(a for a in range(lead, values.ndim) if a != axis)
            with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
                series = np.nanmean(values, axis=other) if other else values  # (lead..., step)
            sd = _spread(np.diff(series, axis=-1).reshape(-1))
            steps = rng.normal(0.0, sd, size=series.shape)
            steps[..., 0] = 0.0
            walk = np.cumsum(steps, axis=-1)
            shape = [1] * values.ndim
            for a in range(lead):
                shape[a] = values.shape[a]
            shape[axis] = values.shape[axis]
            total = total + walk.reshape(shape)
        out[role] = _finish(arranged, values + total, da)
        changed.append(role)
    if not changed:
        raise NotApplicable("no numeric role has a layer dimension to give layer effects")
    return out


def _layer_score(da: Any, lead_dims: Sequence[str]) -> np.ndarray:
    """Each (model, layer) block's mean of ``da`` (a code array: booleans or numbers; other
    codes as indicators of their largest value), standardised across blocks."""
    values = np.asarray(da.values)
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        top = max(v for v in np.unique(values.astype(str)))
        values = (values.astype(str) == top)
    arranged = da.copy(data=np.asarray(values, dtype=float)).transpose(
        *lead_dims, *[d for d in da.dims if d not in lead_dims])
    means = _block_means(np.array(arranged.values, dtype=float), len(lead_dims))
    sd = _spread(means.reshape(-1))
    scale = float(np.nanmax(np.abs(means))) if np.isfinite(means).any() else 0.0
    if not sd or sd <= 1e-7 * scale:  # constant up to rounding (R's qr tolerance), e.g. a within-layer share
        raise NotApplicable("the layers do not differ in the comparison role, so an effect "
                            "shared by all heads of a layer cannot mimic a within-layer one")
    return (means - np.nanmean(means)) / sd


def _predicted_sign(spec: Any) -> float:
    """-1 when the spec predicts a negative (or lower) effect, else +1: the shared effect
    points the way the claim does."""
    direction = getattr(getattr(spec, "prediction", None), "direction", "")
    return -1.0 if direction in ("negative", "below") else 1.0


def shared_effect(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    """A between-layer difference, with no within-layer signal, that mimics the tested one
    (see the module's docstring)."""
    codes = [r for r in arrays if _is_categorical(r) and _base_role(r) != "mask"]
    numeric = numeric_roles(arrays)
    if codes:
        source, targets = codes[0], [r for r in numeric]
    elif "x" in numeric and "y" in numeric:
        source, targets = "x", ["y"]
    else:
        raise NotApplicable("the kind compares no heads within layers (no label, group or x-y "
                            "pair), so an effect shared by all heads has nothing to mimic")
    out = dict(arrays)
    done = []
    for role in targets:
        if role == source:
            continue
        da = arrays[role]
        src = arrays[source]
        lead_dims = [d for d in ("model", "layer") if d in da.dims]
        if "layer" not in lead_dims or "layer" not in src.dims or \
                [d for d in ("model", "layer") if d in src.dims] != lead_dims:
            continue
        arranged, values, lead = _blocked(da)
        score = _layer_score(src.reset_coords(drop=True), lead_dims)
        if score.shape != values.shape[:lead]:
            continue
        means = _block_means(values, lead)
        z = np.nan_to_num(score)
        ok = np.isfinite(means)
        # the layer means' own association with the score taken out, the claim's put in
        slope = float(np.sum(z[ok] * (means[ok] - means[ok].mean())) / max(np.sum(z[ok] ** 2), 1e-300))
        size = _spread(means.reshape(-1)) * _predicted_sign(spec) - slope
        out[role] = _finish(arranged, values + _expand(z * size, values, lead), da)
        done.append(role)
    if not done:
        raise NotApplicable("no numeric role shares the comparison role's (model, layer) blocks")
    return out


#: The alternative nulls every diagnosed result is simulated under, in order.
ALTERNATIVES: tuple[Alternative, ...] = (
    Alternative("heavy_tails", heavy_tails,
                "deviations from each layer's mean with Student t(3) tails (mean-one scale mixture)"),
    Alternative("stronger_dependence", stronger_dependence,
                "layer effects and step-to-step wander of each layer doubled, independently per role"),
    Alternative("shared_effect", shared_effect,
                "a between-layer difference mimicking the tested one, shared by every head of a layer"),
)
