"""Metric cubes: xarray assembly, validation and exact NetCDF4 input/output.

A cube is an :class:`xarray.Dataset` with the dimensions of :data:`lie_stats.schema.CUBE_DIMS`
(DESIGN.md, "Cube"). Every variable of :data:`lie_stats.schema.VARIABLES` present in a cube
has the dimensions ``(model, step) + VariableInfo.dims`` and carries ``units``,
``long_name`` and ``definition`` attributes. Models of different shapes share a cube, padded
with NaN; their shapes are coordinates along ``model``. Provenance is a JSON string per
checkpoint, in the global attribute :data:`lie_stats.schema.ATTR_PROVENANCE`.

One checkpoint's metrics form a *shard* (a cube with one model and one step); a cube is the
merge of its shards (:func:`merge_shards`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from . import schema
from ._io import atomic_write, cf_global_attrs
from .errors import CubeError, did_you_mean

__all__ = [
    "checkpoint_shard",
    "merge_shards",
    "validate_cube",
    "open_cube",
    "write_cube",
    "describe_cube",
    "provenance_of",
]

_STRING_DIMS = (schema.MODEL, schema.FAMILY, schema.PROJECTION, schema.MATRIX)
_INT_DIMS = (schema.STEP, schema.LAYER, schema.HEAD, schema.HEAD_J)
_ENCODING = {"zlib": True, "complevel": 4, "shuffle": True}


def _str_array(values: Sequence[str]) -> np.ndarray:
    """Strings as object arrays: the dtype netCDF4 gives back, so round trips are exact."""
    out = np.empty(len(values), dtype=object)
    out[:] = [str(v) for v in values]
    return out


def _model_coord_value(name: str, value: Any) -> Any:
    if name in ("architecture", "attention_extras"):
        if isinstance(value, (tuple, list)):
            value = ",".join(value)
        return str(value)
    if name == "rotary_fraction":
        return float(value)
    return int(value)


def checkpoint_shard(
    arrays: Mapping[str, np.ndarray],
    *,
    model: str,
    step: int,
    shape: Mapping[str, Any],
    families: Sequence[str],
    projections: Sequence[str],
    provenance: Mapping[str, Any],
) -> xr.Dataset:
    """Build the one-checkpoint cube (a shard) from the metric engine's arrays.

    Parameters
    ----------
    arrays
        Variable name -> array whose dimensions are ``VARIABLES[name].dims`` (no ``model``,
        ``step``), as returned by :func:`lie_stats.metrics.compute_checkpoint`.
    model, step
        Labels of the checkpoint.
    shape
        The model's shape: every name of :data:`lie_stats.schema.MODEL_COORDS`.
    families, projections
        Labels of the ``family`` and ``projection`` axes, in the engine's order.
    provenance
        JSON-serializable description of the checkpoint (source, revision, hashes, ...).

    Returns
    -------
    xarray.Dataset
        A valid cube with ``model`` and ``step`` of length one.

    Raises
    ------
    CubeError
        An unknown variable name or an array whose shape does not match its dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> shape = dict(n_layers=1, n_heads=2, n_kv_heads=2, d_head=4, d_model=8,
    ...              architecture="gpt_neox", rotary_fraction=0.25,
    ...              attention_extras="rotary", init_step=0)
    >>> ds = checkpoint_shard({"ov_norm": np.ones((1, 2))}, model="m", step=0, shape=shape,
    ...                       families=["Q"], projections=["none"], provenance={})
    >>> dict(ds["ov_norm"].sizes)
    {'model': 1, 'step': 1, 'layer': 1, 'head': 2}
    """
    n_layers, n_heads = int(shape["n_layers"]), int(shape["n_heads"])
    sizes = {
        schema.FAMILY: len(families),
        schema.PROJECTION: len(projections),
        schema.MATRIX: len(schema.MATRICES),
        schema.LAYER: n_layers,
        schema.HEAD: n_heads,
        schema.HEAD_J: n_heads,
    }
    data_vars = {}
    for name, arr in arrays.items():
        info = _info_or_error(name, where=f"shard of {model!r} step {step}")
        arr = np.asarray(arr)
        expected = tuple(sizes[d] for d in info.dims)
        if arr.shape != expected:
            raise CubeError(
                f"Variable {name!r} of {model!r} step {step}: expected shape {expected} for "
                f"dims {info.dims}, got {arr.shape}."
            )
        data_vars[name] = (
            (schema.MODEL, schema.STEP, *info.dims),
            arr[np.newaxis, np.newaxis],
            _var_attrs(info),
        )
    missing = [c for c in schema.MODEL_COORDS if c not in shape]
    if missing:
        raise CubeError(f"Shape of {model!r} lacks {missing}; expected {schema.MODEL_COORDS}.")
    coords: dict[str, Any] = {
        schema.MODEL: _str_array([model]),
        schema.STEP: np.array([step], dtype=np.int64),
        schema.FAMILY: _str_array(families),
        schema.PROJECTION: _str_array(projections),
        schema.MATRIX: _str_array(schema.MATRICES),
        schema.LAYER: np.arange(n_layers, dtype=np.int64),
        schema.HEAD: np.arange(n_heads, dtype=np.int64),
        schema.HEAD_J: np.arange(n_heads, dtype=np.int64),
    }
    for name in schema.MODEL_COORDS:
        value = _model_coord_value(name, shape[name])
        arr = _str_array([value]) if isinstance(value, str) else np.array([value])
        coords[name] = (schema.MODEL, arr)
    ds = xr.Dataset(data_vars, coords=coords)
    ds.attrs = cf_global_attrs([dict(provenance)])
    return ds


def _var_attrs(info: schema.VariableInfo) -> dict[str, str]:
    attrs = {"units": info.units, "long_name": info.long_name, "definition": info.definition}
    if info.name == "head_label":
        attrs["flag_values"] = np.array(list(schema.LABEL_CODES.values()), dtype=np.int64)
        attrs["flag_meanings"] = " ".join(schema.LABEL_CODES)
    return attrs


def _info_or_error(name: str, *, where: str) -> schema.VariableInfo:
    info = schema.VARIABLES.get(name)
    if info is None:
        raise CubeError(
            f"{where}: unknown variable {name!r}.{did_you_mean(name, schema.VARIABLES)} "
            f"Cube variables are those of METRICS.md (lie_stats.schema.VARIABLES)."
        )
    return info


def provenance_of(ds: xr.Dataset) -> list[dict]:
    """The per-checkpoint provenance records of a cube (parsed from JSON).

    >>> provenance_of(xr.Dataset(attrs={"provenance": '[{"step": 1}]'}))
    [{'step': 1}]
    """
    if not isinstance(ds, xr.Dataset):
        raise CubeError(f"expected an xarray.Dataset cube, got {type(ds).__name__}.")
    text = ds.attrs.get(schema.ATTR_PROVENANCE, "[]")
    try:
        out = json.loads(text)
    except (TypeError, ValueError) as e:
        raise CubeError(f"Global attribute {schema.ATTR_PROVENANCE!r} is not JSON: {e}") from e
    if not isinstance(out, list):
        raise CubeError(f"Global attribute {schema.ATTR_PROVENANCE!r} must be a JSON list.")
    return out


def _failed_of(ds: xr.Dataset) -> list[dict]:
    return json.loads(ds.attrs.get(schema.ATTR_FAILED, "[]"))


def merge_shards(shards: Sequence[xr.Dataset], *, failed: Sequence[Mapping] = ()) -> xr.Dataset:
    """Merge checkpoint shards (or cubes) into one cube.

    Checkpoints are ordered by model (first appearance) and step; models of different
    shapes are padded with NaN along ``layer``/``head``/``head_j``. The same (model, step)
    twice is an error. Provenance lists are concatenated in the merged order.

    Parameters
    ----------
    shards
        Valid cubes, typically of one checkpoint each.
    failed
        Checkpoints that could not be extracted, ``{"source", "revision", "error"}`` each;
        recorded in :data:`lie_stats.schema.ATTR_FAILED`.

    Examples
    --------
    >>> import numpy as np
    >>> shape = dict(n_layers=1, n_heads=2, n_kv_heads=2, d_head=4, d_model=8,
    ...              architecture="gpt_neox", rotary_fraction=0.25,
    ...              attention_extras="rotary", init_step=0)
    >>> a = checkpoint_shard({"ov_norm": np.ones((1, 2))}, model="m", step=0, shape=shape,
    ...                      families=["Q"], projections=["none"], provenance={"step": 0})
    >>> b = checkpoint_shard({"ov_norm": np.ones((1, 2))}, model="m", step=5, shape=shape,
    ...                      families=["Q"], projections=["none"], provenance={"step": 5})
    >>> merge_shards([b, a])["step"].values.tolist()
    [0, 5]
    """
    if not shards:
        raise CubeError("No checkpoint was extracted: nothing to merge into a cube.")
    seen: set[tuple[str, int]] = set()
    model_order: list[str] = []
    per_model: dict[str, list[xr.Dataset]] = {}
    prov: dict[tuple[str, int], dict] = {}
    all_failed = [dict(f) for f in failed]
    for i, ds in enumerate(shards):
        validate_cube(ds, where=f"shard {i} of {len(shards)} passed to merge_shards")
        all_failed += _failed_of(ds)
        records = provenance_of(ds)
        for mi, model in enumerate(ds[schema.MODEL].values.tolist()):
            for si, step in enumerate(ds[schema.STEP].values.tolist()):
                sub = ds.isel({schema.MODEL: [mi], schema.STEP: [si]})
                if not _has_data(sub):
                    continue
                key = (model, int(step))
                if key in seen:
                    raise CubeError(f"Checkpoint {model!r} step {step} appears twice in the shards.")
                seen.add(key)
                if model not in per_model:
                    model_order.append(model)
                    per_model[model] = []
                per_model[model].append(sub)
                match = [r for r in records if r.get("model") == model and r.get("step") == step]
                prov[key] = match[0] if match else (records[0] if len(records) == 1 else {})
    blocks = []
    for model in model_order:
        parts = sorted(per_model[model], key=lambda d: int(d[schema.STEP].values[0]))
        blocks.append(xr.concat(parts, dim=schema.STEP, data_vars="all", coords="minimal",
                                compat="override", join="outer"))
    merged = xr.concat(blocks, dim=schema.MODEL, data_vars="all", coords="minimal",
                       compat="override", join="outer", fill_value=np.nan)
    merged = merged.sortby(schema.STEP)
    merged = _restore_coord_dtypes(merged)
    for name in merged.data_vars:
        merged[name].attrs = _var_attrs(schema.VARIABLES[name])
    order = [(m, int(s)) for m in model_order for s in merged[schema.STEP].values if (m, int(s)) in prov]
    merged.attrs = cf_global_attrs([prov[k] for k in order], all_failed)
    return merged


def _has_data(ds: xr.Dataset) -> bool:
    return any(bool(np.isfinite(v.values).any()) for v in ds.data_vars.values()) or not ds.data_vars


def _restore_coord_dtypes(ds: xr.Dataset) -> xr.Dataset:
    """After outer joins: integer index coords back to int64, strings back to object."""
    new = {}
    for dim in _INT_DIMS:
        if dim in ds.coords:
            new[dim] = ds[dim].values.astype(np.int64)
    for dim in _STRING_DIMS:
        if dim in ds.coords:
            new[dim] = _str_array(ds[dim].values.tolist())
    for name in schema.MODEL_COORDS:
        if name in ds.coords:
            vals = ds[name].values
            if vals.dtype.kind in "OUS":
                new[name] = (schema.MODEL, _str_array(vals.tolist()))
            elif name != "rotary_fraction":
                new[name] = (schema.MODEL, vals.astype(np.int64))
    return ds.assign_coords(new)


def validate_cube(ds: xr.Dataset, *, where: str = "<cube>") -> xr.Dataset:
    """Check that ``ds`` follows the cube contract of DESIGN.md; return it unchanged.

    Checks: it is a Dataset; its dimensions are known; every variable is a METRICS.md
    variable with dimensions ``(model, step) + VariableInfo.dims``; the model coordinates
    exist; ``metrics_version`` is one this code knows; provenance is JSON.

    Raises
    ------
    CubeError
        Naming ``where`` (a file name or an argument) and what was expected.

    Examples
    --------
    >>> validate_cube(xr.Dataset({"comutator": (("model",), [1.0])}), where="x.nc")
    Traceback (most recent call last):
    ...
    lie_stats.errors.CubeError: x.nc: unknown variable 'comutator'. Did you mean 'commutator'? Cube variables are those of METRICS.md (lie_stats.schema.VARIABLES).
    """
    if not isinstance(ds, xr.Dataset):
        raise CubeError(f"{where}: expected an xarray.Dataset cube, got {type(ds).__name__}.")
    for name in ds.data_vars:
        info = _info_or_error(str(name), where=where)
        expected = (schema.MODEL, schema.STEP, *info.dims)
        if tuple(ds[name].dims) != expected:
            raise CubeError(
                f"{where}: variable {name!r} has dims {tuple(ds[name].dims)}; expected {expected} "
                f"(METRICS.md {info.definition.split()[-1]})."
            )
    for dim in ds.dims:
        if dim not in schema.CUBE_DIMS:
            raise CubeError(
                f"{where}: unknown dimension {dim!r}.{did_you_mean(str(dim), schema.CUBE_DIMS)} "
                f"Cube dimensions are {schema.CUBE_DIMS}."
            )
    for dim in (schema.MODEL, schema.STEP):
        if dim not in ds.dims:
            raise CubeError(f"{where}: missing dimension {dim!r}; a cube has dims {schema.CUBE_DIMS}.")
    for name in schema.MODEL_COORDS:
        if name not in ds.coords:
            raise CubeError(f"{where}: missing coordinate {name!r} along 'model'.")
    version = ds.attrs.get(schema.ATTR_METRICS_VERSION)
    if version is None:
        raise CubeError(f"{where}: missing global attribute {schema.ATTR_METRICS_VERSION!r}.")
    if int(version) > schema.METRICS_VERSION:
        raise CubeError(
            f"{where}: metrics_version {int(version)} is newer than this lie_stats knows "
            f"({schema.METRICS_VERSION}); upgrade lie_stats to read it."
        )
    try:
        provenance_of(ds)
    except CubeError as e:
        raise CubeError(f"{where}: {e}") from e
    return ds


def open_cube(path: str | os.PathLike) -> xr.Dataset:
    """Open a cube written by :func:`write_cube`, load it into memory and validate it.

    Raises
    ------
    CubeError
        The file is missing, is not NetCDF, or breaks the cube contract; the message names
        the file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> try:
    ...     open_cube(pathlib.Path(tempfile.mkdtemp()) / "absent.nc")
    ... except CubeError as e:
    ...     print(str(e).split(": ", 1)[1])
    no such cube file.

    A cube round-trips exactly through :func:`write_cube` (see
    :func:`lie_stats.extraction.extract` for one made from checkpoints).
    """
    path = Path(path)
    if not path.is_file():
        raise CubeError(f"{path}: no such cube file.")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            ds = ds.load()
    except (OSError, ValueError, RuntimeError) as e:
        raise CubeError(f"{path}: not a readable NetCDF4 cube ({e}).") from e
    for name in ds.variables:
        ds[name].encoding = {}
    ds = _restore_coord_dtypes(ds)
    return validate_cube(ds, where=str(path))


def write_cube(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write a cube to NetCDF4 atomically (temporary file, fsync, rename).

    A failure (disk full, interrupt) leaves any earlier file at ``path`` untouched.
    The round trip through :func:`open_cube` is exact: values, dtypes, coordinates and
    attributes.

    Raises
    ------
    CubeError
        ``ds`` breaks the cube contract, or the file cannot be written (disk full, file
        size limit): the message names ``path``.
    """
    path = Path(path)
    validate_cube(ds, where=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)  # outside: its failure is not a full disk
    encoding = {name: dict(_ENCODING) for name in ds.data_vars}
    try:
        atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4",
                                                    encoding=encoding), mkdir=False)
    except (OSError, RuntimeError) as e:  # disk full, quota, file size limit, ...
        # netCDF4 reports ENOSPC as a bare "NetCDF: HDF error"; say what and where.
        free = shutil.disk_usage(path.parent).free
        raise CubeError(
            f"{path}: could not write the cube ({type(e).__name__}: {e}); "
            f"{free} bytes free on its file system. Expected enough space for the file; "
            f"any earlier file at this path is left unchanged."
        ) from e
    return path


