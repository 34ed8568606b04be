"""Clustered summaries and the kinds over training: ``head_mean``, ``share_above``, ``trend``,
``depth_crossover``.

Each null keeps what the kind's own test treats as independent (layers, runs, layer order)
and takes away only the effect tested:

- ``head_mean``: the (transformed, masked) head values re-centred at the prediction's value,
  each (model, layer) cluster's residuals about the pooled mean sign-flipped, which is the
  symmetry the kind's cluster sign-flip test assumes; planted: the same re-centred at the
  prediction's magnitude reference (none declared: not plantable).
- ``share_above``: each cluster's share of heads above the threshold moved to the
  prediction's value plus its own deviation from the pooled share, sign-flipped and capped at
  the room [0, 1] leaves about the value (a symmetric deviation cannot be larger), and drawn
  as a whole number of heads whose expectation is that share; planted: the same about the
  reference fraction.
- ``trend``: each run detrended (each unit's best monotone fit, rising or falling, removed:
  the component a rank correlation with step measures), its residual checkpoints resampled
  in circular blocks (autocorrelation within blocks, the same blocks for every unit of the
  run) and the run reversed in time with probability 1/2, so that each run's rank
  correlation with step is exactly symmetric about 0, the assumption of the sign-flip test
  over runs; planted: the reference rise, linear in the step, added. The monotone fit also
  absorbs part of a wandering (strongly autocorrelated) series, so the null's noise is, if
  anything, smaller than the real one and the power on the optimistic side; a straight line
  would instead leave a saturating rise's curvature in the null as noise.
- ``depth_crossover``: the layer order of each model permuted once and kept at every
  checkpoint (layers keep their trajectories and heads, the depth gradient is gone at every
  checkpoint); planted: a depth gradient of the declared early sign that reverses at the
  reference fraction of training, as large as the data's own spread of layer means.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import schema
from ..simulate import (Arrays, Design, NotPlantable, flip_differences, layer_slices,
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


# ----------------------------------------------------------------------------- over training


def _runs(da: Any) -> tuple[Any, np.ndarray]:
    """``da`` as (model?, step, rest...) and its values as ``[run, step, unit]``."""
    if schema.STEP not in da.dims:
        raise NotPlantable(f"the selection of {da.name!r} has no step dimension")
    lead = [schema.MODEL] if schema.MODEL in da.dims else []
    rest = [d for d in da.dims if d not in (*lead, schema.STEP)]
    arranged = da.transpose(*lead, schema.STEP, *rest)
    values = np.array(arranged.values, dtype=float)
    if not lead:
        values = values[None]
    return arranged, values.reshape(values.shape[0], values.shape[1], -1)


def _from_runs(arranged: Any, runs: np.ndarray, like: Any) -> Any:
    return arranged.copy(data=runs.reshape(arranged.shape)).transpose(*like.dims)


def block_length(n_steps: int) -> int:
    """Circular-block length for ``n_steps`` checkpoints: ``ceil(n^(1/3))``, at least 2."""
    return max(2, math.ceil(n_steps ** (1.0 / 3.0)))


def _block_order(n: int, rng: np.random.Generator) -> np.ndarray:
    """Checkpoint indices of a circular block bootstrap of ``n`` checkpoints, reversed with
    probability 1/2."""
    b = block_length(n)
    starts = rng.integers(0, n, size=math.ceil(n / b))
    order = ((starts[:, None] + np.arange(b)[None, :]) % n).reshape(-1)[:n]
    return order[::-1] if rng.random() < 0.5 else order


def increasing_fit(y: np.ndarray) -> np.ndarray:
    """Least-squares non-decreasing fit of ``y`` (pool adjacent violators)."""
    sums: list[float] = []
    counts: list[int] = []
    for v in y:
        sums.append(float(v))
        counts.append(1)
        while len(sums) > 1 and sums[-2] * counts[-1] > sums[-1] * counts[-2]:
            s, c = sums.pop(), counts.pop()
            sums[-1] += s
            counts[-1] += c
    return np.repeat(np.array(sums) / np.array(counts), counts)


def detrend(series: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals of each column of ``series`` ``[step, unit]`` (steps in order) about its
    best monotone fit, rising or falling, whichever fits better (over its finite entries),
    and each column's mean level: what no monotone trend explains."""
    resid = np.full_like(series, np.nan)
    level = np.full(series.shape[1], np.nan)
    for u in range(series.shape[1]):
        ok = np.isfinite(series[:, u])
        if not ok.any():
            continue
        y = series[ok, u]
        fits = (increasing_fit(y), -increasing_fit(-y))
        fit = min(fits, key=lambda f: float(((y - f) ** 2).sum()))
        level[u] = y.mean()
        resid[ok, u] = y - fit
    return resid, level


