"""Exports for collaborators: each hypothesis's selected data and result as a small NetCDF.

``lie-stats export`` (DESIGN.md: "the cubes are exported as self-describing NetCDF for
collaborators") evaluates hypothesis modules exactly as ``lie-stats run`` does (the same
collection, :mod:`lie_stats.collect`; the same evaluation, :func:`lie_stats.spec.evaluate`;
the same gates and pins, :mod:`lie_stats.gates`; so the same specs, datasets, outcomes and
multiplicity family), without a pytest session, and writes, for each result with data, one
NetCDF4 file ``<id>__<dataset>.nc`` readable with plain ``netCDF4`` or ``xarray`` (no
lie_stats types, no pickles):

Variables
    One per role of the spec's selection (``x``, ``y`` / ``first``, ``last`` / ``values``
    ...), named by the role, holding exactly the values the test received
    (:func:`lie_stats.spec.select`: NaN where a layer was not selected or a model is
    padded), with their dimensions and coordinates (``model``, ``step``, ``layer``,
    ``head``, ``head_j``) and the model coordinates (``n_layers``, ``d_head``, ...).
    Attributes: ``units``, ``long_name``, ``definition`` (the METRICS.md section), ``metric``
    (the cube variable) and ``selection`` (the role's declaration, JSON). The checkpoint a
    role was taken at (``step="first"``/``"last"``/an integer) is the coordinate
    ``<role>_step``, since roles of one file may come from different checkpoints. When two
    roles label one dimension differently (different models), the later role's dimension is
    renamed ``<role>_<dim>``.
Global attributes
    ``Conventions``, ``title``, ``history``, ``created``, ``lie_stats_version``,
    ``metrics_version`` (of the cube), ``provenance`` (JSON: the cube's per-checkpoint
    records of the selected models and checkpoints), ``dataset_cubes`` (JSON: the cube
    files, relative to the datasets folder's parent, and their sha256, when the dataset
    folder is known), ``roles``, and every field of the result's row of
    ``results.json`` (:func:`lie_stats.report.results_records`) under its own name:
    strings as strings; the numeric columns (``statistic``, ``p_value``, ``effect``,
    ``ci_low``, ``ci_high``, ``n``, ``p_holm``, ``p_bh``, ``spec_curve_share``,
    ``spec_curve_supported``) as float64, NaN where results.json has ``null``; every other
    value (``reference``, ``selection``, ``params``, ``prediction``, ``extra``,
    ``spec_curve``, booleans, nulls) as a JSON string. The attribute ``json_attributes``
    lists the names of the JSON-encoded attributes.

Skipped results get no file: there is no selected data to share, and a file holding only a
verdict would look like data. They are listed in the index with their reason and the
command that builds the missing data.

Index
    ``index.json``: ``lie_stats_version``, ``created`` and ``exports``, one entry per
    result (sorted by id and dataset) with ``id``, ``dataset``, ``verdict``, ``gate``,
    ``spec_hash``, ``file`` (name in the folder, ``null`` when skipped), ``bytes``,
    ``sha256``, ``reason`` and ``build``.

An ``index.json`` already in the folder is replaced only when lie_stats wrote it (recognised
by its content), and only after its entries were checked to be plain file names of the
folder (an entry ``..`` or ``a/b`` is refused before anything is written or moved); a file
of an exported name that no earlier index listed is never replaced.

Nothing is half-written: every file is first written into a staging folder inside the
output folder; only when all are written are they moved into place (a rename each) and the
index replaced; on any failure the staging folder is removed and the earlier export is left
as it was. A second export into the same folder merges with the first: the earlier index's
entries of other results stay, with their files (an export never deletes a file of a result it
did not export); an entry of the same result (id and dataset) is replaced, and its earlier
file removed when the result is now skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from . import schema
from . import columns as C
from ._io import file_sha256, inside, write_text_atomic
from ._version import __version__
from .errors import LieStatsError, SpecError, did_you_mean

__all__ = [
    "INDEX_FILE",
    "NUMERIC_ATTRS",
    "export_name",
    "result_dataset",
    "export_results",
    "export_hypotheses",
    "ExportRun",
]

#: Name of the index written beside the exported files.
INDEX_FILE = "index.json"
#: Result fields stored as float64 global attributes (NaN where results.json has null).
NUMERIC_ATTRS = (*C.STAT_COLUMNS, C.P_HOLM, C.P_BH, "spec_curve_share", "spec_curve_supported")
#: Global attribute naming the JSON-encoded attributes of an exported file.
JSON_ATTRS = "json_attributes"
_ENCODING = {"zlib": True, "complevel": 4, "shuffle": True}
# fields of results.json that describe the run's files, not the result (paths differ by machine)
_NOT_ATTRS = ("figure",)


def export_name(result_id: str, dataset: str) -> str:
    """File name of one exported result: ``<id>__<dataset>.nc`` (unsafe characters as ``_``).

    Examples
    --------
    >>> export_name("X1-killing_cv", "pico_pythia_ft")
    'X1-killing_cv__pico_pythia_ft.nc'
    """
    from .report import figure_name

    return figure_name(result_id, dataset)[: -len(".png")] + ".nc"


# ----------------------------------------------------------------------------- one file


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _row_attrs(row: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A results.json row as NetCDF attributes (see the module docstring for the encoding)."""
    attrs: dict[str, Any] = {}
    json_names = []
    for key, value in row.items():
        if key in _NOT_ATTRS:
            continue
        if key in NUMERIC_ATTRS:
            attrs[key] = np.float64(np.nan if value is None else float(value))
        elif isinstance(value, str):
            attrs[key] = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[key] = np.float64(value) if isinstance(value, float) else np.int64(value)
        else:  # dicts, lists, booleans, None
            attrs[key] = _json(value)
            json_names.append(key)
    return attrs, json_names


