"""Designs of the pairwise kinds: ``enrichment_profile``, ``functional_boundary_shift``,
``head_enrichment_excess``.

Nulls, each the null its kind's test is exact under, drawn from the spec's own data:

- ``enrichment_profile``: whole layers (all their heads, both checkpoints together) permuted
  among the layer positions of their model, so that which layers stand at the boundary is
  chance; what a layer holds stays as it is;
- ``functional_boundary_shift``: each head's value norms (first and last, with its label)
  permuted among the heads of its layer; the Killing forms stay;
- ``head_enrichment_excess``: each (model, layer)'s trajectory over its checkpoints run
  backwards with probability 1/2: the heads' departures keep their temporal dependence
  (mean reversion) and a persistent departure points forwards or backwards at random.

Plants: the reference's figure written into the null data by spreading the values that
make it (the boundary layers' pairs at the last checkpoint, one head's pairs per layer from
contracted at the first checkpoint to spread at the last) by the factor that gives the
figure exactly, solved numerically (:mod:`lie_stats.spec.simulate.layers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ....columns import NULL_RATIO
from ....stats.pairwise import pair_summary, row_summary, symmetric_pairs
from ...simulate import Arrays, Design, NotPlantable, reference_number
from ...simulate.layers import (FACTORS, by_model_layer, cv_ceiling, exp_null_center,
                                magnitude_reference, null_layers, permute_heads_together, positive,
                                present, put_back, reverse_layers_in_time, solve_factor, spread)

__all__ = ["DESIGNS"]


def _boundary_of(s: np.ndarray) -> float:
    return float((s[0] + s[-1]) / 2.0 / s[1:-1].mean())


# ----------------------------------------------------------------------------- enrichment_profile


def _pairs_of(da: Any) -> tuple[Any, np.ndarray]:
    """One model's pair matrices ``[layer, head, head_j]`` (symmetrized) and the arrangement."""
    arranged, v = by_model_layer(da, after=("head", "head_j"))
    if v.shape[0] != 1 or v.ndim != 4:
        raise NotPlantable(f"selection[{da.name!r}] must hold one model's [layer, head, head_j] pairs")
    return arranged, v


def _upper(m: np.ndarray) -> np.ndarray:
    h = m.shape[-1]
    return np.triu(np.ones((h, h), dtype=bool), 1) & np.isfinite(m)


def _layer_summary(m: np.ndarray, summary: str) -> float:
    return float(pair_summary(m, summary=summary))


def _spread_layer(stored: np.ndarray, k: float, summary: str) -> np.ndarray:
    """A layer's stored pairs with its pairs ``i < j`` spread by ``k`` (symmetric kept)."""
    sym = symmetric_pairs(stored)
    mask = _upper(sym)
    new = sym.copy()
    new[mask] = spread(sym[mask], np.array([k]), summary)[0]
    new = np.where(mask, new, np.where(mask.T, new.T, sym))
    return np.where(np.isfinite(stored), new, np.nan)