def describe_cube(ds: xr.Dataset, *, where: str = "<cube>") -> str:
    """A human summary of a cube for ``lie-stats info``: models, steps, variables, provenance.

    A cube that breaks the contract is still described (its last line says why it is not
    valid), as long as it is a Dataset with ``model`` and ``step`` dimensions and JSON
    provenance; otherwise :class:`~lie_stats.errors.CubeError` naming ``where``.
    """
    if not isinstance(ds, xr.Dataset):
        raise CubeError(f"{where}: expected an xarray.Dataset cube, got {type(ds).__name__}.")
    for dim in (schema.MODEL, schema.STEP):
        if dim not in ds.dims:
            raise CubeError(f"{where}: missing dimension {dim!r}; a cube has dims {schema.CUBE_DIMS}.")
    try:
        provenance_of(ds)
    except CubeError as e:
        raise CubeError(f"{where}: {e}") from e
    lines = [f"cube: {where}"]
    lines.append(
        f"  metrics_version {ds.attrs.get(schema.ATTR_METRICS_VERSION)}, lie_stats "
        f"{ds.attrs.get(schema.ATTR_LIB_VERSION)}, created {ds.attrs.get(schema.ATTR_CREATED)}"
    )
    steps = ds[schema.STEP].values
    lines.append(f"  models: {ds.sizes.get(schema.MODEL, 0)}; steps: {len(steps)}"
                 + (f" ({steps.min()} .. {steps.max()})" if len(steps) else ""))
    for i, model in enumerate(ds[schema.MODEL].values.tolist()):
        c = {n: ds[n].values[i] for n in schema.MODEL_COORDS if n in ds.coords}
        first = next(iter(ds.data_vars.values()), None)
        n_steps = len(steps)
        if first is not None:
            sel = first.isel({schema.MODEL: i})
            other = [d for d in sel.dims if d != schema.STEP]
            n_steps = int(np.isfinite(sel.values).any(axis=tuple(range(1, sel.ndim))).sum()) if other else int(np.isfinite(sel.values).sum())
        lines.append(
            f"  - {model}: {c.get('architecture')}, {c.get('n_layers')} layers x {c.get('n_heads')} heads "
            f"(kv {c.get('n_kv_heads')}), d_head {c.get('d_head')}, d_model {c.get('d_model')}, "
            f"rotary {c.get('rotary_fraction')}, extras [{c.get('attention_extras')}], {n_steps} checkpoints"
        )
    for dim in (schema.FAMILY, schema.PROJECTION):
        if dim in ds.coords:
            lines.append(f"  {dim}: {', '.join(map(str, ds[dim].values.tolist()))}")
    lines.append("  variables:")
    for name, var in ds.data_vars.items():
        finite = np.isfinite(var.values)
        frac = float(finite.mean()) if var.size else 0.0
        lines.append(f"    {name:24s} {str(tuple(var.dims)):60s} {var.attrs.get('definition', '')}  finite {frac:.0%}")
    failed = _failed_of(ds)
    lines.append(f"  provenance records: {len(provenance_of(ds))}; failed checkpoints: {len(failed)}")
    for f in failed:
        lines.append(f"    FAILED {f.get('source')} {f.get('revision') or ''}: {f.get('error')}")
    try:
        validate_cube(ds, where=where)
        lines.append("  valid: yes")
    except CubeError as e:
        lines.append(f"  valid: NO ({e})")
    return "\n".join(lines)