def _role_array(role: str, da: Any, sel: Mapping[str, Any]) -> Any:
    """One role's selected array, its step coordinate renamed and its attributes completed."""
    metric = str(sel.get("metric", da.name))
    da = da.copy(deep=False)
    if schema.STEP in da.coords and schema.STEP not in da.dims:
        da = da.rename({schema.STEP: f"{role}_{schema.STEP}"})
    info = schema.VARIABLES.get(metric)
    attrs = dict(da.attrs)
    if info is not None:
        attrs.setdefault("units", info.units)
        attrs.setdefault("long_name", info.long_name)
        attrs.setdefault("definition", info.definition)
    attrs["metric"] = metric
    attrs["selection"] = _json(dict(sel))
    da.attrs = attrs
    da.encoding = {}
    for name in da.coords:
        da[name].encoding = {}
    return da.rename(role)


def _merge_roles(arrays: Mapping[str, Any], selection: Mapping[str, Any], where: str) -> Any:
    import xarray as xr

    out = xr.Dataset()
    for role in sorted(arrays, key=lambda r: list(selection).index(r) if r in selection else len(selection)):
        da = _role_array(role, arrays[role], selection.get(role, {}))
        if role in out.variables or role in da.coords:
            raise LieStatsError(f"{where}: the role {role!r} has the name of a coordinate; "
                                f"expected role names distinct from {sorted(map(str, da.coords))}.")
        renames = {}
        for dim in da.dims:
            if dim in out.dims and (dim not in out.indexes or dim not in da.indexes
                                    or not out.indexes[dim].equals(da.indexes[dim])):
                renames[dim] = f"{role}_{dim}"
        if renames:
            # the dimension and every coordinate along it (model coordinates) get the prefix
            coord_renames = {c: f"{role}_{c}" for c in da.coords if c not in renames
                             and not str(c).startswith(f"{role}_")
                             and any(d in renames for d in da[c].dims)}
            da = da.rename({**renames, **coord_renames})
        try:
            out = xr.merge([out, da.to_dataset()], join="exact", compat="identical",
                           combine_attrs="drop_conflicts")
        except (ValueError, xr.MergeError) as e:
            raise LieStatsError(f"{where}: cannot place the role {role!r} beside the others "
                                f"({e}).") from e
    return out


