"""Boundary-layer and head-enrichment kinds: ``boundary_ratio``, ``enrichment_profile``,
``functional_boundary_shift``, ``head_enrichment_excess``.

Nulls, each the null its kind's test is exact under, drawn from the spec's own data:

- ``boundary_ratio``, ``enrichment_profile``: whole layers (all their heads, both
  checkpoints together) permuted among the layer positions of their model, so that which
  layers stand at the boundary is chance; what a layer holds stays as it is;
- ``functional_boundary_shift``: each head's value norms (first and last, with its label)
  permuted among the heads of its layer; the Killing forms stay;
- ``head_enrichment_excess``: each (model, layer)'s trajectory over its checkpoints run
  backwards with probability 1/2: the heads' departures keep their temporal dependence
  (mean reversion) and a persistent departure points forwards or backwards at random.

Plants: the reference's figure written into the null data by spreading the values that
make it (the boundary layers' head values, the boundary layers' pairs at the last
checkpoint, one head's pairs per layer from contracted at the first checkpoint to spread at
the last) by the factor that gives the figure exactly, solved numerically; where no factor
reaches it (a CV over n values is at most sqrt(n - 1)),
:class:`~lie_stats.diagnosis.simulate.NotPlantable` says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...stats import columns as C
from ...stats.pairwise import NULL_RATIO, pair_summary, row_summary, symmetric_pairs
from ..simulate import Arrays, Design, NotPlantable, reference_number

__all__ = ["permute_layers", "permute_heads_together", "reverse_layers_in_time", "solve_factor",
           "spread", "DESIGNS"]

#: Factors tried (then bisected between) when solving for a planted figure.
FACTORS = np.concatenate([[0.0], np.geomspace(1e-3, 1e4, 141)])


# ----------------------------------------------------------------------------- array moves


def _by_model_layer(da: Any, *, after: Sequence[str] = ()) -> tuple[Any, np.ndarray]:
    """``da`` as (model, layer, *after, rest...) and its values as floats (a model axis of 1
    added when ``da`` has none)."""
    for d in ("layer", *after):
        if d not in da.dims:
            raise NotPlantable(f"the selection of {da.name!r} has no {d} dimension")
    lead = [d for d in ("model", "layer", *after) if d in da.dims]
    arranged = da.transpose(*lead, ...)
    values = np.array(arranged.values, dtype=float)
    return arranged, values if "model" in da.dims else values[None]


def _back(da: Any, arranged: Any, values: np.ndarray) -> Any:
    return arranged.copy(data=values if "model" in da.dims else values[0]).transpose(*da.dims)


def _present(values: np.ndarray, axes: int) -> np.ndarray:
    """Mask of the leading ``axes`` positions with any finite value below them."""
    return np.isfinite(values.reshape(*values.shape[:axes], -1)).any(axis=-1)


def _jointly(arrays: Sequence[Any], after: Sequence[str],
             move: Callable[[np.ndarray, np.random.Generator], Sequence[np.ndarray]],
             rng: np.random.Generator) -> list[Any]:
    """Apply one index move per leading position (model, layer, *after minus its last) to
    every array alike. ``move(present_mask, rng)`` gives (index, new order) of the last
    leading axis; the presence mask is read from the first array."""
    parts = [_by_model_layer(da, after=after) for da in arrays]
    n_lead = 2 + len(after)
    shape = parts[0][1].shape[:n_lead]
    if any(v.shape[:n_lead] != shape for _, v in parts):
        raise NotPlantable(f"the roles' selections differ in their {('model', 'layer', *after)} sizes")
    have = _present(parts[0][1], n_lead)
    for ix in np.ndindex(*shape[:-1]):
        idx, order = move(have[ix], rng)
        for _, v in parts:
            v[ix + (idx,)] = v[ix + (order,)]
    return [_back(da, a, v) for (a, v), da in zip(parts, arrays)]


def _shuffle(have: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    idx = np.flatnonzero(have)
    return idx, rng.permutation(idx)


def permute_layers(arrays: Sequence[Any], rng: np.random.Generator) -> list[Any]:
    """The arrays with their layers permuted among the layer positions of each model: one
    permutation per model, the same for every array, among the layers with data in the
    first array (padding layers stay where they are).

    >>> import xarray as xr
    >>> a = xr.DataArray(np.arange(8.0).reshape(4, 2), dims=("layer", "head"))
    >>> out, = permute_layers([a], np.random.default_rng(0))
    >>> sorted(out.values.tolist()) == a.values.tolist()
    True
    """
    return _jointly(arrays, (), _shuffle, rng)


def permute_heads_together(arrays: Sequence[Any], rng: np.random.Generator) -> list[Any]:
    """The per-head arrays with their heads permuted within each (model, layer): one
    permutation per layer, the same for every array, among the heads with data in the first
    array."""
    return _jointly(arrays, ("head",), _shuffle, rng)


def _maybe_reversed(have: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    idx = np.flatnonzero(have)
    return idx, idx[::-1] if rng.random() < 0.5 else idx


def reverse_layers_in_time(da: Any, rng: np.random.Generator) -> Any:
    """``da`` (with ``step`` and ``layer``) with each (model, layer)'s values over its
    checkpoints with data run backwards, each with probability 1/2.

    >>> import xarray as xr
    >>> a = xr.DataArray(np.arange(12.0).reshape(3, 4), dims=("step", "layer"))
    >>> out = reverse_layers_in_time(a, np.random.default_rng(1))
    >>> all(out.values[:, l].tolist() in (a.values[:, l].tolist(), a.values[::-1, l].tolist())
    ...     for l in range(4))
    True
    """
    out, = _jointly([da], ("step",), _maybe_reversed, rng)
    return out


# ----------------------------------------------------------------------------- solving for a figure


def _cv_ceiling(n: int, summary: str) -> str:
    return f" (a CV over {n} values is at most sqrt({n - 1}) = {math.sqrt(n - 1):.3g})" if summary == "cv" else ""


def solve_factor(f: Callable[[np.ndarray], np.ndarray], target: float, what: str,
                 grid: np.ndarray = FACTORS, ceiling: str = "") -> float:
    """The smallest factor ``k`` on ``grid`` (bisected to the crossing) where ``f(k)``
    reaches ``target``; ``f`` maps an array of factors to an array of values.

    Raises
    ------
    NotPlantable
        No factor on the grid reaches ``target`` (the message gives the most reached).
    """
    vals = np.asarray(f(grid), dtype=float)
    hit = np.flatnonzero(np.isfinite(vals) & (vals >= target))
    if hit.size == 0:
        most = np.nanmax(vals) if np.isfinite(vals).any() else math.nan
        raise NotPlantable(f"{what} needs {target:.4g}; spreading the values reaches at most "
                           f"{most:.4g}{ceiling}")
    i = int(hit[0])
    if i == 0:
        return float(grid[0])
    lo, hi = float(grid[i - 1]), float(grid[i])
    for _ in range(6):  # the bracket shrinks 31-fold a round: 1e-9 of it after six
        ks = np.linspace(lo, hi, 32)
        vals = np.asarray(f(ks), dtype=float)
        j = int(np.flatnonzero(np.isfinite(vals) & (vals >= target))[0])
        lo, hi = float(ks[max(j - 1, 0)]), float(ks[j])
    return hi


def spread(x: np.ndarray, k: np.ndarray, summary: str) -> np.ndarray:
    """``x`` ``[..., n]`` spread by each factor of ``k`` ``[K]`` -> ``[K, ..., n]``: its
    deviations from its mean over the last axis times ``k`` (``"cv"``: the mean kept, the
    standard deviation times ``k``), or the values times ``k`` (``"mean_abs"``)."""
    k = np.asarray(k, dtype=float).reshape((-1,) + (1,) * x.ndim)
    if summary == "mean_abs":
        return k * x
    m = np.nanmean(x, axis=-1, keepdims=True)
    return m + k * (x - m)


def _cv(x: np.ndarray) -> np.ndarray:
    """std / mean over the last axis (population std), NaN ignored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nanstd(x, axis=-1) / np.nanmean(x, axis=-1)


