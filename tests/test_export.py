"""``lie-stats export``: each result's selected data and verdict as plain, self-describing NetCDF.

Every exported file is read back by a separate Python process that imports only numpy,
xarray, netCDF4 and json (:func:`read_plain` checks that no lie_stats module was loaded), and
compared with what lie_stats itself selected and reported: values bit for bit (NaN where
NaN), dims, coordinates, units and definitions, and every field of the result's row of
``results.json``.
"""

from __future__ import annotations

import dataclasses

import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

from lie_stats import cube as cube_mod
from lie_stats import export, schema
from lie_stats.datasets import load_dataset
from lie_stats.errors import LieStatsError, SpecError
from lie_stats.spec import HypothesisSpec, OutOfScope, Prediction, Select, evaluate, evaluate_cube, select
from tests._spec_cubes import make_datasets

REPO = pathlib.Path(__file__).resolve().parents[1]
FAST = {"n_perm": 199, "n_boot": 50}

# A reader that knows nothing of lie_stats: what a collaborator would run.
READER = r"""
import json, sys
import numpy as np, netCDF4, xarray as xr

out = sys.argv[1]

def plain(v):
    return v.item() if isinstance(v, np.generic) else (v.tolist() if isinstance(v, np.ndarray) else v)

def arr(v):
    v = np.asarray(v)
    return v.astype(str) if v.dtype.kind == "O" else v

def read(path):
    res, arrays = {}, {}
    with xr.open_dataset(path) as ds:
        ds = ds.load()
        res["xr_attrs"] = {k: plain(v) for k, v in ds.attrs.items()}
        res["xr_vars"] = {n: {"dims": list(v.dims), "dtype": str(v.dtype), "coords": sorted(map(str, v.coords)),
                              "attrs": {k: plain(a) for k, a in v.attrs.items()}}
                          for n, v in ds.data_vars.items()}
        res["xr_coords"] = {n: list(v.dims) for n, v in ds.coords.items()}
        for n, v in ds.variables.items():
            arrays["xr/" + n] = arr(v.values)
    with netCDF4.Dataset(path) as nc:
        res["nc_attrs"] = {k: plain(nc.getncattr(k)) for k in nc.ncattrs()}
        res["nc_groups"] = list(nc.groups)
        res["nc_vars"] = {}
        for n, v in nc.variables.items():
            res["nc_vars"][n] = {"dims": list(v.dimensions), "dtype": str(v.dtype),
                                 "attrs": {k: plain(v.getncattr(k)) for k in v.ncattrs()}}
            data = v[:]
            if np.ma.isMaskedArray(data):
                data = data.filled(np.nan) if data.dtype.kind == "f" else data.data
            arrays["nc/" + n] = arr(data)
    return res, arrays

metas, all_arrays = [], {}
for i, path in enumerate(sys.argv[2:]):
    res, arrays = read(path)
    metas.append(res)
    all_arrays.update({f"{i}:{k}": v for k, v in arrays.items()})
modules = sorted(m for m in sys.modules if m.split(".")[0] == "lie_stats")
np.savez(out + ".npz", **all_arrays)
with open(out + ".json", "w") as fh:
    json.dump({"files": metas, "lie_stats_modules": modules}, fh)
"""