def result_dataset(result: Any, *, record: Mapping[str, Any] | None = None, cube: Any = None,
                   dataset_cubes: Sequence[Mapping[str, Any]] | None = None) -> Any:
    """The export of one evaluated result: its selected data and its result row.

    Parameters
    ----------
    result : lie_stats.spec.Result
        An evaluated, non-skipped result with its selected data (``result.data``, as
        :func:`lie_stats.spec.evaluate` and :func:`~lie_stats.spec.evaluate_cube` leave it).
    record : mapping, optional
        The result's row of ``results.json``; by default :meth:`Result.row` (without the
        run-wide adjusted p-values).
    cube : xarray.Dataset, optional
        The cube the result was evaluated on: its provenance records of the selected
        checkpoints (models and steps), its ``metrics_version`` and its lie_stats version
        are copied.
    dataset_cubes : sequence of mapping, optional
        The cube files behind the dataset (:func:`lie_stats.report.dataset_records`).

    Returns
    -------
    xarray.Dataset
        Plain NetCDF-ready types only (see the module docstring for the layout).

    Raises
    ------
    LieStatsError
        The result is skipped or carries no selected data.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube
    >>> rng = np.random.default_rng(0)
    >>> dims = ("model", "step", "layer", "head")
    >>> x = rng.normal(size=(1, 2, 3, 4)); y = -x[:, :1] + 0.1 * rng.normal(size=x.shape)
    >>> coords = {"model": ["m"], "step": [0, 9], "layer": np.arange(3), "head": np.arange(4)}
    >>> cube = xr.Dataset({"head_contribution": (dims, x), "change_from_init": (dims, y)}, coords)
    >>> s = HypothesisSpec(id="X1", claim="c", source="s", datasets=("toy",),
    ...     selection={"x": Select("head_contribution", step="first"),
    ...                "y": Select("change_from_init")}, test="correlation",
    ...     params={"n_perm": 99, "n_boot": 20}, prediction=Prediction("negative"), gate="report")
    >>> ds = result_dataset(evaluate_cube(s, cube, dataset="toy"), cube=cube)
    >>> sorted(ds.data_vars), int(ds["x_step"]), int(ds["y_step"]), ds.attrs["verdict"]
    (['x', 'y'], 0, 9, 'supported')
    >>> ds["x"].attrs["definition"]
    'METRICS.md §5.4'
    """
    where = f"export of {getattr(result, 'id', '?')} on {getattr(result, 'dataset', '?')}"
    if getattr(result, "verdict", None) == C.SKIPPED:
        raise LieStatsError(f"{where}: the result is skipped ({result.reason}); there is no "
                            f"selected data to export.")
    data = getattr(result, "data", None)
    arrays = getattr(data, "arrays", None)
    if not arrays:
        raise LieStatsError(f"{where}: the result carries no selected data (result.data); "
                            f"expected a result of lie_stats.spec.evaluate or evaluate_cube.")
    row = dict(record) if record is not None else result.row()
    selection = dict(row.get("selection") or result.selection or {})
    ds = _merge_roles(arrays, selection, where)
    attrs, json_names = _row_attrs(row)
    checkpoints = _checkpoints(arrays)
    provenance: list = []
    metrics_version: Any = np.int64(schema.METRICS_VERSION)
    cube_version = ""
    if cube is not None:
        from .cube import provenance_of

        provenance = [r for r in provenance_of(cube)
                      if (str(r.get(schema.MODEL)), r.get(schema.STEP)) in checkpoints
                      or (str(r.get(schema.MODEL)), None) in checkpoints]
        if schema.ATTR_METRICS_VERSION in cube.attrs:
            metrics_version = np.int64(int(cube.attrs[schema.ATTR_METRICS_VERSION]))
        cube_version = str(cube.attrs.get(schema.ATTR_LIB_VERSION, ""))
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    head = {
        schema.ATTR_CONVENTIONS: "CF-1.10",
        "title": f"lie_stats hypothesis {row.get('id')} on dataset {row.get('dataset')}: "
                 f"selected data and result",
        "history": f"{created} written by lie_stats {__version__} (lie-stats export)",
        schema.ATTR_CREATED: created,
        schema.ATTR_LIB_VERSION: __version__,
        schema.ATTR_METRICS_VERSION: metrics_version,
        "cube_lie_stats_version": cube_version,
        schema.ATTR_PROVENANCE: _json(provenance),
        "dataset_cubes": _json([dict(d) for d in (dataset_cubes or [])]),
        "roles": " ".join(str(v) for v in ds.data_vars),
    }
    json_names += [schema.ATTR_PROVENANCE, "dataset_cubes"]
    clash = sorted(set(head) & set(attrs))
    if clash:  # pragma: no cover - guarded by the tests of the layout
        raise LieStatsError(f"{where}: result fields {clash} clash with the file's own attributes.")
    ds.attrs = {**head, **attrs, JSON_ATTRS: " ".join(json_names)}
    return ds


