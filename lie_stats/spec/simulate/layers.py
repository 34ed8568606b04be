"""Building blocks of the designs over layers, checkpoints and head pairs: whole layers
permuted among layer positions, heads permuted together across roles, layers run backwards in
time, and the spreading of values by a factor solved for numerically so that a planted
figure (a boundary ratio, an enrichment) comes out exactly; where no factor reaches it (a CV
over n values is at most sqrt(n - 1)), :class:`~lie_stats.spec.simulate.NotPlantable` says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ... import columns as C
from . import Arrays, NotPlantable

__all__ = ["FACTORS", "by_model_layer", "put_back", "present", "permute_layers",
           "permute_heads_together", "reverse_layers_in_time", "cv_ceiling", "solve_factor",
           "spread", "cv", "summary_of", "magnitude_reference", "positive", "exp_null_center",
           "null_layers"]

#: Factors tried (then bisected between) when solving for a planted figure.
FACTORS = np.concatenate([[0.0], np.geomspace(1e-3, 1e4, 141)])


# ----------------------------------------------------------------------------- array moves


def by_model_layer(da: Any, *, after: Sequence[str] = ()) -> tuple[Any, np.ndarray]:
    """``da`` as (model, layer, *after, rest...) and its values as floats (a model axis of 1
    added when ``da`` has none)."""
    for d in ("layer", *after):
        if d not in da.dims:
            raise NotPlantable(f"the selection of {da.name!r} has no {d} dimension")
    lead = [d for d in ("model", "layer", *after) if d in da.dims]
    arranged = da.transpose(*lead, ...)
    values = np.array(arranged.values, dtype=float)
    return arranged, values if "model" in da.dims else values[None]


def put_back(da: Any, arranged: Any, values: np.ndarray) -> Any:
    return arranged.copy(data=values if "model" in da.dims else values[0]).transpose(*da.dims)


def present(values: np.ndarray, axes: int) -> np.ndarray:
    """Mask of the leading ``axes`` positions with any finite value below them."""
    return np.isfinite(values.reshape(*values.shape[:axes], -1)).any(axis=-1)


def _jointly(arrays: Sequence[Any], after: Sequence[str],
             move: Callable[[np.ndarray, np.random.Generator], Sequence[np.ndarray]],
             rng: np.random.Generator) -> list[Any]:
    """Apply one index move per leading position (model, layer, *after minus its last) to
    every array alike. ``move(present_mask, rng)`` gives (index, new order) of the last
    leading axis; the presence mask is read from the first array."""
    parts = [by_model_layer(da, after=after) for da in arrays]
    n_lead = 2 + len(after)
    shape = parts[0][1].shape[:n_lead]
    if any(v.shape[:n_lead] != shape for _, v in parts):
        raise NotPlantable(f"the roles' selections differ in their {('model', 'layer', *after)} sizes")
    have = present(parts[0][1], n_lead)
    for ix in np.ndindex(*shape[:-1]):
        idx, order = move(have[ix], rng)
        for _, v in parts:
            v[ix + (idx,)] = v[ix + (order,)]
    return [put_back(da, a, v) for (a, v), da in zip(parts, arrays)]


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


def cv_ceiling(n: int, summary: str) -> str:
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


def cv(x: np.ndarray) -> np.ndarray:
    """std / mean over the last axis (population std), NaN ignored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nanstd(x, axis=-1) / np.nanmean(x, axis=-1)


def summary_of(x: np.ndarray, summary: str) -> np.ndarray:
    return np.nanmean(x, axis=-1) if summary == "mean" else cv(x)


# ----------------------------------------------------------------------------- reference figures


def magnitude_reference(spec: Any, estimate: str) -> float | None:
    mag = getattr(spec.prediction, "magnitude", None)
    if mag is not None and getattr(mag, "estimate", C.EFFECT) == estimate:
        value = mag.reference
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
    return None


def positive(value: float, what: str) -> float:
    if not value > 0:
        raise NotPlantable(f"the reference {what} {value} is not positive")
    return value


def exp_null_center(row: Mapping[str, float], spec: Any) -> float:
    """The ratio at the permutation null's centre, ``exp(null_center)`` (1 without one)."""
    center = row.get(C.NULL_CENTER)
    return float(math.exp(center)) if center is not None and math.isfinite(center) else 1.0


# ----------------------------------------------------------------------------- nulls


def null_layers(*roles: str) -> Callable[[Arrays, Any, np.random.Generator], Arrays]:
    def null(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
        moved = permute_layers([arrays[r] for r in roles], rng)
        return {**arrays, **dict(zip(roles, moved))}

    null.__doc__ = f"selection {', '.join(roles)} with whole layers permuted among layer positions"
    return null
