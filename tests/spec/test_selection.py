"""Selection (lie_stats.spec.selection): first / last checkpoint per model with padding,
layers counted from each model's last, reductions, clear errors, and pairwise variables kept
once per pair."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from lie_stats import schema, spec as spec_mod
from lie_stats.errors import SpecError
from lie_stats.spec import Select, select


def _cube_with_padding():
    # model "a": steps 0, 10, 20 with data; model "b": data at 10 and 20 only, 2 of 3 layers
    dims = (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    v = np.arange(2 * 3 * 3 * 2, dtype=float).reshape(2, 3, 3, 2)
    v[1, 0] = np.nan
    v[1, :, 2] = np.nan
    coords = {schema.MODEL: ["a", "b"], schema.STEP: [0, 10, 20], schema.LAYER: [0, 1, 2],
              schema.HEAD: [0, 1], "n_layers": (schema.MODEL, [3, 2])}
    return xr.Dataset({"ov_norm": (dims, v)}, coords=coords)


def test_select_first_last_per_model_respects_padding():
    cube = _cube_with_padding()
    first = select(Select("ov_norm", step="first"), cube)
    assert first.sel(model="a").values.tolist()[0] == [0.0, 1.0]  # a at step 0
    assert first.sel(model="b").values.tolist()[0] == [24.0, 25.0]  # b's first data: step 10
    assert first["step"].values.tolist() == [0, 10]
    last = select(Select("ov_norm", step="last"), cube)
    assert np.atleast_1d(last["step"].values).tolist() in ([20], [20, 20])
    assert np.isfinite(last.values).sum() == 6 + 4
    assert select(Select("ov_norm", step="all"), cube).dims == (schema.MODEL, schema.STEP, schema.LAYER, schema.HEAD)
    at = select(Select("ov_norm", step=10), cube)
    assert at.sel(model="a", layer=0).values.tolist() == [6.0, 7.0]


def test_select_negative_layers_count_from_each_models_last_layer():
    cube = _cube_with_padding()
    last_layer = select(Select("ov_norm", step="last", layers=(-1,)), cube)
    ok = np.isfinite(last_layer.values)
    # model a (3 layers): layer 2; model b (2 layers): layer 1
    assert ok[0].any(axis=1).tolist() == [False, False, True]
    assert ok[1].any(axis=1).tolist() == [False, True, False]


def test_select_reduce_models_and_errors():
    cube = _cube_with_padding()
    red = select(Select("ov_norm", step="last", reduce="mean", models=("a",)), cube)
    assert red.dims == (schema.MODEL,) and red.values.tolist() == [np.mean(np.arange(12, 18))]
    with pytest.raises(SpecError, match=r"no model 'c'\. Did you mean 'a'|no model 'c'"):
        select(Select("ov_norm", models=("c",)), cube)
    with pytest.raises(SpecError, match=r"no step 15; nearest steps: \[10, 20, 0\]"):
        select(Select("ov_norm", step=15), cube)
    with pytest.raises(spec_mod.Skip, match="no variable 'value_norm'"):
        select(Select("value_norm"), cube)


def test_pairwise_variables_keep_each_pair_once():
    v = np.arange(1 * 1 * 2 * 3 * 3, dtype=float).reshape(1, 1, 2, 3, 3)
    full = (schema.MODEL, schema.STEP, schema.FAMILY, schema.PROJECTION, schema.LAYER, schema.HEAD, schema.HEAD_J)
    cube = xr.Dataset({"commutator_raw": (full, v[:, :, None, None])},
                      coords={schema.MODEL: ["m"], schema.STEP: [0], schema.FAMILY: ["Q"],
                              schema.PROJECTION: ["none"], schema.LAYER: [0, 1], schema.HEAD: [0, 1, 2],
                              schema.HEAD_J: [0, 1, 2]})
    da = select(Select("commutator_raw", family="Q", projection="none"), cube)
    kept = np.argwhere(np.isfinite(da.values[0, 0]))
    assert kept.tolist() == [[0, 1], [0, 2], [1, 2]]  # layer 0: pairs (0,1), (0,2), (1,2) only
    assert int(np.isfinite(da.values).sum()) == 2 * 3
