"""Malformed cubes given to every public function that takes one.

Each bad cube is a real Dataset (or a real file on disk for ``load_dataset``); each
function must raise :class:`~lie_stats.errors.CubeError` naming the argument or file and
the variable / dimension at fault, never an ``AttributeError`` / ``KeyError`` from xarray.
(Opening non-NetCDF files, wrong dims and newer ``metrics_version`` through ``open_cube``
are in ``tests/test_cube.py``; this file covers the other entry points.)
"""

from __future__ import annotations

import pytest
import xarray as xr

from lie_stats import cube, schema
from lie_stats.datasets import load_dataset
from lie_stats.errors import CubeError
from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube

from .._cubes import random_shard


@pytest.fixture(scope="module")
def good() -> xr.Dataset:
    return cube.merge_shards([random_shard("m", s, 2, 3) for s in (0, 10, 20)])


# name -> (make the bad cube from a good one, texts the error must hold)
BAD = {
    "dataarray": (lambda g: g["ov_norm"], ["expected an xarray.Dataset cube, got DataArray"]),
    "dict": (lambda g: {"ov_norm": g["ov_norm"].values}, ["expected an xarray.Dataset cube, got dict"]),
    "none": (lambda g: None, ["expected an xarray.Dataset cube, got NoneType"]),
    "no_step_dim": (lambda g: g.isel({schema.STEP: 0}, drop=True), ["'step'"]),
    "renamed_dim": (lambda g: g.rename({schema.HEAD: "heads"}), ["'heads'", "expected"]),
    "transposed_var": (lambda g: g.assign(head_contribution=g["head_contribution"].transpose(
        schema.STEP, schema.MODEL, ...)), ["'head_contribution'", "expected ('model', 'step', 'layer', 'head')"]),
    "newer_version": (lambda g: g.assign_attrs({schema.ATTR_METRICS_VERSION: schema.METRICS_VERSION + 1}),
                      ["metrics_version", "newer than this lie_stats knows"]),
    "provenance_not_json": (lambda g: g.assign_attrs({schema.ATTR_PROVENANCE: "{not json"}),
                            ["'provenance': not valid JSON", "expected a JSON list of objects"]),
    "unknown_variable": (lambda g: g.rename({"ov_norm": "ov_nrom"}), ["'ov_nrom'", "Did you mean 'ov_norm'"]),
}

# describe_cube describes a cube that breaks the contract (and says so); it refuses only what
# it cannot describe.
DESCRIBE_REFUSES = {"dataarray", "dict", "none", "no_step_dim", "provenance_not_json"}


