"""Selection: one :class:`~lie_stats.spec.parts.Select` applied to a cube.

:func:`select` returns the variable at the chosen checkpoint(s), family, compression,
layers and models, with padding NaN. Data the cube does not hold raise :class:`Skip` (with
the reason): an analysis choice of the specification curve is then skipped, and the main
analysis fails with :class:`SelectionError` (the cube is present, so rebuilding the data
cannot help). A dataset whose cube is absent is the other kind of outcome, *skipped* with
the card's build command (:func:`lie_stats.spec.evaluate`). A model or step the declaration
names that the cube lacks is an error of the declaration (:class:`~lie_stats.errors.SpecError`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import schema
from ..errors import CubeError, SpecError, did_you_mean
from .parts import SELECT_DIMS, Select

__all__ = ["select", "Skip", "SelectionError", "check_cube", "CONTROLS_ATTR"]

#: Cube attribute naming the control models (e.g. quantized copies of another model, kept
#: for a noise floor): a selection that names no models leaves them out, because they are
#: not further samples of the population a cross-model claim is about.
CONTROLS_ATTR = "lie_stats_controls"


class Skip(Exception):
    """The data needed are not in this cube (the reason): an analysis choice is skipped."""


class SelectionError(SpecError):
    """A spec's main selection matches nothing in its cube, which is present."""


def check_cube(cube: Any, where: str) -> None:
    """The part of the cube contract a selection relies on: a Dataset with model and step."""
    import xarray as xr

    if not isinstance(cube, xr.Dataset):
        raise CubeError(f"{where}: expected an xarray.Dataset cube, got {type(cube).__name__}.")
    for dim in (schema.MODEL, schema.STEP):
        if dim not in cube.dims:
            raise CubeError(f"{where}: the cube has no {dim!r} dimension; a cube has dims "
                            f"{schema.CUBE_DIMS} (DESIGN.md, cube).")


def select(sel: Select, cube: Any, *, where: str = "selection") -> Any:
    """Apply one :class:`Select` to a cube.

    Returns
    -------
    xarray.DataArray
        Dimensions ``model`` plus the variable's remaining ones (``layer``, ``head``, ...);
        ``step`` is kept for ``step="all"``; the chosen step of each model is a coordinate.
        Layers not selected and padding are NaN; a pairwise variable (``head_j``) keeps each
        pair once (``head < head_j``), the rest NaN.

    Notes
    -----
    A selection without ``models`` takes every model of the cube except its controls (the
    models its attribute :data:`CONTROLS_ATTR` names); ``models=`` can name a control.

    Raises
    ------
    SpecError
        The selection names a model or step the cube does not have.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> da = xr.DataArray(np.arange(8.).reshape(1, 2, 2, 2), dims=("model", "step", "layer", "head"),
    ...                   coords={"model": ["m"], "step": [0, 10], "layer": [0, 1], "head": [0, 1]})
    >>> cube = xr.Dataset({"ov_norm": da}).assign_coords(n_layers=("model", [2]))
    >>> from lie_stats.spec import Select
    >>> select(Select("ov_norm", step="first", layers=(-1,)), cube).values.tolist()
    [[[nan, nan], [2.0, 3.0]]]
    """
    import xarray as xr

    check_cube(cube, where)
    if sel.metric not in cube.data_vars:
        raise Skip(f"the cube has no variable {sel.metric!r} (has: {', '.join(map(str, cube.data_vars))})")
    da = cube[sel.metric]
    for dim in SELECT_DIMS:
        value = getattr(sel, dim)
        if value is None or dim not in da.dims:
            continue
        have = [str(v) for v in da[dim].values.tolist()]
        if value not in have:
            raise Skip(f"the cube has no {dim} {value!r} for {sel.metric!r} (has: {', '.join(have)})")
        da = da.sel({dim: value}, drop=True)
    if sel.models is not None:
        have = [str(m) for m in da[schema.MODEL].values.tolist()]
        for m in sel.models:
            if m not in have:
                raise SpecError(f"{where}.models: the cube has no model {m!r}.{did_you_mean(m, have)} "
                                f"Models: {', '.join(have)}.")
        da = da.sel({schema.MODEL: list(sel.models)})
    else:
        controls = set(cube.attrs.get(CONTROLS_ATTR, ()))
        keep = [m for m in da[schema.MODEL].values.tolist() if str(m) not in controls]
        if controls and len(keep) < da.sizes[schema.MODEL]:
            if not keep:
                raise Skip(f"every model of the cube is a control ({', '.join(sorted(controls))}); "
                           f"name them in models= to select them")
            da = da.sel({schema.MODEL: keep})
    other = [d for d in da.dims if d not in (schema.MODEL, schema.STEP)]
    has_data = np.isfinite(da.values).any(axis=tuple(da.get_axis_num(d) for d in other)) if other \
        else np.isfinite(da.values)  # [model, step]
    steps = da[schema.STEP].values
    if isinstance(sel.step, str) and sel.step in ("first", "last"):
        parts = []
        for i in range(da.sizes[schema.MODEL]):
            idx = np.flatnonzero(has_data[i])
            if idx.size == 0:
                continue
            j = idx[0] if sel.step == "first" else idx[-1]
            parts.append(da.isel({schema.MODEL: [i], schema.STEP: j}))
        if not parts:
            raise Skip(f"no checkpoint of the cube has data for {sel.metric!r}")
        da = (xr.concat(parts, dim=schema.MODEL, coords="different", compat="equals", join="outer")
              if len(parts) > 1 else parts[0])
    elif sel.step != "all":
        if int(sel.step) not in steps.tolist():
            near = steps[np.argsort(np.abs(steps - int(sel.step)))[:3]].tolist()
            raise SpecError(f"{where}.step: the cube has no step {sel.step}; nearest steps: {near}.")
        da = da.sel({schema.STEP: int(sel.step)})
    if sel.layers is not None and schema.LAYER in da.dims:
        layer_values = da[schema.LAYER].values
        if "n_layers" in da.coords:
            n_layers = np.asarray(da["n_layers"].values).reshape(-1)
        else:
            n_layers = np.full(da.sizes[schema.MODEL], len(layer_values))
        keep = np.zeros((da.sizes[schema.MODEL], len(layer_values)), dtype=bool)
        for i, n in enumerate(n_layers):
            wanted = {int(x) if x >= 0 else int(n) + int(x) for x in sel.layers}
            keep[i] = np.isin(layer_values, list(wanted))
        mask = xr.DataArray(keep, dims=(schema.MODEL, schema.LAYER),
                            coords={schema.MODEL: da[schema.MODEL].values, schema.LAYER: layer_values})
        da = da.where(mask)
    if schema.HEAD_J in da.dims and schema.HEAD in da.dims:
        # a pairwise variable is symmetric with a trivial diagonal: keep each pair once (i < j)
        da = da.where(da[schema.HEAD] < da[schema.HEAD_J])
    if sel.reduce is not None:
        over = [d for d in da.dims if d not in (schema.MODEL, schema.STEP)]
        da = getattr(da, sel.reduce)(dim=over, skipna=True)
    if not np.isfinite(da.values).any():
        raise Skip(f"the selection of {sel.metric!r} holds no finite value")
    return da
