"""Designs of the clustered summaries: ``head_mean``, ``share_above``.

Each null keeps what the kind's own test treats as independent (the (model, layer)
clusters) and takes away only the effect tested:

- ``head_mean``: the (transformed, masked) head values re-centred at the prediction's value,
  each (model, layer) cluster's residuals about the pooled mean sign-flipped, which is the
  symmetry the kind's cluster sign-flip test assumes; planted: the same re-centred at the
  prediction's magnitude reference (none declared: not plantable).
- ``share_above``: each cluster's share of heads above the threshold moved to the
  prediction's value plus its own deviation from the pooled share, sign-flipped and capped at
  the room [0, 1] leaves about the value (a symmetric deviation cannot be larger), and drawn
  as a whole number of heads whose expectation is that share; planted: the same about the
  reference fraction.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...simulate import (Arrays, Design, NotPlantable, flip_differences, layer_slices,
                         prediction_value, reference_number)

# ----------------------------------------------------------------------------- head_mean


def _scale(transform: str) -> tuple[Any, Any]:
    """The kind's averaging scale and its inverse."""
    return (np.log, np.exp) if transform == "log" else ((lambda v: v), (lambda v: v))


def _kept(arrays: Arrays, spec: Any) -> Any:
    """Boolean array over ``values``: the heads the kind averages (the mask's heads above
    ``mask_above``, or every head)."""
    values = arrays["values"]
    above = spec.resolved_params().get("mask_above")
    if "mask" not in arrays or above is None:
        return values.notnull()
    mask = arrays["mask"].reset_coords(drop=True)
    if set(mask.dims) != set(values.dims):
        raise NotPlantable(f"the mask's dimensions {mask.dims} are not those of the values {values.dims}")
    mask = mask.transpose(*values.dims)
    if mask.shape != values.shape:
        raise NotPlantable("the mask and the values do not align head by head")
    return values.copy(data=np.asarray(mask.values, dtype=float) > float(above)) & values.notnull()


