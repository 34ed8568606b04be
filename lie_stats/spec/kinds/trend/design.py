"""Designs of the kinds over training and depth: ``trend``, ``depth_crossover``,
``enrichment``, ``boundary_ratio``.

Each null keeps what the kind's own test treats as independent (layers, runs, layer order)
and takes away only the effect tested:

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
- ``enrichment`` (last / first): whole layers swapped between the two checkpoints; the
  reference ratio planted by scaling the last checkpoint.
- ``boundary_ratio``: whole layers (all their heads) permuted among the layer positions of
  their model, so that which layers stand at the boundary is chance; planted: the first and
  last layer's head values spread (:mod:`lie_stats.spec.simulate.layers`) so that each
  layer's summary is the reference ratio times the interior's.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .... import schema
from .... import columns as C
from ...simulate import (Arrays, Design, NotPlantable, one, prediction_value, reference_number,
                         swap_layers)
from ...simulate.layers import (by_model_layer, cv, exp_null_center, magnitude_reference,
                                null_layers, positive, present, put_back, solve_factor, summary_of)

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



# ----------------------------------------------------------------------------- enrichment


def _null_swap(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    first, last = swap_layers(arrays["first"], arrays["last"], rng)
    return {**arrays, "first": first, "last": last}


def _plant_ratio(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    ratio = reference_number(spec, ("ratio",), "ratio last / first")
    if ratio <= 0:
        raise NotPlantable(f"the reference ratio {ratio} is not positive")
    return {**arrays, "last": arrays["last"] * ratio}, ratio


# ----------------------------------------------------------------------------- boundary_ratio


def _log_spread(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Positive ``x`` ``[n]`` spread in log space by each ``k`` -> ``[K, n]``, each row
    rescaled to the mean of ``x`` (its CV rises with ``k`` from 0)."""
    z = np.log(x) - np.log(x).mean()
    kz = np.asarray(k, dtype=float)[:, None] * z[None, :]
    out = np.exp(kz - kz.max(axis=1, keepdims=True))  # the scale drops out below
    return out * (x.mean() / out.mean(axis=1, keepdims=True))


def _plant_boundary_ratio(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    ratio = magnitude_reference(spec, C.EFFECT)
    if ratio is None:
        ratio = reference_number(spec, ("ratio", "ratio_low"), "boundary / interior ratio")
    ratio = positive(ratio, "ratio")
    summary = str(spec.resolved_params().get("summary", "mean"))
    da = arrays["values"]
    arranged, v = by_model_layer(da)
    if v.shape[0] != 1:
        raise NotPlantable(f"selection['values'] holds {v.shape[0]} models, not one")
    layers = np.flatnonzero(present(v[0], 1))
    if layers.size < 3:
        raise NotPlantable(f"{layers.size} layers with data: no boundary and interior")
    rows = v[0].reshape(v.shape[1], -1)
    s = np.array([summary_of(rows[layer], summary) for layer in layers])
    target = ratio * s[1:-1].mean()  # each boundary layer at the ratio times the interior
    for b, sb in ((layers[0], s[0]), (layers[-1], s[-1])):
        row = rows[b]
        ok = np.isfinite(row)
        if summary == "mean":
            row[ok] = row[ok] * (target / sb)
            continue
        x = row[ok]
        if not (x > 0).all():
            raise NotPlantable(f"layer {b} holds values that are not positive: a CV is spread in log space")
        k = solve_factor(lambda ks: cv(_log_spread(x, ks)), target,
                         f"layer {b}'s CV for the boundary ratio {ratio:g}")
        row[ok] = _log_spread(x, np.array([k]))[0]
    v[0] = rows.reshape(v.shape[1:])
    return {**arrays, "values": put_back(da, arranged, v)}, ratio


DESIGNS = {
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
    "enrichment": Design(
        null=_null_swap, plant=_plant_ratio, null_value=one,
        what="null: first and last swapped by whole layers; planted: last x the reference ratio"),
    "boundary_ratio": Design(
        null=null_layers("values"), plant=_plant_boundary_ratio, null_value=exp_null_center,
        what="null: whole layers permuted among their model's layer positions (which layers "
             "are the boundary is chance); planted: the first and last layer's head values "
             "spread (in log space, layer mean kept, for a CV; scaled for a mean) so that each "
             "layer's summary is the reference ratio times the interior's mean"),
}