def _checkpoints(arrays: Mapping[str, Any]) -> set[tuple[str, int | None]]:
    """The (model, step) pairs the selected data come from; step None: every step."""
    out: set[tuple[str, int | None]] = set()
    for da in arrays.values():
        if schema.MODEL not in da.coords:
            continue
        models = [str(m) for m in np.atleast_1d(da[schema.MODEL].values).tolist()]
        step = da.coords.get(schema.STEP)
        for i, model in enumerate(models):
            if step is None:
                out.add((model, None))
            elif schema.STEP in step.dims:  # step="all": every checkpoint of the cube
                out.update((model, int(s)) for s in step.values.tolist())
            elif step.ndim == 0:
                out.add((model, int(step.values)))
            else:  # one step per model
                out.add((model, int(step.values[i])))
    return out


def _write_netcdf(ds: Any, path: Path) -> None:
    """Write ``ds`` to ``path`` (NetCDF4, compressed variables), fsync, mode 0644."""
    encoding = {name: dict(_ENCODING) for name in ds.data_vars}
    ds.to_netcdf(path, engine="netcdf4", format="NETCDF4", encoding=encoding)
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
    os.chmod(path, 0o644)


# ----------------------------------------------------------------------------- a folder


def _is_our_index(data: Any) -> bool:
    """Whether parsed JSON is an index that lie_stats wrote (by its content, not its name)."""
    return (isinstance(data, dict) and {"lie_stats_version", "created", "exports"} <= set(data)
            and isinstance(data["exports"], list)
            and all(isinstance(e, dict) and {"id", "dataset", "file"} <= set(e) for e in data["exports"]))


def _previous_files(outdir: Path) -> set[str]:
    """The files an earlier export of ``outdir`` listed in its index (none without one)."""
    return {e["file"] for e in _previous_entries(outdir) if e.get("file") is not None}


def _previous_entries(outdir: Path) -> list[dict[str, Any]]:
    """The entries of an earlier export's index in ``outdir`` (none without one).

    Raises
    ------
    LieStatsError
        ``index.json`` there was not written by lie_stats (it is never overwritten), or an
        entry names a path that is not a plain file name of the folder (``..``, ``a/b``,
        an absolute path): refused before anything is written or moved.
    """
    from ._io import read_json

    index = outdir / INDEX_FILE
    if not index.exists() and not index.is_symlink():
        return []
    try:
        if index.is_symlink() or not index.is_file():
            raise ValueError("not a plain file")
        data = read_json(index, what="the index of a lie-stats export")
    except (OSError, ValueError, LieStatsError) as e:
        data, why = None, str(e)
    else:
        why = "it lacks lie_stats_version, created and a list of exports with id, dataset and file"
    if not _is_our_index(data):
        raise LieStatsError(f"{index}: this {INDEX_FILE} was not written by lie-stats export ({why}); "
                            f"it is left as it is. Export into another folder (-o DIR), or move "
                            f"that file away.")
    for entry in data["exports"]:
        for key in ("id", "dataset"):
            if not isinstance(entry[key], str):
                raise LieStatsError(f"{index}: an entry's field {key!r} is {entry[key]!r}; expected "
                                    f"a string (the result's {key}). Nothing was written or moved; "
                                    f"fix or remove that index.")
        name = entry.get("file")
        if name is None:
            continue
        if (not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name
                or "/" in name or "\\" in name or "\0" in name):
            raise LieStatsError(f"{index}: entry {entry.get('id')!r} on {entry.get('dataset')!r} "
                                f"names the file {name!r}, which is not a plain file name of "
                                f"{outdir}; expected <id>__<dataset>.nc. Nothing was written or "
                                f"moved; fix or remove that index.")
    return [dict(e) for e in data["exports"]]