def read_plain_all(paths: list[pathlib.Path], tmp: pathlib.Path) -> list[tuple[dict, dict]]:
    """Read exported files in a fresh process with numpy, xarray and netCDF4 only."""
    out = tmp / "read_plain"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH="")
    proc = subprocess.run([sys.executable, "-c", READER, str(out), *map(str, paths)], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads(pathlib.Path(f"{out}.json").read_text())
    assert meta["lie_stats_modules"] == []  # read without this package
    with np.load(f"{out}.npz", allow_pickle=False) as z:  # no pickled object in the file
        arrays = {k: z[k] for k in z.files}
    return [(m, {k.split(":", 1)[1]: v for k, v in arrays.items() if k.split(":", 1)[0] == str(i)})
            for i, m in enumerate(meta["files"])]


def read_plain(path: pathlib.Path, tmp: pathlib.Path) -> tuple[dict, dict]:
    return read_plain_all([path], tmp)[0]


def assert_attrs_match_row(attrs: dict, row: dict) -> None:
    """The file's global attributes hold every field of the results.json row, decodably."""
    json_names = set(attrs["json_attributes"].split())
    for key, value in row.items():
        if key == "figure":
            continue
        assert key in attrs, key
        got = attrs[key]
        if key in export.NUMERIC_ATTRS:
            assert isinstance(got, float), (key, got)
            if value is None:
                assert math.isnan(got), (key, got)
            else:
                assert got == value, (key, got, value)
        elif isinstance(value, str):
            assert got == value and key not in json_names, key
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            assert got == value, key
        else:
            assert key in json_names, key
            assert json.loads(got) == value, key


def same(a, b) -> bool:
    """Exact equality with NaN equal to NaN, and the same dtype."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return make_datasets(tmp_path_factory.mktemp("datasets"))


@pytest.fixture(scope="module")
def cubes(datasets):
    return {name: cube_mod.open_cube(datasets / name / f"{name}.nc") for name in ("synth", "pair")}


def spec_xy(ident="X1", **kw):
    return HypothesisSpec(
        id=ident, claim="contribution predicts change", source="essay", datasets=("synth",),
        selection={"x": Select("head_contribution", step="first", layers=(0, 1, -1)),
                   "y": Select("change_from_init")},
        test="correlation", params=FAST, prediction=Prediction("negative"), gate="report",
        reference={"rho": -0.274, "n": 96}, choices={"method": ["spearman", "pearson"]}, **kw)


def spec_pair():
    sel = dict(step="last", family="Q", projection="none")
    return HypothesisSpec(
        id="E2", claim="tuning leaves killing_self unchanged", source="essay", datasets=("pair",),
        selection={"base": Select("killing_self", models=("base",), **sel),
                   "tuned": Select("killing_self", models=("tuned",), **sel)},
        test="tost_relative", prediction=Prediction("equivalent", bound=0.001),
        gate="report", reference={"max_relative_difference": 0.001})


def spec_trend():
    return HypothesisSpec(
        id="E3", claim="abelian fraction rises", source="essay", datasets=("synth",),
        selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
        test="trend", params={"n_perm": 199}, prediction=Prediction("positive"), gate="report")


def test_exported_files_read_back_with_plain_xarray_and_netcdf4(cubes, datasets, tmp_path):
    specs = [spec_xy(), spec_pair(), spec_trend()]
    results = [evaluate_cube(s, cubes[s.datasets[0]], dataset=s.datasets[0]) for s in specs]
    # the trend on synth's one run is inconclusive: a trend is tested over runs
    assert [r.verdict for r in results] == ["supported", "supported", "inconclusive"]
    out = tmp_path / "exports"
    umask = os.umask(0o077)  # a private umask: the files are still meant to be shared
    try:
        entries = export.export_results(results, out, cubes=cubes)
    finally:
        os.umask(umask)
    assert oct((out / export.INDEX_FILE).stat().st_mode & 0o777) == "0o644"
    from lie_stats.report import results_records, stable_numbers

    rows = {r["id"]: r for r in stable_numbers(results_records(results))}  # as results.json
    assert [e["file"] for e in entries] == ["E2__pair.nc", "E3__synth.nc", "X1__synth.nc"]
    index = json.loads((out / export.INDEX_FILE).read_text())
    assert index["exports"] == entries
    paths = [out / export.export_name(spec.id, res.dataset) for spec, res in zip(specs, results)]
    read = dict(zip([s.id for s in specs], read_plain_all(paths, tmp_path)))
    for spec, res, path in zip(specs, results, paths):
        meta, arrays = read[spec.id]
        assert oct(path.stat().st_mode & 0o777) == "0o644"
        entry = next(e for e in entries if e["id"] == spec.id)
        assert entry["bytes"] == path.stat().st_size and len(entry["sha256"]) == 64
        assert meta["nc_groups"] == []  # everything in the root group, where every reader looks
        assert meta["xr_attrs"] == meta["nc_attrs"]
        assert_attrs_match_row(meta["nc_attrs"], rows[spec.id])
        attrs = meta["nc_attrs"]
        assert attrs["verdict"] == res.verdict and attrs["spec_hash"] == spec.spec_hash()
        assert attrs["Conventions"] == "CF-1.10" and attrs["metrics_version"] == schema.METRICS_VERSION
        assert attrs["roles"].split() == list(spec.selection)
        cube = cubes[res.dataset]
        for role, sel in spec.selection.items():
            expected = select(sel, cube)
            info = schema.VARIABLES[sel.metric]
            var = meta["nc_vars"][role]
            assert {k: var["attrs"][k] for k in ("units", "long_name", "definition", "metric")} == {
                "units": info.units, "long_name": info.long_name, "definition": info.definition,
                "metric": sel.metric}
            assert json.loads(var["attrs"]["selection"]) == sel.declaration()
            assert same(arrays[f"nc/{role}"], expected.values)  # netCDF4: bit for bit
            assert same(arrays[f"xr/{role}"], expected.values)  # xarray: bit for bit
            prefix = f"{role}_" if role == "tuned" else ""  # the pair's models differ by role
            assert meta["xr_vars"][role]["dims"] == [f"{prefix}{d}" if d == schema.MODEL else d
                                                     for d in expected.dims]
            for dim in expected.dims:
                name = f"{prefix}{dim}" if dim == schema.MODEL else dim
                assert same(arrays[f"nc/{name}"], np.asarray(expected[dim].values).astype(
                    str if dim == schema.MODEL else expected[dim].dtype)), name
            if schema.STEP not in expected.dims:  # the checkpoint the role was taken at
                assert same(arrays[f"xr/{role}_step"], expected[schema.STEP].values)
                assert f"{role}_step" in meta["xr_vars"][role]["coords"]
            for c in schema.MODEL_COORDS:  # the model's shape travels with its values
                name = f"{prefix}{c}"
                assert same(arrays[f"nc/{name}"], np.asarray(expected[c].values).astype(
                    str if expected[c].dtype.kind == "O" else expected[c].dtype)), name
        models = {m for r in spec.selection for m in np.atleast_1d(select(spec.selection[r], cube)["model"].values)}
        prov = json.loads(attrs["provenance"])
        steps = sorted({int(s) for s in cube["step"].values}) if spec.id == "E3" else None
        assert prov and {p["model"] for p in prov} == models
        if steps:  # step="all": every checkpoint's record
            assert sorted(p["step"] for p in prov) == steps
        else:  # only the checkpoints the data come from
            assert {p["step"] for p in prov} == {int(np.asarray(select(s, cube)["step"].values).reshape(-1)[0])
                                                 for s in spec.selection.values()}
    # the first/last roles of X1 come from different checkpoints, both recorded
    arrays = read["X1"][1]
    assert int(arrays["xr/x_step"]) == 0 and int(arrays["xr/y_step"]) == 3000
    assert np.isnan(arrays["nc/x"][0, 2:7]).all() and np.isfinite(arrays["nc/x"][0, [0, 1, 7]]).all()


def test_label_variable_keeps_its_cf_flags(cubes, tmp_path):
    """head_label keeps its CF flags; values (a float code) come back exactly."""
    s = HypothesisSpec(
        id="E4", claim="workers change more", source="essay", datasets=("synth",),
        selection={"x": Select("change_from_init"), "group": Select("head_label")},
        test="group_difference", params={"groups": (1, 2), **FAST},
        prediction=Prediction("nonzero"), gate="report")
    res = evaluate_cube(s, cubes["synth"], dataset="synth")
    export.export_results([res], tmp_path / "out", cubes=cubes)
    meta, arrays = read_plain(tmp_path / "out" / "E4__synth.nc", tmp_path)
    attrs = meta["nc_vars"]["group"]["attrs"]
    assert attrs["flag_meanings"] == " ".join(schema.LABEL_CODES)
    assert attrs["flag_values"] == list(schema.LABEL_CODES.values())
    assert same(arrays["nc/group"], select(s.selection["group"], cubes["synth"]).values)


def test_skipped_and_out_of_scope_results_are_indexed_without_a_file(datasets, cubes, tmp_path):
    absent = HypothesisSpec(**{**spec_xy("S1").__dict__, "datasets": ("absent",)})
    skipped = evaluate(absent, datasets)[0]
    oos = OutOfScope(id="G1", claim="gating", source="essay", reason="needs training").result()
    done = evaluate_cube(spec_xy(), cubes["synth"], dataset="synth")
    out = tmp_path / "out"
    entries = export.export_results([skipped, oos, done], out, datasets_dir=datasets)
    by_id = {e["id"]: e for e in entries}
    assert by_id["S1"]["file"] is None and by_id["S1"]["verdict"] == "skipped"
    assert by_id["S1"]["build"] == "python -m build_absent --out absent.nc"
    assert "missing absent.nc" in by_id["S1"]["reason"]
    assert by_id["G1"]["file"] is None and by_id["G1"]["reason"].startswith("out of scope")
    assert sorted(p.name for p in out.iterdir()) == ["X1__synth.nc", "index.json"]
    with xr.open_dataset(out / "X1__synth.nc") as ds:  # datasets_dir: the cube files are named
        files = json.loads(ds.attrs["dataset_cubes"])
    assert [f["cube"] for f in files] == [f"{datasets.name}/synth/synth.nc"]
    import hashlib

    assert files[0]["sha256"] == hashlib.sha256((datasets / "synth" / "synth.nc").read_bytes()).hexdigest()
    with pytest.raises(LieStatsError, match="skipped .*no selected data"):
        export.result_dataset(skipped)


def test_output_folder_that_is_a_file_is_refused_and_left_alone(cubes, tmp_path):
    res = evaluate_cube(spec_xy(), cubes["synth"], dataset="synth")
    target = tmp_path / "out"
    target.write_text("not a folder")
    with pytest.raises(LieStatsError, match="is an existing file, not a folder"):
        export.export_results([res], target, cubes=cubes)
    assert target.read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_write_leaves_the_earlier_export_untouched(cubes, tmp_path, monkeypatch):
    results = [evaluate_cube(s, cubes[s.datasets[0]], dataset=s.datasets[0])
               for s in (spec_xy(), spec_pair())]
    out = tmp_path / "out"
    export.export_results(results, out, cubes=cubes)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = xr.Dataset.to_netcdf
    calls = []

    def fail_second(self, path, *a, **k):
        calls.append(path)
        if len(calls) == 2:
            real(self, path, *a, **k)  # half a file on disk, then the failure
            raise OSError(28, "No space left on device")
        return real(self, path, *a, **k)

    monkeypatch.setattr(xr.Dataset, "to_netcdf", fail_second)
    results[1] = results[1].evolve(p_value=0.5)  # this export would change the pair's file
    with pytest.raises(LieStatsError, match=r"X1__synth\.nc: could not write the export .*No space left"):
        export.export_results(results, out, cubes=cubes)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging folder left
    fresh = tmp_path / "fresh" / "exports"
    calls.clear()
    with pytest.raises(LieStatsError):
        export.export_results(results, fresh, cubes=cubes)
    assert not fresh.exists()  # a folder created for the export is removed again


def test_a_second_export_merges_and_never_deletes_the_first_ones_files(cubes, tmp_path):
    out = tmp_path / "out"
    a = evaluate_cube(spec_xy(), cubes["synth"], dataset="synth")
    b = evaluate_cube(spec_pair(), cubes["pair"], dataset="pair")
    first = export.export_results([a, b], out, cubes=cubes)
    b_file = next(e["file"] for e in first if e["dataset"] == "pair")
    b_bytes = (out / b_file).read_bytes()
    (out / "notes.txt").write_text("mine")
    (out / "other__thing.nc").write_bytes(b"not ours")
    export.export_results([a], out, cubes=cubes)  # another export of only a: b's file stays
    assert sorted(p.name for p in out.iterdir()) == sorted(["X1__synth.nc", b_file, "index.json",
                                                           "notes.txt", "other__thing.nc"])
    assert (out / b_file).read_bytes() == b_bytes
    index = json.loads((out / "index.json").read_text())["exports"]
    assert [(e["id"], e["dataset"]) for e in index] == sorted({(e["id"], e["dataset"]) for e in first})
    # the same result exported again as skipped: its earlier file is this export's own, removed
    skipped = dataclasses.replace(evaluate_cube(spec_xy(), cubes["synth"], dataset="synth"),
                                  verdict="skipped", reason="no cube", data=None)
    export.export_results([skipped], out, cubes=cubes)
    assert not (out / "X1__synth.nc").exists() and (out / b_file).read_bytes() == b_bytes
    index = {(e["id"], e["dataset"]): e for e in json.loads((out / "index.json").read_text())["exports"]}
    assert index[("X1", "synth")]["file"] is None and index[("X1", "synth")]["verdict"] == "skipped"
    assert index[next(k for k in index if k[1] == "pair")]["file"] == b_file


def test_results_without_data_or_cube_are_clear_errors(cubes, tmp_path):
    res = evaluate_cube(spec_xy(), cubes["synth"], dataset="synth")
    with pytest.raises(LieStatsError, match="its cube is needed for provenance; pass cubes="):
        export.export_results([res], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(LieStatsError, match="carries no selected data"):
        export.result_dataset(res.evolve(data=None), cube=cubes["synth"])


# ----------------------------------------------------------------------------- the CLI

MODULE = '''
from lie_stats.spec import HypothesisSpec, Prediction, Select

REP = HypothesisSpec(
    id="B5", claim="contribution predicts change", source="essay", datasets=("synth", "absent"),
    test="replication", selection={"x": Select("head_contribution", step="first"),
                                   "y": Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=Prediction("negative"),
    reference={"rho": -0.274, "n": 96}, gate="report")
NULL = HypothesisSpec(
    id="B5-null", claim="ov_norm predicts change", source="essay", datasets=("synth",),
    test="replication", selection={"x": Select("ov_norm"), "y": Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=Prediction("negative"),
    reference={"rho": -0.274, "n": 96}, gate="replication")
'''


def cli(*args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "lie_stats", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_export_writes_what_the_evaluation_gives(datasets, tmp_path):
    folder = tmp_path / "hypotheses"
    folder.mkdir()
    (folder / "claims.py").write_text(textwrap.dedent(MODULE))
    # exit 0 although the replication gate of B5-null fails (that is run's business)
    proc = cli("export", "hypotheses", "--datasets", datasets, "-o", "exp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "exported 2 file(s)" in proc.stdout and "1 skipped result(s)" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp", "hypotheses"]  # no reports
    index = json.loads((tmp_path / "exp" / "index.json").read_text())["exports"]
    assert [(e["id"], e["dataset"], e["file"]) for e in index] == [
        ("B5", "absent", None), ("B5", "synth", "B5__synth.nc"), ("B5-null", "synth", "B5-null__synth.nc")]
    # the same declarations evaluated here: same numbers (same seeds), same adjusted p
    import importlib.util

    from lie_stats.report import results_records, stable_numbers

    spec = importlib.util.spec_from_file_location("h5_export_claims", folder / "claims.py")
    claims = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(claims)
    from lie_stats.spec.evaluation import decide_in_family
    from lie_stats.spec.results import family_adjusted_p

    results = [*evaluate(claims.REP, datasets), *evaluate(claims.NULL, datasets)]
    # decided within their family (B5, two tests with a p), as every run decides them
    adjusted, sizes = family_adjusted_p(results)
    specs = {"B5": claims.REP, "B5-null": claims.NULL}
    results = [decide_in_family(specs[r.id], r, adjusted.get(r.key), sizes.get(r.key, 0)) for r in results]
    assert {r.multiplicity["family_size"] for r in results if r.verdict != "skipped"} == {2}
    rows = {(r["id"], r["dataset"]): r for r in stable_numbers(results_records(results))}  # as results.json
    by_run = ("module", "outcome", "pinned_verdict", "pinned_hash", "diagnosis")  # what the engine adds
    files = [tmp_path / "exp" / e["file"] for e in index[1:]]
    for e, (meta, arrays) in zip(index[1:], read_plain_all(files, tmp_path)):
        row = {k: v for k, v in rows[(e["id"], e["dataset"])].items() if k not in by_run}
        assert_attrs_match_row(meta["nc_attrs"], row)
        assert meta["nc_attrs"]["module"] == "hypotheses/claims.py"
        assert meta["nc_attrs"]["outcome"] == ("failed" if e["id"] == "B5-null" else "passed")


def test_cli_export_errors_are_clear_and_write_nothing(datasets, tmp_path, monkeypatch, capsys):
    from lie_stats.cli import main

    folder = tmp_path / "hypotheses"
    folder.mkdir()
    (folder / "claims.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    # refused before any evaluation: in this process
    assert main(["export", "hypotheses/claim.py", "--datasets", str(datasets), "-o", "exp"]) == 2
    assert ("hypotheses/claim.py: no such hypothesis module or folder. Did you mean 'claims.py'?"
            in capsys.readouterr().err)
    (tmp_path / "exp").write_text("a file")
    assert main(["export", "hypotheses", "--datasets", str(datasets), "-o", "exp"]) == 2
    assert "exp: the export folder is an existing file, not a folder" in capsys.readouterr().err
    assert (tmp_path / "exp").read_text() == "a file"
    # refused after collection, before any evaluation, in a process of its own
    (folder / "broken.py").write_text("from lie_stats.spec import Select\n\ndef broken(:\n")
    proc = cli("export", "hypotheses", "--datasets", datasets, "-o", "exp2", cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot export: hypothesis module(s) could not be collected" in proc.stderr
    assert "broken.py" in proc.stderr and "SyntaxError: invalid syntax" in proc.stderr
    assert proc.stdout == ""  # nothing was evaluated
    assert not (tmp_path / "exp2").exists()
    empty = tmp_path / "empty" / "hypotheses"
    empty.mkdir(parents=True)
    proc = cli("export", empty, "--datasets", datasets, "-o", "exp2", cwd=tmp_path)
    assert proc.returncode == 2 and "no hypothesis was evaluated" in proc.stderr
    assert not (tmp_path / "exp2").exists()


def test_a_real_bundled_hypothesis_exports_what_the_run_reports(tmp_path):
    """B6 on the bundled pico_pythia cube: the run's row and the cube's own values."""
    proc = cli("run", REPO / "hypotheses" / "B6_value_norm_predicts_change.py", "--datasets",
               REPO / "datasets", "--reports", tmp_path / "rep", "--export", tmp_path / "exp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {r["id"]: r for r in json.loads((tmp_path / "rep" / "results.json").read_text())}
    from hypotheses.B6_value_norm_predicts_change import B6

    cube = load_dataset("pico_pythia", REPO / "datasets")  # its two cube files, merged
    meta, arrays = read_plain(tmp_path / "exp" / "B6__pico_pythia.nc", tmp_path)
    assert_attrs_match_row(meta["nc_attrs"], rows["B6"])
    assert meta["nc_attrs"]["verdict"] == rows["B6"]["verdict"] and meta["nc_attrs"]["spec_hash"] == B6.spec_hash()
    for role, sel in B6.selection.items():
        expected = select(sel, cube)
        assert expected.dtype == np.float32
        assert same(arrays[f"nc/{role}"], expected.values)
        assert meta["nc_vars"][role]["attrs"]["definition"] == schema.VARIABLES[sel.metric].definition
    prov = json.loads(meta["nc_attrs"]["provenance"])
    steps = sorted({int(select(sel, cube)["step"]) for sel in B6.selection.values()})  # x at init, y at the end
    assert [(p["model"], p["step"]) for p in prov] == [("p96_s0", s) for s in steps]
    files = json.loads(meta["nc_attrs"]["dataset_cubes"])
    assert [f["cube"] for f in files] == ["datasets/pico_pythia/pico_pythia.nc", "datasets/pico_pythia/pico_sweep.nc"]


# ----------------------------------------------------------------------------- without pytest


def write_claims(tmp_path, name, *extra: str):
    """A hypotheses folder with ``<name>.py`` (MODULE) and ``<name>_<i>.py`` for each extra
    text; names differ between tests, since an imported module keeps its name in this process."""
    folder = tmp_path / "hypotheses"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(MODULE))
    for i, text in enumerate(extra):
        (folder / f"{name}_{i}.py").write_text(textwrap.dedent(text))
    return folder


def test_export_runs_no_pytest_session_and_applies_the_gates(datasets, tmp_path, monkeypatch):
    folder = write_claims(tmp_path, "gated_claims")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pytest, "main", lambda *a, **k: pytest.fail("export started a pytest session"))
    done = export.export_hypotheses(["hypotheses"], "exp", datasets_dir=datasets)
    assert done.status == 1 and done.failures == [
        "B5-null::synth: replication gate: verdict 'refuted', needs 'supported' "
        f"({next(r.reason for r in done.results if r.id == 'B5-null')})"]
    assert [(r.id, r.dataset, r.outcome) for r in done.results] == [
        ("B5", "absent", "skipped"), ("B5", "synth", "passed"), ("B5-null", "synth", "failed")]
    assert not (folder / "verdicts.json").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "exp", "hypotheses"]
    # re-pinning writes the registry beside the module, as lie-stats run --update-verdicts
    again = export.export_hypotheses(["hypotheses"], "exp", datasets_dir=datasets, update_verdicts=True)
    pins = json.loads((folder / "verdicts.json").read_text())
    assert set(pins) == {"B5::synth", "B5-null::synth"} and pins["B5-null::synth"]["verdict"] == "refuted"
    assert again.status == 1  # a replication that is not supported still fails


def test_node_ids_select_items_and_run_export_writes_the_reports(datasets, tmp_path, monkeypatch):
    write_claims(tmp_path, "node_claims")
    monkeypatch.chdir(tmp_path)
    done = export.export_hypotheses(["hypotheses/node_claims.py::B5[synth]", "hypotheses/node_claims.py::B5-null"],
                                    "exp", datasets_dir=datasets, reports_dir="rep")
    assert [(e["id"], e["dataset"]) for e in done.entries] == [("B5", "synth"), ("B5-null", "synth")]
    rows = {(r["id"], r["dataset"]): r for r in json.loads((tmp_path / "rep" / "results.json").read_text())}
    assert set(rows) == {("B5", "synth"), ("B5-null", "synth")}
    assert (tmp_path / "rep" / "report.md").is_file() and (tmp_path / "rep" / "figures" / "B5__synth.png").is_file()
    with xr.open_dataset(tmp_path / "exp" / "B5-null__synth.nc") as ds:
        assert ds.attrs["outcome"] == "failed" and ds.attrs["p_holm"] == rows[("B5-null", "synth")]["p_holm"]
        assert ds.attrs["module"] == rows[("B5-null", "synth")]["module"] == "hypotheses/node_claims.py"


DUPLICATE = '''
from lie_stats.spec import HypothesisSpec, Prediction, Select

AGAIN = HypothesisSpec(
    id="B5", claim="another claim", source="essay", datasets=("synth",), test="correlation",
    selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
    params={"n_perm": 199, "n_boot": 50}, prediction=Prediction("negative"), gate="report")
'''


def test_bad_modules_refuse_a_strict_export_and_fail_a_lenient_one(datasets, tmp_path, monkeypatch):
    folder = write_claims(tmp_path, "bad_claims", DUPLICATE, "def broken(:\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match="could not be collected") as err:
        export.export_hypotheses(["hypotheses"], "exp", datasets_dir=datasets)
    text = str(err.value)
    assert "bad_claims_0.py: SpecError: " in text and "field 'id': the id is already declared by" in text
    assert "hypotheses/bad_claims.py::REP" in text and "bad_claims_1.py: SyntaxError: invalid syntax" in text
    assert not (tmp_path / "exp").exists()
    done = export.export_hypotheses(["hypotheses"], "exp", datasets_dir=datasets, strict=False)
    assert done.status == 1 and len(done.failures) == 3  # two modules, and B5-null's gate
    assert {e["id"] for e in done.entries} == {"B5", "B5-null"}
    assert {r.claim for r in done.results if r.id == "B5"} == {"contribution predicts change"}
    assert [f.split(": ", 1)[0] for f in done.failures[:2]] == [
        str(folder / "bad_claims_0.py"), str(folder / "bad_claims_1.py")]


def test_export_collects_the_declarations_pytest_collects():
    """The bundled hypotheses: the export's collection gives pytest's items, in its order."""
    from lie_stats import collect

    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "hypotheses", "--collect-only", "-q",
                           "-p", "no:cacheprovider"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    by_pytest = [line for line in proc.stdout.splitlines() if "::" in line]
    found = collect.collect([REPO / "hypotheses"], datasets_dir=REPO / "datasets", base=REPO)
    assert found.errors == []
    mine = [f"{d.path.relative_to(REPO).as_posix()}::{d.item_name(ds)}"
            for d in found.declarations for ds in (d.datasets or (None,))]
    assert len(mine) > 90 and mine == by_pytest