def _null_trend(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    da = arrays["values"].sortby(schema.STEP)
    arranged, runs = _runs(da)
    out = np.full_like(runs, np.nan)
    for r in range(runs.shape[0]):
        resid, level = detrend(runs[r])
        order = _block_order(runs.shape[1], rng)
        moved = resid[order]
        moved = np.where(np.isfinite(moved), moved, 0.0) + level[None, :]
        out[r] = np.where(np.isfinite(runs[r]), moved, np.nan)
    return {**arrays, "values": _from_runs(arranged, out, da)}


def _plant_trend(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    """The reference rise ``last - first``, linear in the step from the first checkpoint to
    the last, added to every unit; planted ``effect``: the rise's own correlation with step,
    +1 (or -1 for a fall) on every scale of the kind."""
    rise = (reference_number(spec, ("last",), "value at the last checkpoint")
            - reference_number(spec, ("first",), "value at the first checkpoint"))
    if rise == 0:
        raise NotPlantable("the reference's first and last values are equal: no trend to plant")
    da = arrays["values"]
    steps = np.asarray(da[schema.STEP].values, dtype=float)
    span = float(steps.max() - steps.min())
    if not span > 0:
        raise NotPlantable("the selection has one checkpoint")
    fraction = (da[schema.STEP].astype(float) - steps.min()) / span
    return {**arrays, "values": (da + rise * fraction).transpose(*da.dims)}, math.copysign(1.0, rise)


def permute_layers(da: Any, rng: np.random.Generator) -> Any:
    """``da`` with its layers permuted within each model, one permutation per model applied
    at every checkpoint and coordinate: each layer keeps its heads and its trajectory, only
    its depth changes. Layers without data (padding) stay where they are."""
    lead = [d for d in (schema.MODEL,) if d in da.dims]
    if schema.LAYER not in da.dims:
        raise NotPlantable(f"the selection of {da.name!r} has no layer dimension")
    rest = [d for d in da.dims if d not in (*lead, schema.LAYER)]
    arranged = da.transpose(*lead, schema.LAYER, *rest)
    values = np.array(arranged.values, dtype=float)
    for ix in np.ndindex(*values.shape[: len(lead)]):
        block = values[ix]  # [layer, rest...]
        have = np.flatnonzero(np.isfinite(block.reshape(block.shape[0], -1)).any(axis=1))
        block[have] = block[rng.permutation(have)]
    return arranged.copy(data=values).transpose(*da.dims)


def _null_layers(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    return {**arrays, "values": permute_layers(arrays["values"], rng)}


def crossing_profile(steps: np.ndarray, crossing: float, start: int) -> np.ndarray:
    """+1 before ``crossing`` and -1 after it, linear in ``log10(step)`` (in the step when
    the bracketing checkpoint is 0) between the two checkpoints that bracket it, so that
    the kind's interpolation puts a noiseless sign change exactly at ``crossing``. ``start``:
    the first checkpoint the kind looks for a crossing from."""
    k = int(np.searchsorted(steps, crossing, side="left"))  # steps[k - 1] < crossing <= steps[k]
    if k <= start or k >= steps.size:
        raise NotPlantable(f"the crossing step {crossing:g} is not after the early checkpoint "
                           f"({steps[start]:g}) and within the last ({steps[-1]:g})")
    lo, hi = steps[k - 1], steps[k]
    if lo > 0:
        with np.errstate(divide="ignore"):
            pos = np.log10(np.where(steps > 0, steps, lo))
        at, width = math.log10(crossing), max(math.log10(crossing / lo), math.log10(hi / crossing))
    else:
        pos, at, width = steps, crossing, max(crossing - lo, hi - crossing)
    return np.clip((at - pos) / width, -1.0, 1.0)


def _layer_depths(block: np.ndarray) -> np.ndarray:
    """Normalized depth ``l / (L - 1)`` of each layer of ``[layer, ...]`` among the layers
    with data (NaN for padding), centred at their mean."""
    have = np.isfinite(block.reshape(block.shape[0], -1)).any(axis=1)
    depth = np.full(block.shape[0], np.nan)
    n = int(have.sum())
    depth[have] = np.arange(n) / max(n - 1, 1)
    return depth - np.nanmean(depth)


def _plant_crossover(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    """A depth gradient ``g(step) * (depth - mean depth)`` added to every head: ``g`` is
    ``+G`` (the declared early sign) before the reference fraction of training and ``-G``
    after it (:func:`crossing_profile`); ``G`` makes the planted layer profile as spread as
    the data's layer means (their SD over layers, the median over the checkpoints from the
    early one on). Planted ``effect``: the reference fraction of training."""
    fraction = reference_number(spec, ("fraction_of_training",), "crossover fraction of training")
    params = spec.resolved_params()
    da = arrays["values"]
    lead = [d for d in (schema.MODEL,) if d in da.dims]
    rest = [d for d in da.dims if d not in (*lead, schema.STEP, schema.LAYER)]
    arranged = da.transpose(*lead, schema.STEP, schema.LAYER, *rest)
    values = np.array(arranged.values, dtype=float)
    if not lead:
        values = values[None]
    steps = np.asarray(arranged[schema.STEP].values, dtype=float)
    start = int(np.argmax(steps >= float(params.get("early_fraction", 0.0)) * steps[-1]))
    sign = 1.0 if params.get("from_sign") == "positive" else -1.0
    profile = sign * crossing_profile(steps, fraction * steps[-1], start)
    for m in range(values.shape[0]):
        block = values[m]  # [step, layer, rest...]
        flat = block.reshape(block.shape[0], block.shape[1], -1)
        depth = _layer_depths(np.moveaxis(flat, 1, 0))
        with warnings.catch_warnings():  # padded layers: means of empty slices
            warnings.simplefilter("ignore", RuntimeWarning)
            spread = np.nanstd(np.nanmean(flat, axis=2), axis=1)[start:]
        size = float(np.nanmedian(spread)) / float(np.nanstd(depth))
        if not (math.isfinite(size) and size > 0):
            raise NotPlantable("the layer means do not vary: no spread to size the gradient by")
        flat += size * profile[:, None, None] * np.nan_to_num(depth)[None, :, None]
        values[m] = flat.reshape(block.shape)
    out = arranged.copy(data=values.reshape(arranged.shape)).transpose(*da.dims)
    return {**arrays, "values": out}, fraction


def _no_crossing(row: Mapping[str, float], spec: Any) -> float:
    """NaN: under the null there is no crossover to locate."""
    return math.nan


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
    "trend": Design(
        null=_null_trend, plant=_plant_trend, null_value=prediction_value,
        what="null: each run's units detrended (best monotone fit removed), residual checkpoints "
             "resampled in circular blocks and reversed in time with probability 1/2; planted: "
             "the reference rise (last - first), linear in step, added (its own correlation "
             "with step: 1); with fewer than 6 runs the sign-flip test cannot reach alpha / 2 "
             "(0.025), so every verdict is inconclusive"),
    "depth_crossover": Design(
        null=_null_layers, plant=_plant_crossover, null_value=_no_crossing, sign=False,
        what="null: the layer order of each model permuted once, the same at every checkpoint; "
             "planted: a depth gradient of the declared early sign reversing at the reference "
             "fraction of training, sized by the data's spread of layer means"),
}