@pytest.mark.parametrize("bad", sorted(BAD))
def test_write_cube_refuses_and_writes_nothing(good, tmp_path, bad):
    make, texts = BAD[bad]
    out = tmp_path / "x.nc"
    with pytest.raises(CubeError) as e:
        cube.write_cube(make(good), out)
    assert str(out) in str(e.value) and all(t in str(e.value) for t in texts), str(e.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", sorted(BAD))
def test_merge_shards_names_the_bad_shard(good, bad):
    make, texts = BAD[bad]
    with pytest.raises(CubeError) as e:
        cube.merge_shards([random_shard("n", 0, 2, 3), make(good)])
    msg = str(e.value)
    assert "shard 1 of 2" in msg and all(t in msg for t in texts), msg


@pytest.mark.parametrize("bad", sorted(DESCRIBE_REFUSES))
def test_describe_cube_refuses_what_it_cannot_describe(good, bad):
    make, texts = BAD[bad]
    with pytest.raises(CubeError) as e:
        cube.describe_cube(make(good), where="mailed.nc")
    msg = str(e.value)
    assert msg.startswith("mailed.nc: ") and all(t in msg for t in texts), msg


@pytest.mark.parametrize("bad", sorted(set(BAD) - DESCRIBE_REFUSES))
def test_describe_cube_says_why_a_cube_is_not_valid(good, bad):
    make, texts = BAD[bad]
    text = cube.describe_cube(make(good), where="mailed.nc")
    last = text.splitlines()[-1]
    assert last.startswith("  valid: NO (mailed.nc: ") and all(t in last for t in texts), last
    assert cube.describe_cube(good, where="ok.nc").splitlines()[-1] == "  valid: yes"


@pytest.mark.parametrize("bad", ["dataarray", "dict", "none"])
def test_provenance_of_refuses_a_non_dataset(good, bad):
    make, texts = BAD[bad]
    with pytest.raises(CubeError, match=texts[0]):
        cube.provenance_of(make(good))


# ---------------------------------------------------------------------------- load_dataset
def _card(root, name: str, files: list[str]):
    folder = root / name
    folder.mkdir(parents=True)
    cubes = ", ".join(f'"{f}"' for f in files)
    (folder / "dataset.toml").write_text(f'name = "{name}"\ntitle = "T"\ncubes = [{cubes}]\nbuild = "make"\n')
    return folder


def _raw_netcdf(ds: xr.Dataset, path) -> None:
    """Write a Dataset as NetCDF without write_cube's validation (a collaborator's file)."""
    ds.to_netcdf(path, engine="netcdf4")


LOAD_BAD = {
    "not_netcdf": (lambda g, p: p.write_bytes(b"CDF? no: a spreadsheet\n" * 20), ["not a readable NetCDF4 cube"]),
    "empty_file": (lambda g, p: p.write_bytes(b""), ["not a readable NetCDF4 cube"]),
    "renamed_dim": (lambda g, p: _raw_netcdf(g.rename({schema.HEAD: "heads"}), p), ["'heads'"]),
    "newer_version": (lambda g, p: _raw_netcdf(
        g.assign_attrs({schema.ATTR_METRICS_VERSION: schema.METRICS_VERSION + 1}), p), ["newer than"]),
    "unknown_variable": (lambda g, p: _raw_netcdf(g.rename({"ov_norm": "ov_nrom"}), p),
                         ["'ov_nrom'", "Did you mean 'ov_norm'"]),
    "no_model_coord": (lambda g, p: _raw_netcdf(g.drop_vars("n_layers"), p), ["missing coordinate 'n_layers'"]),
    "no_metrics_version": (lambda g, p: _raw_netcdf(g.drop_attrs(deep=False), p), ["'metrics_version'"]),
}


@pytest.mark.parametrize("bad", sorted(LOAD_BAD))
@pytest.mark.parametrize("position", [0, 1])
def test_load_dataset_names_the_malformed_file(good, tmp_path, bad, position):
    """One malformed file among a dataset's two cube files: the error names that file."""
    make, texts = LOAD_BAD[bad]
    files = ["a.nc", "b.nc"]
    folder = _card(tmp_path, "d", files)
    cube.write_cube(random_shard("other", 0, 2, 3), folder / files[1 - position])
    make(good, folder / files[position])
    with pytest.raises(CubeError) as e:
        load_dataset("d", tmp_path)
    msg = str(e.value)
    assert str((folder / files[position]).resolve()) in msg and all(t in msg for t in texts), msg


# ---------------------------------------------------------------------------- evaluate_cube
def _spec() -> HypothesisSpec:
    # built in a function: a module-level HypothesisSpec would be collected as a hypothesis
    return HypothesisSpec(
        id="F1", claim="c", source="s", datasets=("toy",),
        selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
        test="correlation", params={"n_perm": 99, "n_boot": 20}, prediction=Prediction("negative"),
        gate="report")


@pytest.mark.parametrize("bad", ["dataarray", "dict", "none", "no_step_dim"])
def test_evaluate_cube_refuses_a_non_cube(good, bad):
    make, texts = BAD[bad]
    with pytest.raises(CubeError):
        evaluate_cube(_spec(), make(good), dataset="mailed")


def test_evaluate_cube_refuses_a_cube_without_the_variable_and_says_which(good):
    from lie_stats.spec import SelectionError

    with pytest.raises(SelectionError, match="the cube has no variable 'change_from_init'"):
        evaluate_cube(_spec(), good.drop_vars("change_from_init"), dataset="mailed")
