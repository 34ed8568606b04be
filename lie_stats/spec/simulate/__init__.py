"""Building blocks of the simulation designs: the :class:`Design` record, and array operations
that break a tested effect while keeping the layer structure of a spec's selected data
(permuting heads within layers, swapping whole layers between checkpoints, sign-flipping
paired differences by layer) or that plant an effect into it; :mod:`.layers` adds the layer
moves and the factor solving of the designs over layers and head pairs.

The designs themselves sit with their kinds (``lie_stats/spec/kinds/<family>/design.py``);
this package is the layer below them and imports no kind. Every function takes and returns
the xarray selections of one spec (one array per role), never a cube, and draws from the
``numpy.random.Generator`` it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import columns as C

class NotPlantable(Exception):
    """The reference effect cannot be planted into these data (the message says why)."""


Arrays = dict[str, Any]


@dataclass(frozen=True)
class Design:
    """How one kind's selected data are simulated.

    Attributes
    ----------
    null : callable
        ``null(arrays, spec, rng) -> arrays``: the selection with the tested association
        broken and the layer structure kept.
    plant : callable, optional
        ``plant(arrays, spec, rng) -> (arrays, planted)``: the null selection with the
        spec's reference effect planted, and the planted value in the units of the kind's
        ``effect``; raises :class:`NotPlantable` when the spec's reference gives no such
        effect. None: the kind has no defined way to plant an effect.
    null_value : callable
        ``null_value(row, spec) -> float``: the value of ``effect`` under the null (the side
        a type-S error is judged from).
    what : str
        The null and the planted effect in words.
    sign : bool
        Whether a significant estimate has a sign to get wrong (type S); not for
        equivalence, whose "significant" means "within the bound".
    runs_other_kinds : bool
        Whether the simulation runs other kinds' designs and rules (a kind over another
        kind's verdicts): its cached diagnoses then depend on every kind and design.
    """

    null: Callable[[Arrays, Any, np.random.Generator], Arrays]
    plant: Callable[[Arrays, Any, np.random.Generator], tuple[Arrays, float]] | None
    null_value: Callable[[Mapping[str, float], Any], float]
    what: str
    sign: bool = True
    runs_other_kinds: bool = False


# ----------------------------------------------------------------------------- array helpers


def lead_first(da: Any, lead: Sequence[str]) -> tuple[Any, np.ndarray]:
    """``da`` with ``lead`` dims first (those it has), and its values as float."""
    order = [d for d in lead if d in da.dims]
    arranged = da.transpose(*order, *[d for d in da.dims if d not in order])
    return arranged, np.array(arranged.values, dtype=float)


def put_values(da: Any, arranged: Any, values: np.ndarray) -> Any:
    """``values`` (in ``arranged``'s layout) as an array with ``da``'s dims and coords."""
    return arranged.copy(data=values.reshape(arranged.shape)).transpose(*da.dims)


def dims_last(da: Any, dims: Sequence[str]) -> Any:
    """``da`` with the given dims last, in that order (the others first, as they were)."""
    rest = [d for d in da.dims if d not in dims]
    return da.transpose(*rest, *dims)


def layer_slices(da: Any, *, heads: bool = True) -> tuple[Any, np.ndarray, list[tuple[int, ...]]]:
    """``da`` as (model?, layer) first, then head (when ``heads``) and the rest; its values;
    the (model, layer) index tuples."""
    if "layer" not in da.dims or (heads and "head" not in da.dims):
        raise NotPlantable(f"the selection of {da.name!r} has no layer"
                           f"{' and head dimensions' if heads else ' dimension'}")
    if heads and "head_j" in da.dims:
        raise NotPlantable("pairwise (head, head_j) selections have no head permutation here")
    lead = [d for d in ("model", "layer") if d in da.dims]
    rest = [d for d in da.dims if d not in (*lead, "head")]
    da = da.transpose(*lead, *(["head"] if "head" in da.dims else []), *rest)
    values = np.array(da.values, dtype=float)
    index = list(np.ndindex(*values.shape[: len(lead)]))
    return da, values, index


def permute_heads(da: Any, rng: np.random.Generator) -> Any:
    """``da`` with its heads permuted within each (model, layer): one permutation per layer,
    the same at every checkpoint and coordinate, among the heads that have data (padding
    stays where it is).

    >>> import xarray as xr
    >>> da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("layer", "head"))
    >>> out = permute_heads(da, np.random.default_rng(0))
    >>> sorted(out.values[0].tolist()), sorted(out.values[1].tolist())
    ([0.0, 1.0, 2.0], [3.0, 4.0, 5.0])
    """
    arranged, values, index = layer_slices(da)
    for ix in index:
        block = values[ix]  # [head, rest...]
        have = np.flatnonzero(np.isfinite(block.reshape(block.shape[0], -1)).any(axis=1))
        block[have] = block[rng.permutation(have)]
    return arranged.copy(data=values).transpose(*da.dims)


def _normal_scores(v: np.ndarray) -> np.ndarray:
    from scipy.stats import norm, rankdata

    return norm.ppf((rankdata(v) - 0.5) / len(v))


def _pearson_for(rho: float, method: str) -> float:
    """The Pearson correlation of a bivariate normal whose Spearman (or Kendall) is ``rho``."""
    if method == "spearman":
        return 2.0 * math.sin(math.pi * rho / 6.0)
    if method == "kendall":
        return math.sin(math.pi * rho / 2.0)
    return rho


def aligned_xy(arrays: Arrays) -> tuple[Any, Any]:
    import xarray as xr

    x, y = (arrays[r].reset_coords(drop=True) for r in ("x", "y"))
    x, y = xr.align(x, y, join="inner")
    if set(x.dims) != set(y.dims):
        raise NotPlantable(f"x and y have different dimensions ({x.dims} vs {y.dims})")
    return x, y.transpose(*x.dims)


def plant_correlation(arrays: Arrays, rho: float, method: str, rng: np.random.Generator) -> Arrays:
    """``y`` rebuilt within each (model, layer) as ``mean + sd * (c z(x) + sqrt(1 - c^2) z(y))``
    (normal scores of the ranks), so that its within-layer correlation with ``x`` is ``rho``
    on the kind's scale, with each layer's mean and spread of ``y`` kept."""
    x, y = aligned_xy(arrays)
    c = _pearson_for(rho, method)
    xa, xv, index = layer_slices(x)
    ya, yv, _ = layer_slices(y)
    if xv.shape != yv.shape:
        raise NotPlantable("x and y do not align head by head")
    out = yv.copy()
    for ix in index:
        xb, yb = xv[ix].reshape(-1), yv[ix].reshape(-1)
        ok = np.isfinite(xb) & np.isfinite(yb)
        if ok.sum() < 3:
            continue
        zx, zy = _normal_scores(xb[ok]), _normal_scores(yb[ok])
        mixed = c * zx + math.sqrt(max(0.0, 1.0 - c * c)) * zy
        mixed = (mixed - mixed.mean()) / (mixed.std() or 1.0)
        sd = float(np.std(yb[ok])) or 1.0
        block = out[ix].reshape(-1)
        block[ok] = float(np.mean(yb[ok])) + sd * mixed
        out[ix] = block.reshape(out[ix].shape)
    new = dict(arrays)
    new["x"] = x
    new["y"] = ya.copy(data=out).transpose(*y.dims)
    return new


def swap_layers(first: Any, last: Any, rng: np.random.Generator) -> tuple[Any, Any]:
    """``first`` and ``last`` with the values of whole (model, layer) clusters swapped, each
    with probability 1/2 (exchangeable under no change)."""
    import xarray as xr

    f, g = xr.align(first.reset_coords(drop=True), last.reset_coords(drop=True), join="inner")
    g = g.transpose(*f.dims)
    fa, fv, index = layer_slices(f, heads=False)
    ga, gv, _ = layer_slices(g, heads=False)
    for ix in index:
        if rng.random() < 0.5:
            fv[ix], gv[ix] = gv[ix].copy(), fv[ix].copy()
    return fa.copy(data=fv).transpose(*f.dims), ga.copy(data=gv).transpose(*g.dims)


def aligned(arrays: Arrays, first: str, second: str) -> tuple[Any, Any]:
    import xarray as xr

    a, b = xr.align(arrays[first].reset_coords(drop=True), arrays[second].reset_coords(drop=True),
                    join="inner")
    if set(a.dims) != set(b.dims):
        raise NotPlantable(f"{first} and {second} have different dimensions ({a.dims} vs {b.dims})")
    return a, b.transpose(*a.dims)


def flip_differences(a: Any, b: Any, shift: float, rng: np.random.Generator) -> Any:
    """``b`` rebuilt as ``a + s * (d - mean d) + shift``, ``d = b - a``, with one random sign
    ``s`` per (model, layer) cluster: paired differences whose expected mean is ``shift``
    and whose spread and within-layer pattern are the real ones (the sample mean varies
    from draw to draw as the flips fall).

    >>> import xarray as xr
    >>> a = xr.DataArray(np.zeros((4, 2)), dims=("layer", "head"))
    >>> b = xr.DataArray(np.array([[1.0, 2], [3, 4], [5, 6], [7, 8]]), dims=("layer", "head"))
    >>> out = flip_differences(a, b, 0.5, np.random.default_rng(0))
    >>> sorted(np.abs((out - a - 0.5).values.ravel()).tolist())
    [0.5, 0.5, 1.5, 1.5, 2.5, 2.5, 3.5, 3.5]
    """
    d = (b - a).values
    resid = b.copy(data=d - np.nanmean(d))
    arranged, values, index = layer_slices(resid, heads=False)
    for ix in index:
        values[ix] = values[ix] * rng.choice((-1.0, 1.0))
    return a + arranged.copy(data=values + shift).transpose(*a.dims)


# ----------------------------------------------------------------------------- design helpers


def reference_number(spec: Any, keys: Sequence[str], what: str) -> float:
    """The first finite number among ``spec.reference[key]`` for ``keys``; else NotPlantable."""
    for key in keys:
        value = spec.reference.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    raise NotPlantable(f"the reference {dict(spec.reference)!r} gives no {what} "
                       f"({' or '.join(keys)}) to plant")


def null_permute(role: str) -> Callable[[Arrays, Any, np.random.Generator], Arrays]:
    """A null that permutes ``selection[role]`` over heads within layers."""

    def null(arrays: Arrays, spec: Any, rng: np.random.Generator) -> Arrays:
        return {**arrays, role: permute_heads(arrays[role], rng)}

    null.__doc__ = f"selection[{role!r}] permuted over heads within layers"
    return null


def bound_of(spec: Any) -> float:
    """The spec's positive equivalence bound (prediction, else params); else NotPlantable."""
    bound = spec.prediction.bound if spec.prediction.bound is not None else spec.resolved_params().get("bound")
    if not isinstance(bound, (int, float)) or not bound > 0:
        raise NotPlantable(f"no positive equivalence bound (got {bound!r})")
    return float(bound)


def zero_or_null_center(row: Mapping[str, float], spec: Any) -> float:
    """The row's permutation-null centre when it has one, else 0."""
    center = row.get(C.NULL_CENTER)
    return float(center) if center is not None and math.isfinite(center) else 0.0


def one(row: Mapping[str, float], spec: Any) -> float:
    """1 (the null value of a ratio)."""
    return 1.0


def prediction_value(row: Mapping[str, float], spec: Any) -> float:
    """The prediction's value (0 when it has none)."""
    value = spec.prediction.value
    return float(value) if value is not None else 0.0


def label_design(role: str) -> Design:
    """The design of a label comparison (group differences, AUC, interactions, classifier
    agreement, timing): ``selection[role]`` permuted over heads within layers; no planted
    effect is defined."""
    return Design(null=null_permute(role), plant=None, null_value=prediction_value,
                  what=f"null: {role} permuted over heads within layers; no planted effect "
                       f"(no way to plant one is defined for a label comparison)")
