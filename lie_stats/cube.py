"""Metric cubes: xarray assembly, validation and exact NetCDF4 input/output.

A cube is an :class:`xarray.Dataset` with the dimensions of :data:`lie_stats.schema.CUBE_DIMS`
(DESIGN.md, "Cube"). Every variable of :data:`lie_stats.schema.VARIABLES` present in a cube
has the dimensions ``(model, step) + VariableInfo.dims`` and carries ``units``,
``long_name`` and ``definition`` attributes. Models of different shapes share a cube, padded
with NaN; their shapes are coordinates along ``model``. Provenance is a JSON string per
checkpoint, in the global attribute :data:`lie_stats.schema.ATTR_PROVENANCE`.

One checkpoint's metrics form a *shard* (a cube with one model and one step); a cube is the
merge of its shards (:func:`merge_shards`). :func:`assemble_shard` is the one assembly of a
shard, for the metric cubes of extraction (:func:`checkpoint_shard`) and the parameter-delta
cubes (:func:`lie_stats.extraction.delta.delta_cube`) alike.
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
from ._io import atomic_write, cf_global_attrs, path_problem
from ._text import terminal_line
from .cube_attrs import check_global_attrs, describe_provenance, json_list_attr
from .errors import CubeError, did_you_mean

__all__ = [
    "assemble_shard",
    "checkpoint_shard",
    "merge_shards",
    "validate_cube",
    "open_cube",
    "write_cube",
    "describe_cube",
    "provenance_of",
    "read_global_attrs",
    "is_cube_file",
    "write_failure_advice",
    "MAX_CUBE_BYTES",
]

#: Declared size (bytes, all variables together, as the file's header states them) above which
#: :func:`open_cube` refuses a file before reading any of its data. The largest committed cube
#: holds about 30 MiB; 4 GiB is room for a panel of hundreds of checkpoints of large models.
MAX_CUBE_BYTES: int = 4 * 2**30

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
        ``step``), as returned by :func:`lie_stats.extraction.metrics.compute_checkpoint`.
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
    axes = {
        schema.FAMILY: families,
        schema.PROJECTION: projections,
        schema.MATRIX: schema.MATRICES,
        schema.LAYER: range(n_layers),
        schema.HEAD: range(n_heads),
        schema.HEAD_J: range(n_heads),
    }
    return assemble_shard(arrays, model=model, step=step, shape=shape, axes=axes, provenance=provenance)


def _axis_labels(dim: str, labels: Sequence[Any]) -> np.ndarray:
    """An axis' coordinate in the dtype NetCDF gives back (so that round trips are exact)."""
    if dim in _STRING_DIMS:
        return _str_array(labels)
    if dim in _INT_DIMS:
        return np.array(list(labels), dtype=np.int64)
    return np.array([str(v) for v in labels], dtype=str)  # ``category``: fixed-width strings


def assemble_shard(
    arrays: Mapping[str, np.ndarray],
    *,
    model: str,
    step: int,
    shape: Mapping[str, Any],
    axes: Mapping[str, Sequence[Any]],
    provenance: Mapping[str, Any],
) -> xr.Dataset:
    """The one assembly of a one-checkpoint cube: coordinates, variable attributes, provenance.

    Every cube the library builds goes through here and then :func:`merge_shards`: the
    metric shards of extraction (:func:`checkpoint_shard`, axes ``family``, ``projection``,
    ``matrix``, ``layer``, ``head``, ``head_j``) and the parameter-delta trajectory
    (:func:`lie_stats.extraction.delta.delta_cube`, axes ``category`` and ``layer``).

    Parameters
    ----------
    arrays
        Variable name (:data:`lie_stats.schema.VARIABLES`) -> array whose dimensions are the
        variable's ``dims`` (no ``model``, ``step``); each of them must be one of ``axes``.
    model, step
        Labels of the checkpoint.
    shape
        The model's shape: every name of :data:`lie_stats.schema.MODEL_COORDS`.
    axes
        Dimension -> its labels, in order: the shard's coordinates besides ``model``, ``step``
        and the model's shape.
    provenance
        JSON-serializable description of the checkpoint (source, revision, hashes, ...).

    Raises
    ------
    CubeError
        An unknown variable, a dimension that is not among ``axes``, an array whose shape
        does not match its dimensions, or a shape that lacks a model coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> shape = dict(n_layers=2, n_heads=2, n_kv_heads=2, d_head=4, d_model=8,
    ...              architecture="gpt2", rotary_fraction=0.0, attention_extras="", init_step=0)
    >>> ds = assemble_shard({"param_delta": np.zeros(1)}, model="m", step=3, shape=shape,
    ...                     axes={"category": ["embedding"], "layer": range(2)}, provenance={})
    >>> dict(ds["param_delta"].sizes), ds["category"].values.tolist()
    ({'model': 1, 'step': 1, 'category': 1}, ['embedding'])
    """
    labels = {dim: list(values) for dim, values in axes.items()}
    data_vars = {}
    for name, arr in arrays.items():
        info = _info_or_error(name, where=f"shard of {model!r} step {step}")
        arr = np.asarray(arr)
        absent = [d for d in info.dims if d not in labels]
        if absent:
            raise CubeError(
                f"Variable {name!r} of {model!r} step {step} has dims {info.dims}; the shard has no "
                f"axis {absent} (its axes: {list(labels)})."
            )
        expected = tuple(len(labels[d]) for d in info.dims)
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
        **{dim: _axis_labels(dim, values) for dim, values in labels.items()},
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
    if info.name in schema.LABEL_VARIABLES:
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
    return json_list_attr(ds.attrs, schema.ATTR_PROVENANCE, "one object per checkpoint")


