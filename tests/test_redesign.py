"""lie-stats diagnose --redesign: power and FPR at other sizes of a result's design, and the
minimum detectable effect of a result that declares no effect to plant.

The trend kind tests over runs by sign flips, whose smallest one-sided p is ``2^-R`` for R
runs: a trend planted far above the noise is supported (p < alpha / 2 = 0.025) in every
simulation from 6 runs on and in none below (2^-5 = 0.031): the power curve over runs is
0, 0, 1, 1 at 4, 5, 6, 8 runs, which the redesign must reproduce from 3 observed runs.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from lie_stats.diagnosis import Settings
from lie_stats.diagnosis import redesign as R
from lie_stats.errors import LieStatsError
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._spec_cubes import make_datasets

FAST = Settings(n_sims=12, seed=0, n_perm=99, n_boot=49)
STEPS = np.array([0, 10, 100, 300, 1000, 3000])


def runs_cube(n_runs: int = 3, seed: int = 0) -> xr.DataArray:
    """Noise [model, step, layer, head] (3 layers x 4 heads, 6 checkpoints), no trend."""
    rng = np.random.default_rng(seed)
    return xr.DataArray(rng.normal(size=(n_runs, STEPS.size, 3, 4)),
                        dims=("model", "step", "layer", "head"),
                        coords={"model": [f"r{i}" for i in range(n_runs)], "step": STEPS,
                                "layer": np.arange(3), "head": np.arange(4)})


def trend_spec(reference=None) -> HypothesisSpec:
    return HypothesisSpec(
        id="T1", claim="rises over training", source="test", datasets=("toy",), test="trend",
        selection={"values": Select("abelian_fraction", step="all", family="QK", projection="none")},
        params={"n_perm": 999}, prediction=Prediction("positive"), gate="report",
        reference=reference or {})


def correlation_spec(reference=None) -> HypothesisSpec:
    return HypothesisSpec(
        id="C1", claim="contribution predicts change", source="test", datasets=("toy",),
        test="correlation", params={"n_perm": 99},
        selection={"x": Select("head_contribution", step="first"), "y": Select("change_from_init")},
        prediction=Prediction("negative"), gate="report", reference=reference or {})


def test_parse_redesign_reads_axis_and_sizes_and_refuses_the_rest():
    assert R.parse_redesign("runs=16,2,4") == ("runs", (2, 4, 16))
    assert R.parse_redesign("effect=0.3,0.1") == ("effect", (0.1, 0.3))
    for bad in ("runs", "layers=2", "runs=2.5", "runs=0", "heads=", "effect=x"):
        with pytest.raises(LieStatsError, match="--redesign"):
            R.parse_redesign(bad)


def test_resample_keeps_runs_whole_and_heads_within_their_layer():
    da = runs_cube()
    # mark each value with its run, layer and head so that a resample can be traced back
    marks = (np.arange(3)[:, None, None, None] * 100 + np.arange(3)[None, None, :, None] * 10
             + np.arange(4)[None, None, None, :]) + 0 * da.values
    da = da.copy(data=marks)
    out = R.resample({"values": da, "other": da}, {"runs": 7, "heads": 9},
                     np.random.default_rng(1))["values"]
    assert out.sizes["model"] == 7 and out.sizes["head"] == 9
    assert len(set(out["model"].values.tolist())) == 7  # the kinds see distinct runs
    v = out.values
    run, layer, head = v // 100, (v // 10) % 10, v % 10
    # a resampled run is one observed run throughout; a layer holds only its own heads
    assert (run == run[:, :1, :1, :1]).all()
    assert (layer == np.arange(3)[None, None, :, None]).all()
    # the same heads at every checkpoint
    assert (head == head[:, :1]).all()
    assert set(head.ravel().tolist()) <= {0, 1, 2, 3}
    steps = R.resample({"values": da}, {"steps": 9}, np.random.default_rng(2))["values"]["step"].values
    assert steps.size == 9 and np.all(np.diff(steps) > 0)  # repeats moved apart, in order


def test_resample_says_why_a_selection_has_no_such_structure():
    da = runs_cube().isel(model=0, drop=True)
    with pytest.raises(R.NotPlantable, match="runs"):
        R.resample({"values": da}, {"runs": 4}, np.random.default_rng(0))


def test_power_over_runs_is_monotone_and_reaches_08_at_six_runs():
    spec = trend_spec({"first": 0.0, "last": 50.0})  # 50 sd of the noise: every run rises
    out = R.redesign_arrays(spec, {"values": runs_cube()}, "runs", [2, 4, 5, 6, 8], FAST)
    assert out.mode == "power" and out.current == 3
    power = [r.power for r in out.rows]
    # below 6 runs the smallest p (2^-R) is not below alpha / 2: never supported
    assert power[:3] == [0.0, 0.0, 0.0]
    assert power[3] >= 0.8 and power[4] >= 0.8
    assert all(b >= a - 0.15 for a, b in zip(power, power[1:]))  # monotone within MC error
    assert out.smallest() == "smallest runs with power >= 0.8: 6"
    assert all(r.fpr is not None and r.fpr <= 0.35 for r in out.rows)
    few = R.redesign_arrays(spec, {"values": runs_cube()}, "runs", [2, 4], FAST)
    assert few.smallest() == "power >= 0.8 not reached up to runs 4"
    text = R.redesign_table([out, few])
    assert "smallest runs with power >= 0.8: 6" in text and "not reached up to runs 4" in text


def test_a_weak_planted_trend_has_less_power_than_a_strong_one():
    arrays = {"values": runs_cube()}
    weak = R.power_at(trend_spec({"first": 0.0, "last": 0.05}), arrays, FAST, {"runs": 8})
    strong = R.power_at(trend_spec({"first": 0.0, "last": 50.0}), arrays, FAST, {"runs": 8})
    assert weak["power"] < 0.5 <= strong["power"]


def test_minimum_detectable_effect_is_finite_and_larger_at_fewer_runs():
    rng = np.random.default_rng(0)
    coords = {"model": [f"r{i}" for i in range(4)], "layer": np.arange(3), "head": np.arange(6)}
    x, y = (xr.DataArray(rng.normal(size=(4, 3, 6)), dims=("model", "layer", "head"), coords=coords)
            for _ in range(2))
    spec = correlation_spec()  # no reference rho: nothing to plant
    settings = Settings(n_sims=10, seed=0, n_perm=49, n_boot=19)
    out = R.redesign_arrays(spec, {"x": x, "y": y}, "runs", [1, 4], settings, mde_steps=4)
    assert out.mode == "mde" and "rho" in out.scale
    one, four = (r.mde for r in out.rows)
    assert one is not None and four is not None
    assert -0.95 <= one < 0 and -0.95 <= four < 0  # on the predicted (negative) side
    assert abs(one) > abs(four)  # 18 heads per layer against 72


def test_effect_axis_plants_each_value_and_a_kind_without_a_scale_says_so():
    arrays = {"values": runs_cube(8)}
    out = R.redesign_arrays(trend_spec(), arrays, "effect", [0.01, 50.0], FAST)
    assert out.rows[0].power < out.rows[1].power and out.rows[1].power >= 0.8
    rng = np.random.default_rng(0)
    group = HypothesisSpec(
        id="G1", claim="c", source="test", datasets=("toy",), test="group_difference",
        selection={"x": Select("change_from_init"), "group": Select("head_label")},
        prediction=Prediction("positive"), gate="report")
    da = xr.DataArray(rng.normal(size=(3, 4)), dims=("layer", "head"))
    lab = xr.DataArray(rng.integers(0, 2, size=(3, 4)).astype(float), dims=("layer", "head"))
    none = R.redesign_arrays(group, {"x": da, "group": lab}, "heads", [4], FAST)
    assert not none.rows and "no planted-effect scale" in none.reason
    assert "no redesign" in R.redesign_table([none])


def test_the_diagnose_verb_prints_the_redesign_and_plots_it(tmp_path, capsys):
    import sys

    from lie_stats.cli import main

    root = make_datasets(tmp_path / "datasets")
    hyp = tmp_path / "hyp_redesign"
    hyp.mkdir()
    (hyp / "redesign_demo.py").write_text(
        "from lie_stats.spec import HypothesisSpec, Prediction, Select\n"
        "B5 = HypothesisSpec(id='B5', claim='c', source='s', datasets=('synth',),\n"
        "    selection={'x': Select('head_contribution', step='first'),\n"
        "               'y': Select('change_from_init')},\n"
        "    test='correlation', params={'n_perm': 99, 'n_boot': 50},\n"
        "    prediction=Prediction('negative'), reference={'rho': -0.6}, gate='report')\n",
        encoding="utf-8")
    sys.modules.pop("redesign_demo", None)
    plot = tmp_path / "out" / "curve.png"
    assert main(["diagnose", str(hyp), "--datasets", str(root), "--redesign", "heads=2,12",
                 "--n-sims", "4", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "B5::synth" in out and "(now 12 heads)" in out and "power >= 0.8" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (hyp / "diagnosis.json").exists()  # a redesign is not cached
    # the default figure goes beside the cache
    assert main(["diagnose", str(hyp), "--datasets", str(root), "--redesign", "heads=12",
                 "--n-sims", "2"]) == 0
    assert (hyp / "redesign-heads.png").is_file()
    assert main(["diagnose", str(hyp), "--datasets", str(root), "--redesign", "layers=2"]) == 2
    assert main(["diagnose", str(hyp), "--datasets", str(root), "--plot", "x.png"]) == 2
