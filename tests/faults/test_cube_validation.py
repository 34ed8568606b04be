"""Cube files whose coordinates lie, and files that declare hostile sizes.

Each case is a real NetCDF file written with xarray or netCDF4 directly (bypassing
``write_cube``'s own validation, as a file from elsewhere would): NaN in the layer
coordinate, the same model or step twice, ``n_layers``/``n_heads`` claims that contradict
where the variables hold data, and a 17 KB file declaring an 18.6 GiB variable. ``open_cube``
(and so ``lie-stats info``) must refuse each with a :class:`CubeError` naming the file, the
coordinate and what was expected, and the size bomb before anything is allocated.
"""

from __future__ import annotations

import pathlib
import resource

import numpy as np
import pytest
import xarray as xr

from lie_stats import cli, schema
from lie_stats.cube import merge_shards, open_cube, validate_cube, write_cube
from lie_stats.errors import CubeError

from .._cubes import random_shard


@pytest.fixture(scope="module")
def cube() -> xr.Dataset:
    """Two models (2 layers x 4 heads, 1 layer x 2 heads, NaN-padded) at steps 0 and 10."""
    return merge_shards([random_shard("a", 0, 2, 4), random_shard("a", 10, 2, 4),
                         random_shard("b", 0, 1, 2), random_shard("b", 10, 1, 2)])


def _raw_write(ds: xr.Dataset, path: pathlib.Path) -> pathlib.Path:
    ds.to_netcdf(path, engine="netcdf4")
    return path


def _refused(path: pathlib.Path, capsys, *texts: str) -> str:
    with pytest.raises(CubeError) as e:
        open_cube(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: "), msg
    for t in texts:
        assert t in msg, msg
    assert cli.main(["info", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "valid: yes" not in err and str(path) in err and "Traceback" not in err
    return msg


def test_the_fixture_is_a_valid_cube(cube, tmp_path, capsys):
    path = _raw_write(cube, tmp_path / "good.nc")
    validate_cube(open_cube(path))
    assert cli.main(["info", str(path)]) == cli.EXIT_OK
    assert "valid: yes" in capsys.readouterr().out


def test_nan_in_the_layer_coordinate(cube, tmp_path, capsys):
    bad = cube.assign_coords(layer=np.array([0.0, np.nan]))
    _refused(_raw_write(bad, tmp_path / "nan.nc"), capsys, "coordinate 'layer' holds nan at position 1",
             "expected integer labels")


def test_layers_not_numbered_from_zero(cube, tmp_path, capsys):
    bad = cube.assign_coords(layer=np.array([1, 0]))
    _refused(_raw_write(bad, tmp_path / "order.nc"), capsys, "coordinate 'layer' is [1, 0]", "expected 0..1")


def test_the_same_model_twice(cube, tmp_path, capsys):
    bad = cube.assign_coords(model=np.array(["a", "a"], dtype=object))
    _refused(_raw_write(bad, tmp_path / "dupmodel.nc"), capsys, "coordinate 'model' holds 'a' more than once")


def test_the_same_step_twice(cube, tmp_path, capsys):
    bad = cube.assign_coords(step=np.array([10, 10]))
    _refused(_raw_write(bad, tmp_path / "dupstep.nc"), capsys, "coordinate 'step' holds 10 more than once")


@pytest.mark.parametrize("coord, model, value, texts", [
    ("n_layers", 0, 1, ["model 'a' claims n_layers=1", "layers 0..1 (2)"]),
    ("n_layers", 1, 2, ["model 'b' claims n_layers=2", "layers 0..0 (1)"]),
    ("n_heads", 0, 3, ["model 'a' claims n_heads=3", "heads 0..3 (4)"]),
    ("n_heads", 1, 9, ["model 'b' claims n_heads=9", "expected an integer from 1 to 4"]),
])
def test_shape_claims_that_contradict_the_data(cube, tmp_path, capsys, coord, model, value, texts):
    values = cube[coord].values.copy()
    values[model] = value
    bad = cube.assign_coords({coord: (schema.MODEL, values)})
    _refused(_raw_write(bad, tmp_path / f"{coord}.nc"), capsys, *texts)


def test_a_false_n_layers_cannot_misdirect_a_selection_in_memory(cube):
    """validate_cube (used on in-memory cubes too) refuses the same lie."""
    values = cube["n_layers"].values.copy()
    values[0] = 1
    with pytest.raises(CubeError, match="claims n_layers=1"):
        validate_cube(cube.assign_coords(n_layers=(schema.MODEL, values)), where="mem")


def test_a_header_declaring_18_GiB_fails_fast_without_allocating(tmp_path, capsys):
    import netCDF4

    path = tmp_path / "bomb.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.setncatts({"metrics_version": 1, "lie_stats_version": "0", "provenance": "[]",
                      "Conventions": "CF-1.10"})
        nc.createDimension("model", 50000)
        nc.createDimension("step", 50000)
        nc.createVariable("ov_norm", "f8", ("model", "step"), zlib=True)
    assert path.stat().st_size < 100_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    msg = _refused(path, capsys, "declares 18.6 GiB of variables", "'ov_norm'", "(50000, 50000)",
                   "over the bound of 4.0 GiB", "nothing was read")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000, msg  # KiB


def test_a_cube_within_a_raised_bound_opens(cube, tmp_path):
    path = write_cube(cube, tmp_path / "ok.nc")
    with pytest.raises(CubeError, match="over the bound"):
        open_cube(path, max_bytes=1000)
    assert open_cube(path, max_bytes=10**9).sizes[schema.MODEL] == 2