def read_global_attrs(path: str | os.PathLike) -> dict[str, Any] | None:
    """The global attributes of a NetCDF file, read from its header (no variable is read);
    None when ``path`` is not a readable NetCDF file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> _ = p.write_text("not NetCDF")
    >>> read_global_attrs(p) is None
    True
    """
    import netCDF4

    try:
        with netCDF4.Dataset(os.fspath(path), "r") as nc:
            return {name: nc.getncattr(name) for name in nc.ncattrs()}
    except (OSError, RuntimeError, ValueError):
        return None


def is_cube_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a NetCDF file that lie_stats wrote as a cube: its header holds the
    ``metrics_version``, ``lie_stats_version`` and ``provenance`` global attributes. Only the
    header is read.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.json").write_text("{}")
    >>> is_cube_file(d / "config.json"), is_cube_file(d / "absent.nc")
    (False, False)
    """
    if not Path(path).is_file():
        return False
    attrs = read_global_attrs(path)
    return attrs is not None and all(
        k in attrs for k in (schema.ATTR_METRICS_VERSION, schema.ATTR_LIB_VERSION, schema.ATTR_PROVENANCE))


def _failed_of(ds: xr.Dataset) -> list[dict]:
    return json_list_attr(ds.attrs, schema.ATTR_FAILED, "one object per failed checkpoint")


def merge_shards(shards: Sequence[xr.Dataset], *, failed: Sequence[Mapping] = (),
                 created: str | None = None) -> xr.Dataset:
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
    created
        The merged cube's ``created`` attribute (default: now, the time a cube is built;
        opening cubes that were built before passes theirs, :func:`built_at`).

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
        present = _data_mask(ds)
        for mi, model in enumerate(ds[schema.MODEL].values.tolist()):
            kept = []  # the steps of this model that hold data: one piece per (shard, model)
            for si, step in enumerate(ds[schema.STEP].values.tolist()):
                if not present[mi, si]:
                    continue
                key = (model, int(step))
                if key in seen:
                    raise CubeError(f"Checkpoint {model!r} step {step} appears twice in the shards.")
                seen.add(key)
                kept.append(si)
                match = [r for r in records if r.get("model") == model and r.get("step") == step]
                prov[key] = match[0] if match else (records[0] if len(records) == 1 else {})
            if not kept:
                continue
            if model not in per_model:
                model_order.append(model)
                per_model[model] = []
            per_model[model].append(ds.isel({schema.MODEL: [mi], schema.STEP: kept}))
    blocks = []
    for model in model_order:
        parts = sorted(per_model[model], key=lambda d: int(d[schema.STEP].values[0]))
        block = xr.concat(parts, dim=schema.STEP, data_vars="all", coords="minimal",
                          compat="override", join="outer") if len(parts) > 1 else parts[0]
        blocks.append(block.sortby(schema.STEP))
    merged = xr.concat(blocks, dim=schema.MODEL, data_vars="all", coords="minimal",
                       compat="override", join="outer", fill_value=np.nan)
    merged = merged.sortby(schema.STEP)
    merged = _restore_coord_dtypes(merged)
    for name in merged.data_vars:
        merged[name].attrs = _var_attrs(schema.VARIABLES[name])
    order = [(m, int(s)) for m in model_order for s in merged[schema.STEP].values if (m, int(s)) in prov]
    merged.attrs = cf_global_attrs([prov[k] for k in order], all_failed, created=created)
    return merged


def built_at(cubes: Sequence[xr.Dataset]) -> str | None:
    """The latest ``created`` attribute of ``cubes`` (when the last of them was built), or None
    when none records one: what a merge of cubes read from files keeps as its ``created``.

    >>> built_at([xr.Dataset(attrs={"created": "2026-01-02T00:00:00+00:00"}),
    ...           xr.Dataset(attrs={"created": "2026-03-01T00:00:00+00:00"}), xr.Dataset()])
    '2026-03-01T00:00:00+00:00'
    """
    from datetime import datetime

    times = []
    for ds in cubes:
        text = ds.attrs.get(schema.ATTR_CREATED)
        try:
            times.append((datetime.fromisoformat(str(text)), str(text)))
        except (TypeError, ValueError):
            continue
    try:
        return max(times)[1] if times else None
    except TypeError:  # naive and aware times mixed: the last in text order
        return max(t for _, t in times)


def _finite_along(ds: xr.Dataset, dims: Sequence[str], *, kinds: str = "") -> dict[str, list[np.ndarray]]:
    """For each ``dim`` of ``dims``: one bool ``[model, dim]`` array per variable having that
    dim (of dtype kind in ``kinds``, any when empty), true where it holds a finite value.
    Computed in one pass (one ``compute`` for a Dask cube, chunk by chunk)."""
    reductions, names = {}, []
    for dim in dims:
        for name, var in ds.data_vars.items():
            if dim not in var.dims or (kinds and var.dtype.kind not in kinds):
                continue
            finite = np.isfinite(var)
            rest = [d for d in var.dims if d not in (schema.MODEL, dim)]
            key = f"r{len(names)}"
            reductions[key] = (finite.any(dim=rest) if rest else finite).transpose(schema.MODEL, dim)
            names.append((dim, key))
    computed = xr.Dataset(reductions).compute() if reductions else {}
    out: dict[str, list[np.ndarray]] = {dim: [] for dim in dims}
    for dim, key in names:
        out[dim].append(np.asarray(computed[key].values))
    return out


def _data_mask(ds: xr.Dataset) -> np.ndarray:
    """``[model, step]``: which checkpoints hold any finite value (all of them when the cube
    has no variables)."""
    mask = np.zeros((ds.sizes[schema.MODEL], ds.sizes[schema.STEP]), dtype=bool)
    if not ds.data_vars:
        return ~mask
    for has in _finite_along(ds, [schema.STEP])[schema.STEP]:
        mask |= has
    return mask


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


def _check_index_coords(ds: xr.Dataset, *, where: str) -> None:
    """Index coordinates: no NaN, integers where integers belong, no duplicate labels, and
    ``layer``/``head``/``head_j`` numbered ``0..n-1`` (selections count from both ends)."""
    for dim in _INT_DIMS + _STRING_DIMS:
        if dim not in ds.coords:
            continue
        values = ds[dim].values
        if dim in _INT_DIMS:
            if values.dtype.kind == "f":
                bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))
                if bad.size:
                    raise CubeError(
                        f"{where}: coordinate {dim!r} holds {values[bad[0]].item()!r} at position "
                        f"{int(bad[0])}; expected integer labels."
                    )
            elif values.dtype.kind not in "iu":
                raise CubeError(
                    f"{where}: coordinate {dim!r} has dtype {values.dtype}; expected integer labels."
                )
        labels = values.tolist()
        if len(set(labels)) != len(labels):
            dups = sorted({v for v in labels if labels.count(v) > 1}, key=str)
            raise CubeError(
                f"{where}: coordinate {dim!r} holds {', '.join(repr(d) for d in dups)} more than "
                f"once; expected each {dim} once (a cube has one entry per {dim})."
            )
        if dim in (schema.LAYER, schema.HEAD, schema.HEAD_J) and labels != list(range(len(labels))):
            raise CubeError(
                f"{where}: coordinate {dim!r} is {labels[:8]}{' ...' if len(labels) > 8 else ''}; "
                f"expected 0..{len(labels) - 1}."
            )


def _check_model_shapes(ds: xr.Dataset, *, where: str) -> None:
    """``n_layers``/``n_heads`` of each model against where its variables hold data: a model
    of ``n`` layers has data in layers ``0..n-1`` and only NaN padding beyond."""
    if schema.MODEL not in ds.dims:
        return
    models = [str(m) for m in ds[schema.MODEL].values.tolist()]
    pairs = [(c, d) for c, d in (("n_layers", schema.LAYER), ("n_heads", schema.HEAD))
             if c in ds.coords and d in ds.dims]
    found = _finite_along(ds, [d for _, d in pairs], kinds="f")
    for coord, dim in pairs:
        size = ds.sizes[dim]
        extent = np.zeros(len(models), dtype=np.int64)  # last index with data, + 1
        for has in found[dim]:
            last = np.where(has.any(axis=1), size - np.argmax(has[:, ::-1], axis=1), 0)
            extent = np.maximum(extent, last)
        for i, model in enumerate(models):
            claim = ds[coord].values[i].item()
            if not (isinstance(claim, (int, float)) and not isinstance(claim, bool)
                    and np.isfinite(claim) and claim == int(claim) and 1 <= int(claim) <= size):
                raise CubeError(
                    f"{where}: model {model!r} claims {coord}={claim!r}; expected an integer "
                    f"from 1 to {size} (the size of dimension {dim!r})."
                )
            if extent[i] and int(extent[i]) != int(claim):
                raise CubeError(
                    f"{where}: model {model!r} claims {coord}={int(claim)}, but its variables "
                    f"hold data in {dim}s 0..{int(extent[i]) - 1} ({int(extent[i])}); expected "
                    f"the coordinate to match the data."
                )


def validate_cube(ds: xr.Dataset, *, where: str = "<cube>") -> xr.Dataset:
    """Check that ``ds`` follows the cube contract of DESIGN.md; return it unchanged.

    Checks: it is a Dataset; its dimensions are known; every variable is a METRICS.md
    variable with dimensions ``(model, step) + VariableInfo.dims``; the model coordinates
    exist; ``metrics_version`` is one this code knows; provenance is JSON; index coordinates
    hold no NaN and no label twice (``layer``, ``head``, ``head_j`` are ``0..n-1``); each
    model's ``n_layers`` and ``n_heads`` match the layers and heads its variables hold data in.

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
    check_global_attrs(ds.attrs, where=where)
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
    _check_index_coords(ds, where=where)
    _check_model_shapes(ds, where=where)
    return ds