def _plant_profile(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    first_e = magnitude_reference(spec, "enrichment_first_layer")
    if first_e is None:
        first_e = reference_number(spec, ("enrichment_first_layer",), "first layer's enrichment")
    last_e = reference_number(spec, ("enrichment_last_layer",), "last layer's enrichment")
    targets = (positive(first_e, "enrichment"), positive(last_e, "enrichment"))
    summary = str(spec.resolved_params().get("layer_summary", "cv"))
    fa, f = _pairs_of(arrays["first"])
    la, g = _pairs_of(arrays["last"])
    layers = np.flatnonzero(present(f[0], 1) & present(g[0], 1))
    if layers.size < 3:
        raise NotPlantable(f"{layers.size} layers with data: no boundary and interior")
    for b, target in zip((layers[0], layers[-1]), targets):
        sym = symmetric_pairs(g[0, b])
        x = sym[_upper(sym)]
        want = target * _layer_summary(f[0, b], summary)
        k = solve_factor(lambda ks: _pair_stat(spread(x, ks, summary), summary), want,
                         f"layer {b}'s enrichment {target:g} (its last-checkpoint {summary} at "
                         f"{target:g} x {want / target:.4g})", ceiling=cv_ceiling(x.size, summary))
        g[0, b] = _spread_layer(g[0, b], k, summary)
    e = np.array([_layer_summary(g[0, i], summary) / _layer_summary(f[0, i], summary) for i in layers])
    return {**arrays, "last": put_back(arrays["last"], la, g)}, _boundary_of(e)


def _pair_stat(x: np.ndarray, summary: str) -> np.ndarray:
    """A pair summary over the last axis: ``"cv"`` std / mean |.| (METRICS.md §4.4),
    ``"mean_abs"`` mean |.| (as :func:`lie_stats.stats.pairwise.pair_summary`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mabs = np.abs(x).mean(axis=-1)
        return mabs if summary == "mean_abs" else np.std(x, axis=-1) / mabs


# ----------------------------------------------------------------------------- functional shift


def _null_value_norms(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    roles = [r for r in ("w_first", "w_last", "labels") if r in arrays]
    return {**arrays, **dict(zip(roles, permute_heads_together([arrays[r] for r in roles], rng)))}


def _plant_shift(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    figures = {k: v for k, v in spec.reference.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if not figures:
        raise NotPlantable(f"the reference {dict(spec.reference)!r} gives a direction only, no "
                           f"size of the functional form's shift to plant")
    raise NotPlantable(f"no value-norm assignment is defined that gives the reference's "
                       f"{figures!r} (a shift of the functional form's boundary ratio)")


# ----------------------------------------------------------------------------- head_enrichment_excess


def _null_reversed(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
    return {**arrays, "values": reverse_layers_in_time(arrays["values"], rng)}


def _excess_ratio(first: np.ndarray, last: np.ndarray, summary: str) -> np.ndarray:
    """``max_h e_h / e_l`` of pair matrices ``[..., H, H]`` at the first and last checkpoint."""
    with np.errstate(invalid="ignore", divide="ignore"):
        e_h = row_summary(last, summary=summary) / row_summary(first, summary=summary)
        e_l = pair_summary(last, summary=summary) / pair_summary(first, summary=summary)
        return e_h.max(axis=-1) / e_l


def _spread_head(m: np.ndarray, h: int, k: np.ndarray, summary: str) -> np.ndarray:
    """Pair matrices ``m`` ``[H, H]`` (symmetric) with head ``h``'s pairs spread by each
    factor of ``k`` -> ``[K, H, H]`` (symmetric kept)."""
    others = np.flatnonzero(np.arange(m.shape[-1]) != h)
    out = np.repeat(m[None], len(np.atleast_1d(k)), axis=0)
    row = spread(m[h, others], k, summary)
    out[:, h, others] = row
    out[:, others, h] = row
    return out


def _plant_excess(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    ratio = positive(reference_number(spec, ("ratio",), "head over layer enrichment ratio")
                      if "ratio" in spec.reference else
                      reference_number(spec, ("head_enrichment",), "head enrichment")
                      / reference_number(spec, ("layer_enrichment",), "layer enrichment"), "ratio")
    summary = str(spec.resolved_params().get("layer_summary", "cv"))
    da = arrays["values"]
    arranged, v = by_model_layer(da, after=("step", "head", "head_j"))
    logs = []
    for m, layer in np.ndindex(*v.shape[:2]):
        x = v[m, layer]  # [step, head, head_j] as stored
        steps = np.flatnonzero(present(x, 1))
        sym = symmetric_pairs(x[steps])
        heads = np.flatnonzero(np.isfinite(sym).any(axis=(0, 2)))
        if steps.size < 3 or heads.size < 3:
            continue
        sub = sym[:, heads][:, :, heads]
        h = int(rng.integers(heads.size))
        where = f"model {m}, layer {layer}: one head's enrichment over its layer's"
        k = solve_factor(lambda ks: _excess_ratio(_spread_head(sub[0], h, 1.0 / ks, summary),
                                                  _spread_head(sub[-1], h, ks, summary), summary),
                         ratio, where, FACTORS[FACTORS >= 1.0 - 1e-9])
        tau = np.linspace(-1.0, 1.0, steps.size)  # from 1 / k at the first checkpoint to k
        new = np.stack([_spread_head(sub[t], h, np.array([k ** tau[t]]), summary)[0]
                        for t in range(steps.size)])
        full = sym.copy()
        full[np.ix_(range(steps.size), heads, heads)] = new
        x[steps] = np.where(np.isfinite(x[steps]), full, np.nan)
        logs.append(math.log(float(_excess_ratio(new[0], new[-1], summary))))
    if not logs:
        raise NotPlantable("no layer has 3 checkpoints and 3 heads with pairs")
    return {**arrays, "values": put_back(da, arranged, v)}, float(math.exp(np.mean(logs)))


def null_ratio(row: Mapping[str, float], spec: Any) -> float:
    """The time-reversal null's ratio (``null_ratio``), 1 without one."""
    value = row.get(NULL_RATIO)
    return float(value) if value is not None and math.isfinite(value) else 1.0


# ----------------------------------------------------------------------------- the designs


DESIGNS = {
    "enrichment_profile": Design(
        null=null_layers("first", "last"), plant=_plant_profile, null_value=exp_null_center,
        what="null: whole layers (first and last checkpoint together) permuted among layer "
             "positions; planted: the first and last layer's pairs at the last checkpoint "
             "spread so that their enrichments are the reference's (the interior as in the null)"),
    "functional_boundary_shift": Design(
        null=_null_value_norms, plant=_plant_shift, null_value=exp_null_center,
        what="null: each head's value norms (first, last, with its label) permuted among the "
             "heads of its layer, the Killing forms kept; planted: none (the reference gives "
             "a direction, no size)"),
    "head_enrichment_excess": Design(
        null=_null_reversed, plant=_plant_excess, null_value=null_ratio,
        what="null: each (model, layer)'s trajectory run backwards in time with probability "
             "1/2 (reverting head departures keep their dependence, a persistent one points "
             "either way); planted: one head per layer drifting persistently from below its "
             "layer to above it (its pairs' spread times 1 / k at the first checkpoint, "
             "rising geometrically to k at the last), k such that its enrichment over the "
             "layer's is the reference ratio"),
}