def _prepare_outdir(outdir: Path) -> bool:
    """Create ``outdir`` if needed; return whether it was created here."""
    if outdir.exists() and not outdir.is_dir():
        raise LieStatsError(f"{outdir}: the export folder is an existing file, not a folder; "
                            f"expected a folder (it is created when absent).")
    created = not outdir.exists()
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LieStatsError(f"{outdir}: cannot create the export folder ({e}).") from e
    return created


def export_results(results: Sequence[Any], outdir: str | os.PathLike, *,
                   records: Sequence[Mapping[str, Any]] | None = None,
                   cubes: Mapping[str, Any] | None = None,
                   datasets_dir: str | os.PathLike | None = None,
                   cache: Any = None) -> list[dict[str, Any]]:
    """Write one NetCDF per non-skipped result, and the index, into ``outdir``.

    Parameters
    ----------
    results : sequence of lie_stats.spec.Result
        Evaluated results with their data (skipped ones are only indexed).
    outdir : path
        The export folder, created if absent. Files of this export replace earlier ones of
        the same result; an earlier export's files of other results are kept and stay in the
        index (merged).
    records : sequence of mapping, optional
        The results' rows of ``results.json`` in the same order (``lie-stats export`` passes
        the run's own); by default :func:`lie_stats.report.results_records` of ``results``
        (Holm and BH p-values adjusted across these results).
    cubes : mapping of str to xarray.Dataset, optional
        The cube of each dataset, for provenance. Datasets not given are opened from
        ``datasets_dir``.
    datasets_dir : path, optional
        The dataset cards' folder: cubes not in ``cubes`` are opened from it and the files'
        sha256 recorded (``dataset_cubes``).
    cache : lie_stats.datasets.CubeCache, optional
        Where the cubes from ``datasets_dir`` are read: the evaluation's own cache
        (:class:`lie_stats.engine.ResultsTable` ``.cubes``), so the export holds exactly the
        values its results were computed from; by default they are opened now.

    Returns
    -------
    list of dict
        The index entries (also written to ``outdir/index.json``).

    Raises
    ------
    LieStatsError
        ``outdir`` is a file or cannot be created; a result lacks its data or its cube; a
        file cannot be written (the message names it). Nothing of this export is left
        behind and the earlier export is unchanged.

    Examples
    --------
    >>> import tempfile, json, pathlib
    >>> from lie_stats.spec import Result
    >>> r = Result(id="X1", claim="c", source="s", dataset="toy", verdict="skipped",
    ...            reason="no cube", gate="report", test="correlation", spec_hash="0" * 64,
    ...            reference={}, build="make toy")
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> [(e["file"], e["reason"], e["build"]) for e in export_results([r], out)]
    [(None, 'no cube', 'make toy')]
    >>> json.loads((out / "index.json").read_text())["exports"][0]["verdict"]
    'skipped'
    """
    from .report import dataset_records, results_records, stable_numbers

    outdir = Path(outdir)
    results = list(results)
    if records is None:
        records = stable_numbers(results_records(results))  # as results.json writes them
    records = [dict(r) for r in records]
    if len(records) != len(results):
        raise LieStatsError(f"export_results: {len(results)} results but {len(records)} records; "
                            f"expected one record per result, in the same order.")
    order = sorted(range(len(results)), key=lambda i: (str(records[i]["id"]), str(records[i]["dataset"])))
    cubes = dict(cubes or {})
    previous = _previous_entries(outdir) if outdir.is_dir() else []  # refused before anything is written
    old = {e["file"] for e in previous if e.get("file") is not None}
    created_dir = _prepare_outdir(outdir)
    stage = Path(tempfile.mkdtemp(prefix=".export-", dir=outdir))
    entries: list[dict[str, Any]] = []
    try:
        for i in order:
            res, rec = results[i], records[i]
            entry = {"id": rec["id"], "dataset": rec["dataset"], "verdict": rec["verdict"],
                     "gate": rec.get("gate"), "spec_hash": rec.get("spec_hash"), "file": None,
                     "bytes": None, "sha256": None, "reason": rec.get("reason", ""),
                     "build": rec.get("build", "")}
            if rec["verdict"] != C.SKIPPED:
                name = export_name(str(rec["id"]), str(rec["dataset"]))
                if any(e["file"] == name for e in entries):
                    raise LieStatsError(f"{outdir / name}: two results map to this file name "
                                        f"({rec['id']!r} on {rec['dataset']!r}); ids must differ.")
                files = (dataset_records([rec["dataset"]], datasets_dir,
                                         base=Path(datasets_dir).resolve().parent)
                         if datasets_dir is not None else [])
                ds = result_dataset(res, record=rec, cube=_cube_for(rec["dataset"], cubes, datasets_dir, cache),
                                    dataset_cubes=files)
                path = inside(stage, name, what="export")
                try:
                    _write_netcdf(ds, path)
                except (OSError, RuntimeError, ValueError, TypeError) as e:
                    free = shutil.disk_usage(outdir).free
                    raise LieStatsError(f"{outdir / name}: could not write the export "
                                        f"({type(e).__name__}: {e}); {free} bytes free. Nothing "
                                        f"of this export was kept; the earlier one is unchanged.") from e
                entry.update(file=name, bytes=path.stat().st_size, sha256=file_sha256(path))
            entries.append(entry)
        for entry in entries:  # never replace a file that no earlier export of ours listed
            target = inside(outdir, entry["file"], what="export") if entry["file"] else None
            if target is not None and entry["file"] not in old and (target.exists() or target.is_symlink()):
                raise LieStatsError(f"{target}: a file of that name is already in the export folder "
                                    f"and no earlier lie-stats export listed it in {INDEX_FILE}; it "
                                    f"is left as it is and nothing was moved. Export into another "
                                    f"folder (-o DIR), or move that file away.")
        for entry in entries:
            if entry["file"]:
                os.replace(inside(stage, entry["file"], what="export"), inside(outdir, entry["file"], what="export"))
        # merge: the earlier export's entries of other results stay, with their files; an
        # entry of the same result (id and dataset) is replaced by this export's
        ours = {(e["id"], e["dataset"]) for e in entries}
        kept = [e for e in previous if (e["id"], e["dataset"]) not in ours]
        merged = sorted(kept + entries, key=lambda e: (str(e["id"]), str(e["dataset"])))
        index = {"lie_stats_version": __version__,
                 "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "exports": merged}
        write_text_atomic(outdir / INDEX_FILE, json.dumps(index, indent=2, sort_keys=True, allow_nan=False) + "\n")
        keep = {e["file"] for e in merged if e["file"]}
        for name in sorted(old - keep):  # only a file of a result this export replaced
            inside(outdir, name, what="earlier export").unlink(missing_ok=True)  # names checked on reading
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if created_dir:
            try:
                outdir.rmdir()  # only when empty: nothing else was there before
            except OSError:
                pass
        raise
    shutil.rmtree(stage, ignore_errors=True)
    return entries


def _cube_for(dataset: str, cubes: Mapping[str, Any], datasets_dir: Any, cache: Any) -> Any:
    if dataset in cubes:
        return cubes[dataset]
    if datasets_dir is None:
        raise LieStatsError(f"export of dataset {dataset!r}: its cube is needed for provenance; "
                            f"pass cubes={{{dataset!r}: cube}} or datasets_dir.")
    from .datasets import card_cubes, find_dataset  # with the run's cache: the very cube the result came from

    return card_cubes(find_dataset(dataset, datasets_dir), cache)


# ----------------------------------------------------------------------------- the CLI's path


@dataclass
class ExportRun:
    """What :func:`export_hypotheses` did.

    Attributes
    ----------
    status : int
        As pytest's exit status of the same run: 1 when a gate failed, a result could not
        be evaluated or (not ``strict``) a module could not be collected; else 0. The
        export is written all the same.
    entries : list of dict
        The index entries (:func:`export_results`).
    outdir : Path
    results : list of lie_stats.spec.Result
        The evaluated results, with their gate's ``outcome`` and pin.
    failures : list of str
        One line per failure behind ``status`` 1: ``<id>::<dataset>: <why>``, or a module
        that could not be collected.
    errors : list of str
        The failures that are errors, not a gate's verdict: a result that could not be
        evaluated (a selection that matches nothing, ...) or a module that could not be
        collected (``lie-stats export`` exits 1 on them).
    """

    status: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    outdir: Path = Path(".")
    results: list[Any] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def export_hypotheses(paths: Sequence[str | os.PathLike] = ("hypotheses",),
                      outdir: str | os.PathLike = "exports", *,
                      datasets_dir: str | os.PathLike = "datasets",
                      reports_dir: str | os.PathLike | None = None,
                      update_verdicts: bool = False, strict: bool = True) -> ExportRun:
    """Evaluate hypothesis modules as ``lie-stats run`` does and export every result.

    The modules are collected as the pytest plugin collects them
    (:func:`lie_stats.collect.collect`: same modules, declarations and errors), each spec
    evaluated on each of its datasets (:func:`lie_stats.spec.evaluate`) and its gate
    applied against the registry beside its module (:func:`lie_stats.gates.check`); the
    results' rows of ``results.json`` (adjusted p-values across every result of this call)
    become the files' attributes.

    Parameters
    ----------
    paths : sequence of path
        Hypothesis modules, folders or ``file.py::<id>[<dataset>]`` node ids, as
        ``lie-stats run``.
    outdir : path
        The export folder (:func:`export_results`).
    datasets_dir : path
        The dataset cards' folder.
    reports_dir : path, optional
        When given, the run's reports are written there as ``lie-stats run`` writes them
        (:func:`lie_stats.report.write_reports`) and the exported rows name the modules
        relative to its parent; otherwise no report is written and the modules are named
        relative to the working folder.
    update_verdicts : bool
        Re-pin, as ``lie-stats run --update-verdicts``.
    strict : bool
        A module that fails to import or declares a malformed spec is an error and nothing
        is evaluated or written (``lie-stats export``); otherwise it counts as a failure
        (``status`` 1) and the other modules are exported (``lie-stats run --export``).

    Returns
    -------
    ExportRun

    Raises
    ------
    SpecError
        A path does not exist or holds no hypothesis; with ``strict``, a module could not be
        collected (the message names it and says why); a pytest argument other than an
        output option.
    LieStatsError
        The export could not be written (:func:`export_results`).

    Examples
    --------
    >>> export_hypotheses(["no_such_folder"], "out")
    Traceback (most recent call last):
    ...
    lie_stats.errors.SpecError: no_such_folder: no such hypothesis module or folder. Expected a .py file or a folder of hypothesis modules (default: hypotheses).
    """
    from . import report
    from .engine import check_paths, run

    check_paths(paths)
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():  # before the (long) evaluation
        _prepare_outdir(outdir)
    if outdir.is_dir():
        _previous_files(outdir)  # a foreign or malformed index: refused before any work
    datasets = Path(datasets_dir).resolve()
    try:  # the engine of lie-stats run: collection, evaluation, diagnosis, gates, pins
        table = run(paths, datasets_dir=datasets, update_verdicts=update_verdicts, strict=strict)
    except SpecError as e:
        raise SpecError(f"cannot export: {e}") from e
    results = list(table.results)
    if not results:
        raise SpecError(f"no hypothesis was evaluated under {', '.join(map(str, paths))}; "
                        f"expected modules declaring HypothesisSpec objects.")
    if reports_dir is not None:
        report.write_reports(results, reports_dir, datasets_dir=datasets, retired=table.retired,
                             sections=table.sections)
        base = Path(reports_dir).resolve().parent
    else:
        base = Path.cwd().resolve()
    records = report.stable_numbers(report.results_records(results))  # as results.json writes them
    for rec in records:
        rec["module"] = report.relative_path(rec.get("module") or "", base)
    # the rows exactly as results.json holds them (key order, JSON types)
    records = json.loads(json.dumps(records, sort_keys=True, allow_nan=False))
    entries = export_results(results, outdir, records=records, datasets_dir=datasets_dir,
                             cache=table.cubes)
    return ExportRun(status=table.status, entries=entries, outdir=outdir, results=results,
                     failures=list(table.failures), errors=list(table.errors))