def open_cube(path: str | os.PathLike, *, max_bytes: int = MAX_CUBE_BYTES,
              chunks: Any = None) -> xr.Dataset:
    """Open a cube written by :func:`write_cube`, load it into memory and validate it.

    The header is checked first: a file declaring more than ``max_bytes`` of variables
    (:data:`MAX_CUBE_BYTES`) is refused before anything is allocated.

    With ``chunks`` (as ``xarray.open_dataset`` takes it: ``{}`` or ``"auto"`` for the file's
    own chunks, ``{"step": 1}``, ...) the cube is opened lazily: its variables are Dask
    arrays read from the file when computed, and the file stays open while the dataset is in
    use (``ds.close()`` closes it). The checks of :func:`validate_cube` run chunk by chunk.
    The ``created`` attribute is the file's: when the cube was built.

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
    :func:`lie_stats.extraction.pipeline.extract` for one made from checkpoints).
    """
    path = Path(path)
    problem = path_problem(path)
    if problem is not None:  # a folder, a FIFO (never opened), a path too long
        raise CubeError(f"{path}: {problem}; expected a cube file (NetCDF4).")
    if not path.is_file():
        raise CubeError(f"{path}: no such cube file.")
    try:
        if chunks is None:
            with xr.open_dataset(path, engine="netcdf4") as lazy:  # the header only, no data yet
                _check_declared_size(lazy, where=str(path), max_bytes=max_bytes)
                ds = lazy.load()
        else:
            ds = xr.open_dataset(path, engine="netcdf4", chunks=chunks)
            try:
                _check_declared_size(ds, where=str(path), max_bytes=max_bytes)
            except CubeError:
                ds.close()
                raise
    except (OSError, ValueError, RuntimeError) as e:
        raise CubeError(f"{path}: not a readable NetCDF4 cube ({e}).") from e
    try:
        for name in ds.variables:
            ds[name].encoding = {}
        _check_index_coords(ds, where=str(path))  # before the casts to int64 hide a NaN
        ds = _restore_coord_dtypes(ds)
        return validate_cube(ds, where=str(path))
    except CubeError:
        ds.close()  # a lazy cube holds the file open
        raise