def centre_heads(arrays: Arrays, spec: Any, value: float, rng: np.random.Generator) -> Arrays:
    """``values`` whose kept heads (:func:`_kept`) are, on the kind's scale,
    ``t(value) + s * (x - mean x)`` with one random sign ``s`` per (model, layer): each
    cluster's sum of deviations from ``value`` is symmetric about 0, the pooled mean is
    ``value`` in expectation; the heads the mask leaves out, the mask and the padding are
    unchanged."""
    import xarray as xr

    forward, back = _scale(str(spec.resolved_params().get("transform", "identity")))
    values = arrays["values"]
    keep = _kept(arrays, spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = forward(values.where(keep).reset_coords(drop=True))
    moved = flip_differences(xr.zeros_like(x), x, float(forward(value)), rng)
    out = np.where(keep.values, back(moved.transpose(*values.dims).values), values.values)
    return {**arrays, "values": values.copy(data=out)}


def _null_head_mean(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    return centre_heads(arrays, spec, prediction_value({}, spec), rng)


def _magnitude_reference(spec: Any) -> float:
    """The prediction's magnitude reference in the units of ``effect``; else NotPlantable."""
    mag = spec.prediction.magnitude
    ref = getattr(mag, "reference", None)
    if mag is None or not isinstance(ref, (int, float)) or not math.isfinite(ref):
        raise NotPlantable(f"the prediction declares no magnitude and the reference "
                           f"{dict(spec.reference)!r} gives no figure for the mean")
    if mag.estimate != "effect":
        raise NotPlantable(f"the magnitude is of {mag.estimate!r}, not of the mean (effect)")
    return float(ref)


def _plant_head_mean(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    """The null's kept heads shifted, on the kind's scale, from the prediction's value to the
    magnitude reference (the pooled mean is the reference in expectation)."""
    ref = _magnitude_reference(spec)
    transform = str(spec.resolved_params().get("transform", "identity"))
    if transform == "log" and ref <= 0:
        raise NotPlantable(f"the magnitude reference {ref} is not positive (a geometric mean)")
    forward, back = _scale(transform)
    shift = float(forward(ref) - forward(prediction_value({}, spec)))
    values = arrays["values"]
    keep = _kept(arrays, spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        moved = back(forward(values.values) + shift)
    return {**arrays, "values": values.copy(data=np.where(keep.values, moved, values.values))}, ref


# ----------------------------------------------------------------------------- share_above


def _cross(v: np.ndarray, threshold: float, above: np.ndarray) -> np.ndarray:
    """``v`` with each value on the wrong side of ``threshold`` (strictly above where
    ``above``, at or below elsewhere) mirrored about it; a value at the threshold that must
    be above moves to the next float up."""
    out = v.copy()
    up = above & ~(v > threshold)
    down = ~above & (v > threshold)
    out[up] = np.maximum(2.0 * threshold - v[up], np.nextafter(threshold, np.inf))
    out[down] = np.minimum(2.0 * threshold - v[down], threshold)
    return out


def move_shares(da: Any, threshold: float, share: float, rng: np.random.Generator) -> Any:
    """``da`` with the share of values above ``threshold`` in each (model, layer) cluster
    moved to ``share + s * d``: ``d`` the cluster's share less the pooled share (each value
    counting once), capped at ``min(share, 1 - share)`` (the largest deviation that can be
    symmetric about ``share`` in [0, 1]), ``s`` a random sign per cluster.

    Shares are whole numbers of heads: a cluster of ``n`` heads gets ``floor(n q)`` or
    ``floor(n q) + 1`` heads above the threshold, the second with probability ``n q - floor(n q)``,
    so its count is ``n q`` in expectation and the pooled share is ``share`` in expectation.
    The heads above are the cluster's largest values (ties broken at random); values already
    on their side keep their value, the others are mirrored about the threshold. NaN stays.
    """
    arranged, values, index = layer_slices(da, heads=False)
    finite = np.isfinite(values)
    pooled = float((values[finite] > threshold).mean()) if finite.any() else math.nan
    room = min(share, 1.0 - share)
    for ix in index:
        block, ok = values[ix].reshape(-1), finite[ix].reshape(-1)
        n = int(ok.sum())
        if n == 0:
            continue
        v = block[ok]
        d = float(np.clip((v > threshold).mean() - pooled, -room, room))
        target = n * float(np.clip(share + rng.choice((-1.0, 1.0)) * d, 0.0, 1.0))
        k = min(n, int(math.floor(target)) + int(rng.random() < target - math.floor(target)))
        order = np.lexsort((rng.random(n), -v))  # largest first, ties at random
        above = np.zeros(n, dtype=bool)
        above[order[:k]] = True
        block[ok] = _cross(v, threshold, above)
        values[ix] = block.reshape(values[ix].shape)
    return arranged.copy(data=values).transpose(*da.dims)


def _threshold(spec: Any) -> float:
    return float(spec.resolved_params()["threshold"])


def _null_share(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    share = prediction_value({}, spec)
    return {**arrays, "values": move_shares(arrays["values"], _threshold(spec), share, rng)}


def _plant_share(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    share = reference_number(spec, ("fraction", "share"), "share of heads")
    if not 0.0 <= share <= 1.0:
        raise NotPlantable(f"the reference share {share} is not in [0, 1]")
    return {**arrays, "values": move_shares(arrays["values"], _threshold(spec), share, rng)}, share



DESIGNS = {
    "head_mean": Design(
        null=_null_head_mean, plant=_plant_head_mean, null_value=prediction_value,
        what="null: the (masked, transformed) head values re-centred at the prediction's value, "
             "each (model, layer)'s residuals sign-flipped; planted: the same at the "
             "prediction's magnitude reference"),
    "share_above": Design(
        null=_null_share, plant=_plant_share, null_value=prediction_value,
        what="null: each (model, layer)'s share above the threshold set to the prediction's "
             "value plus its own deviation, sign-flipped and capped to fit [0, 1], as a whole "
             "number of heads with that expectation; planted: the same at the reference share"),
}
