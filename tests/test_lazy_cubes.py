"""Lazy cubes: ``open_cube(path, chunks=...)`` / ``load_dataset(name, chunks=...)`` are Dask-backed
and equal to the eager ones; ``created`` is the build time, whether one cube or several are opened."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import lie_stats as ls
from lie_stats import cube, schema
from lie_stats.errors import CubeError
from tests._spec_cubes import pair_cube, synth_cube


def _with_created(ds: xr.Dataset, when: str) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs[schema.ATTR_CREATED] = when
    return ds


@pytest.fixture
def two_cube_dataset(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "dataset.toml").write_text('name = "c"\ntitle = "T"\ncubes = ["s.nc", "p.nc"]\nbuild = "b"\n')
    cube.write_cube(_with_created(synth_cube(), "2026-01-02T03:04:05+00:00"), folder / "s.nc")
    cube.write_cube(_with_created(pair_cube(), "2026-02-01T00:00:00+00:00"), folder / "p.nc")
    return tmp_path


def test_open_cube_with_chunks_is_lazy_and_equal_to_the_eager_cube(tmp_path):
    path = cube.write_cube(_with_created(synth_cube(), "2026-01-02T03:04:05+00:00"), tmp_path / "s.nc")
    eager = ls.open_cube(path)
    lazy = ls.open_cube(path, chunks={})  # the file's own chunks
    try:
        for name in lazy.data_vars:
            assert isinstance(lazy[name].data, da.Array), name
        xr.testing.assert_identical(lazy.compute(), eager)
        assert lazy.attrs[schema.ATTR_CREATED] == eager.attrs[schema.ATTR_CREATED] == "2026-01-02T03:04:05+00:00"
    finally:
        lazy.close()
    assert not any(isinstance(eager[n].data, da.Array) for n in eager.data_vars)


def test_a_lazy_cube_is_validated_and_refused_like_an_eager_one(tmp_path):
    bad = synth_cube().copy()
    bad["n_layers"] = (schema.MODEL, np.array([bad.sizes[schema.LAYER] + 1]))  # claims a layer it has not
    bad.to_netcdf(tmp_path / "bad.nc", engine="netcdf4")
    for chunks in (None, {}):
        with pytest.raises(CubeError, match="claims n_layers"):
            ls.open_cube(tmp_path / "bad.nc", chunks=chunks)
    (tmp_path / "bad.nc").unlink()  # the refused lazy open left no handle that blocks this


def test_load_dataset_keeps_the_build_time_and_takes_chunks(two_cube_dataset):
    eager = ls.load_dataset("c", two_cube_dataset)
    # the latest of the cubes' build times, not the time it was opened
    assert eager.attrs[schema.ATTR_CREATED] == "2026-02-01T00:00:00+00:00"
    lazy = ls.load_dataset("c", two_cube_dataset, chunks={})
    assert isinstance(lazy["killing_self"].data, da.Array)
    assert lazy.attrs[schema.ATTR_CREATED] == "2026-02-01T00:00:00+00:00"
    xr.testing.assert_identical(lazy.compute(), eager)
    one = two_cube_dataset / "one"
    one.mkdir()
    (one / "dataset.toml").write_text('name = "one"\ntitle = "T"\ncubes = ["s.nc"]\nbuild = "b"\n')
    cube.write_cube(_with_created(synth_cube(), "2025-05-05T00:00:00+00:00"), one / "s.nc")
    assert ls.load_dataset("one", two_cube_dataset).attrs[schema.ATTR_CREATED] == "2025-05-05T00:00:00+00:00"


def test_a_merge_at_extraction_is_stamped_when_it_is_built():
    a = _with_created(synth_cube(), "2020-01-01T00:00:00+00:00")
    merged = cube.merge_shards([a])
    assert merged.attrs[schema.ATTR_CREATED] > "2026"  # now: the cube is built here
    assert cube.merge_shards([a], created=cube.built_at([a])).attrs[schema.ATTR_CREATED] == "2020-01-01T00:00:00+00:00"