def _nbytes(var: Any) -> int:
    dtype = np.dtype(var.dtype)
    itemsize = 8 if dtype.kind == "O" else dtype.itemsize  # strings: a pointer each, at least
    return int(np.prod(var.shape, dtype=np.float64)) * itemsize


def _check_declared_size(ds: xr.Dataset, *, where: str, max_bytes: int) -> None:
    """Refuse a file whose header declares more than ``max_bytes`` of variables (before any
    allocation): a few kB of NetCDF can declare a variable of many GiB."""
    sizes = {str(name): _nbytes(var) for name, var in ds.variables.items()}
    total = sum(sizes.values())
    if total > max_bytes:
        name = max(sizes, key=sizes.get)
        var = ds.variables[name]
        raise CubeError(
            f"{where}: the file declares {total / 2**30:.1f} GiB of variables (the largest, "
            f"{name!r}, has shape {tuple(var.shape)} of {var.dtype}: {sizes[name] / 2**30:.1f} GiB), "
            f"over the bound of {max_bytes / 2**30:.1f} GiB for a cube; nothing was read. Expected "
            f"a lie_stats cube (open_cube(path, max_bytes=...) raises the bound for a cube that "
            f"really is that large)."
        )


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
        raise CubeError(f"{path}: could not write the cube ({type(e).__name__}: {e}); "
                        f"{write_failure_advice(path, e)}") from e
    return path


