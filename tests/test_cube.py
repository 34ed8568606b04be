"""Cube assembly, validation and the exact NetCDF round trip (DESIGN.md, cube)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings, strategies as st

from lie_stats import cube, schema
from lie_stats.errors import CubeError

from ._cubes import random_shard


def assert_exact(a: xr.Dataset, b: xr.Dataset) -> None:
    """assert_identical plus dtypes and attributes of every variable (assert_identical alone misses a dtype change)."""
    xr.testing.assert_identical(a, b)
    for name in a.variables:
        assert a[name].dtype == b[name].dtype, name
        assert set(a[name].attrs) == set(b[name].attrs), name
    assert set(a.attrs) == set(b.attrs)
    for k in a.attrs:
        assert np.array_equal(a.attrs[k], b.attrs[k]), k


@settings(max_examples=15, deadline=None)
@given(
    shapes=st.lists(st.tuples(st.integers(1, 3), st.integers(2, 4)), min_size=1, max_size=3),
    steps=st.lists(st.integers(0, 10_000), min_size=1, max_size=3, unique=True),
    projections=st.sampled_from([("none",), ("none", "fixed:64"), ("adaptive", "none")]),
)
def test_round_trip_is_exact(tmp_path_factory, shapes, steps, projections):
    shards = [
        random_shard(f"m{i}", s, L, H, projections=projections, seed=i)
        for i, (L, H) in enumerate(shapes) for s in steps
    ]
    merged = cube.merge_shards(shards[::-1])
    path = tmp_path_factory.mktemp("rt") / "c.nc"
    cube.write_cube(merged, path)
    assert_exact(merged, cube.open_cube(path))


def test_merge_pads_models_of_different_shapes_with_nan():
    merged = cube.merge_shards([random_shard("small", 0, 1, 2), random_shard("big", 0, 3, 4)])
    assert merged.sizes[schema.LAYER] == 3 and merged.sizes[schema.HEAD] == 4
    small = merged["ov_norm"].sel(model="small", step=0)
    assert np.isnan(small.sel(layer=2)).all() and np.isnan(small.sel(head=3)).all()
    assert np.isfinite(small.sel(layer=0, head=[0, 1])).all()
    assert merged["n_heads"].sel(model="small").item() == 2
    # values are carried, not shuffled: the shard's numbers are where they were
    shard = random_shard("big", 0, 3, 4)
    np.testing.assert_array_equal(merged["commutator"].sel(model="big", step=0).values,
                                  shard["commutator"].isel(model=0, step=0).values)


def test_merge_orders_steps_and_keeps_provenance_per_checkpoint():
    merged = cube.merge_shards([random_shard("m", 100, 1, 2), random_shard("m", 3, 1, 2)])
    assert merged[schema.STEP].values.tolist() == [3, 100]
    prov = cube.provenance_of(merged)
    assert [p["step"] for p in prov] == [3, 100]


def test_duplicate_checkpoint_is_an_error():
    with pytest.raises(CubeError, match="appears twice"):
        cube.merge_shards([random_shard("m", 1, 1, 2), random_shard("m", 1, 1, 2)])


def test_failed_checkpoints_are_recorded():
    merged = cube.merge_shards([random_shard("m", 1, 1, 2)],
                               failed=[{"source": "x/step_2", "revision": None, "error": "truncated"}])
    assert json.loads(merged.attrs[schema.ATTR_FAILED])[0]["error"] == "truncated"


def test_shard_rejects_wrong_shape_and_unknown_name():
    shape = random_shard("m", 0, 1, 2)
    kw = dict(model="m", step=0, shape={n: shape[n].values[0] for n in schema.MODEL_COORDS},
              families=["Q"], projections=["none"], provenance={})
    with pytest.raises(CubeError, match=r"expected shape \(1, 2\)"):
        cube.checkpoint_shard({"ov_norm": np.ones((2, 2))}, **kw)
    with pytest.raises(CubeError, match="Did you mean 'ov_norm'"):
        cube.checkpoint_shard({"ov_nrm": np.ones((1, 2))}, **kw)


def test_validation_errors_name_the_problem(tmp_path):
    good = random_shard("m", 0, 1, 2)
    with pytest.raises(CubeError, match="wrong.nc: variable 'ov_norm' has dims"):
        cube.validate_cube(good.assign(ov_norm=good["ov_norm"].transpose("step", "model", ...)),
                           where="wrong.nc")
    newer = good.copy()
    newer.attrs[schema.ATTR_METRICS_VERSION] = schema.METRICS_VERSION + 1
    with pytest.raises(CubeError, match="newer than this lie_stats knows"):
        cube.validate_cube(newer)
    with pytest.raises(CubeError, match="expected an xarray.Dataset"):
        cube.validate_cube(good["ov_norm"])
    renamed = good.rename({"layer": "layers"})
    with pytest.raises(CubeError, match="has dims"):
        cube.validate_cube(renamed)


def test_open_rejects_non_netcdf_and_missing_files(tmp_path):
    bogus = tmp_path / "not_a_cube.nc"
    bogus.write_text("hello")
    with pytest.raises(CubeError, match="not_a_cube.nc: not a readable NetCDF4 cube"):
        cube.open_cube(bogus)
    with pytest.raises(CubeError, match="no such cube file"):
        cube.open_cube(tmp_path / "absent.nc")


def test_write_is_atomic_and_leaves_old_file_on_failure(tmp_path):
    path = tmp_path / "c.nc"
    good = random_shard("m", 0, 1, 2)
    cube.write_cube(good, path)
    before = path.read_bytes()
    bad = good.copy()
    bad.attrs["unserializable"] = {"a": 1}  # netCDF4 cannot store a dict: the write fails
    with pytest.raises(TypeError, match="Invalid value for attr 'unserializable'"):  # xarray's own check
        cube.write_cube(bad, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.nc"]


def test_describe_mentions_models_variables_and_validity():
    text = cube.describe_cube(cube.merge_shards([random_shard("m", 0, 2, 3)]), where="x.nc")
    assert "m: gpt_neox, 2 layers x 3 heads" in text
    assert "commutator_var" in text and "METRICS.md §4.1" in text
    assert "valid: yes" in text