def _summary(x: np.ndarray, summary: str) -> np.ndarray:
    return np.nanmean(x, axis=-1) if summary == "mean" else _cv(x)


def _boundary_of(s: np.ndarray) -> float:
    return float((s[0] + s[-1]) / 2.0 / s[1:-1].mean())


# ----------------------------------------------------------------------------- reference figures


def _magnitude_reference(spec: Any, estimate: str) -> float | None:
    mag = getattr(spec.prediction, "magnitude", None)
    if mag is not None and getattr(mag, "estimate", C.EFFECT) == estimate:
        value = mag.reference
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
    return None


def _positive(value: float, what: str) -> float:
    if not value > 0:
        raise NotPlantable(f"the reference {what} {value} is not positive")
    return value


def exp_null_center(row: Mapping[str, float], spec: Any) -> float:
    """The ratio at the permutation null's centre, ``exp(null_center)`` (1 without one)."""
    center = row.get(C.NULL_CENTER)
    return float(math.exp(center)) if center is not None and math.isfinite(center) else 1.0


# ----------------------------------------------------------------------------- boundary_ratio


def _null_layers(*roles: str) -> Callable[[Arrays, Any, np.random.Generator], Arrays]:
    def null(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
        moved = permute_layers([arrays[r] for r in roles], rng)
        return {**arrays, **dict(zip(roles, moved))}

    null.__doc__ = f"selection {', '.join(roles)} with whole layers permuted among layer positions"
    return null


def _log_spread(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Positive ``x`` ``[n]`` spread in log space by each ``k`` -> ``[K, n]``, each row
    rescaled to the mean of ``x`` (its CV rises with ``k`` from 0)."""
    z = np.log(x) - np.log(x).mean()
    kz = np.asarray(k, dtype=float)[:, None] * z[None, :]
    out = np.exp(kz - kz.max(axis=1, keepdims=True))  # the scale drops out below
    return out * (x.mean() / out.mean(axis=1, keepdims=True))


def _plant_boundary_ratio(arrays: Arrays, spec: Any, rng: np.random.Generator) -> tuple[Arrays, float]:
    ratio = _magnitude_reference(spec, C.EFFECT)
    if ratio is None:
        ratio = reference_number(spec, ("ratio", "ratio_low"), "boundary / interior ratio")
    ratio = _positive(ratio, "ratio")
    summary = str(spec.resolved_params().get("summary", "mean"))
    da = arrays["values"]
    arranged, v = _by_model_layer(da)
    if v.shape[0] != 1:
        raise NotPlantable(f"selection['values'] holds {v.shape[0]} models, not one")
    layers = np.flatnonzero(_present(v[0], 1))
    if layers.size < 3:
        raise NotPlantable(f"{layers.size} layers with data: no boundary and interior")
    rows = v[0].reshape(v.shape[1], -1)
    s = np.array([_summary(rows[layer], summary) for layer in layers])
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
        k = solve_factor(lambda ks: _cv(_log_spread(x, ks)), target,
                         f"layer {b}'s CV for the boundary ratio {ratio:g}")
        row[ok] = _log_spread(x, np.array([k]))[0]
    v[0] = rows.reshape(v.shape[1:])
    return {**arrays, "values": _back(da, arranged, v)}, ratio


# ----------------------------------------------------------------------------- enrichment_profile


def _pairs_of(da: Any) -> tuple[Any, np.ndarray]:
    """One model's pair matrices ``[layer, head, head_j]`` (symmetrized) and the arrangement."""
    arranged, v = _by_model_layer(da, after=("head", "head_j"))
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
    first_e = _magnitude_reference(spec, "enrichment_first_layer")
    if first_e is None:
        first_e = reference_number(spec, ("enrichment_first_layer",), "first layer's enrichment")
    last_e = reference_number(spec, ("enrichment_last_layer",), "last layer's enrichment")
    targets = (_positive(first_e, "enrichment"), _positive(last_e, "enrichment"))
    summary = str(spec.resolved_params().get("layer_summary", "cv"))
    fa, f = _pairs_of(arrays["first"])
    la, g = _pairs_of(arrays["last"])
    layers = np.flatnonzero(_present(f[0], 1) & _present(g[0], 1))
    if layers.size < 3:
        raise NotPlantable(f"{layers.size} layers with data: no boundary and interior")
    for b, target in zip((layers[0], layers[-1]), targets):
        sym = symmetric_pairs(g[0, b])
        x = sym[_upper(sym)]
        want = target * _layer_summary(f[0, b], summary)
        k = solve_factor(lambda ks: _pair_stat(spread(x, ks, summary), summary), want,
                         f"layer {b}'s enrichment {target:g} (its last-checkpoint {summary} at "
                         f"{target:g} x {want / target:.4g})", ceiling=_cv_ceiling(x.size, summary))
        g[0, b] = _spread_layer(g[0, b], k, summary)
    e = np.array([_layer_summary(g[0, i], summary) / _layer_summary(f[0, i], summary) for i in layers])
    return {**arrays, "last": _back(arrays["last"], la, g)}, _boundary_of(e)


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
    ratio = _positive(reference_number(spec, ("ratio",), "head over layer enrichment ratio")
                      if "ratio" in spec.reference else
                      reference_number(spec, ("head_enrichment",), "head enrichment")
                      / reference_number(spec, ("layer_enrichment",), "layer enrichment"), "ratio")
    summary = str(spec.resolved_params().get("layer_summary", "cv"))
    da = arrays["values"]
    arranged, v = _by_model_layer(da, after=("step", "head", "head_j"))
    logs = []
    for m, layer in np.ndindex(*v.shape[:2]):
        x = v[m, layer]  # [step, head, head_j] as stored
        steps = np.flatnonzero(_present(x, 1))
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
    return {**arrays, "values": _back(da, arranged, v)}, float(math.exp(np.mean(logs)))


def null_ratio(row: Mapping[str, float], spec: Any) -> float:
    """The time-reversal null's ratio (``null_ratio``), 1 without one."""
    value = row.get(NULL_RATIO)
    return float(value) if value is not None and math.isfinite(value) else 1.0


# ----------------------------------------------------------------------------- the designs


DESIGNS = {
    "boundary_ratio": Design(
        null=_null_layers("values"), plant=_plant_boundary_ratio, null_value=exp_null_center,
        what="null: whole layers permuted among their model's layer positions (which layers "
             "are the boundary is chance); planted: the first and last layer's head values "
             "spread (in log space, layer mean kept, for a CV; scaled for a mean) so that each "
             "layer's summary is the reference ratio times the interior's mean"),
    "enrichment_profile": Design(
        null=_null_layers("first", "last"), plant=_plant_profile, null_value=exp_null_center,
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