def write_failure_advice(path: str | os.PathLike, error: BaseException) -> str:
    """What a failed write of ``path`` means and what to do, from the error's ``errno``.

    A read-only file system, a missing permission and a name too long for the file system
    are told apart from a full disk (netCDF4 reports ENOSPC as a bare "NetCDF: HDF error",
    so an error without an errno is taken as a full disk when the disk is nearly full).

    Examples
    --------
    >>> import errno
    >>> write_failure_advice("/nowhere/c.nc", OSError(errno.EROFS, "Read-only file system"))
    'the file system holding /nowhere is read-only: write the cube elsewhere (-o).'
    """
    import errno as _errno

    path = Path(path)
    code = getattr(error, "errno", None)
    try:
        read_only = bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if code == _errno.EROFS or read_only:
        return f"the file system holding {path.parent} is read-only: write the cube elsewhere (-o)."
    # netCDF4 reports some full-disk failures as EACCES: a permission problem only if it is one
    if code in (_errno.EACCES, _errno.EPERM) and not os.access(path.parent, os.W_OK):
        return f"no permission to write in {path.parent}: write the cube elsewhere (-o), or fix the folder's permissions."
    if code == _errno.ENAMETOOLONG:
        return (f"the file name {path.name[:40]!r}... ({len(os.fsencode(path.name))} bytes) is too long "
                f"for the file system (with the temporary and shard-store names lie_stats adds): "
                f"choose a shorter -o.")
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    where = f"{free} bytes free on its file system" if free is not None else "its folder is unreadable"
    return (f"{where}. Expected enough space for the file; any earlier file at this path is "
            f"left unchanged: free space and rerun (with --resume, the finished shards are kept).")


def describe_cube(ds: xr.Dataset, *, where: str = "<cube>") -> str:
    """A human summary of a cube for ``lie-stats info``: models, steps, variables, provenance.

    Strings from the file are shown with non-printable characters escaped
    (:func:`lie_stats._text.terminal_line`). A cube that breaks the contract is still described (its last
    line says why it is not valid), as long as it is a Dataset with ``model`` and ``step`` dimensions and JSON
    provenance; otherwise :class:`~lie_stats.errors.CubeError` naming ``where``.
    """
    if not isinstance(ds, xr.Dataset):
        raise CubeError(f"{where}: expected an xarray.Dataset cube, got {type(ds).__name__}.")
    for dim in (schema.MODEL, schema.STEP):
        if dim not in ds.dims:
            raise CubeError(f"{where}: missing dimension {dim!r}; a cube has dims {schema.CUBE_DIMS}.")
    check_global_attrs(ds.attrs, where=where)
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
    lines.extend(describe_provenance(provenance_of(ds)))
    lines.append(f"  failed checkpoints: {len(failed)}")
    for f in failed:
        lines.append(f"    FAILED {f.get('source')} {f.get('revision') or ''}: {f.get('error')}")
    try:
        validate_cube(ds, where=where)
        lines.append("  valid: yes")
    except CubeError as e:
        lines.append(f"  valid: NO ({e})")
    # strings from the file (model names, sources, errors) cannot restyle the terminal or
    # forge a line: every non-printable character is shown escaped
    return "\n".join(terminal_line(line) for line in lines)
