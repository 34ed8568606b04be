"""The alternative nulls of the diagnosis (lie_stats.diagnosis.robust): each breaks the one
assumption it names and adds no within-layer effect, and a rule that ignores the layers is
caught by them where the design's own null cannot catch it.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

from lie_stats import diagnosis as D
from lie_stats.diagnosis import robust as R
from lie_stats.spec import HypothesisSpec, Prediction, Select

from .._spec_cubes import FAST


def layered(rng, n_layers=12, n_heads=16, n_steps=0, offsets=2.0):
    shape = (n_layers, n_heads) if not n_steps else (n_steps, n_layers, n_heads)
    dims = ("layer", "head") if not n_steps else ("step", "layer", "head")
    values = rng.normal(size=shape)
    values += offsets * rng.normal(size=(n_layers, 1))
    return xr.DataArray(values, dims=dims)


def test_numeric_roles_leave_codes_alone():
    rng = np.random.default_rng(0)
    x = layered(rng)
    label = xr.DataArray(rng.random(x.shape) < 0.3, dims=x.dims)
    coded = xr.DataArray(rng.integers(0, 3, x.shape).astype(float), dims=x.dims)
    arrays = {"x": x, "label": label, "y": coded, "mask": layered(rng)}
    assert R.numeric_roles(arrays) == ["x"]
    # eight heads' fractional scores are measurements, not codes
    few = xr.DataArray(np.array([[0.11, 0.42, 0.05, 0.3], [0.2, 0.07, 0.9, 0.33]]), dims=("layer", "head"))
    assert R.numeric_roles({"values": few}) == ["values"]
    out = R.heavy_tails(arrays, None, rng)
    assert out["label"] is label and out["y"] is coded and out["mask"] is arrays["mask"]


def test_heavy_tails_keep_layer_means_in_expectation_and_fatten_the_tails():
    rng = np.random.default_rng(1)
    x = layered(rng, n_layers=4, n_heads=4000)
    draws = [R.heavy_tails({"x": x}, None, np.random.default_rng(i))["x"] for i in range(40)]
    # weights of mean one: the average over draws is the data, cell by cell within noise
    mean = np.mean([d.values for d in draws], axis=0)
    assert abs(float(np.mean(mean - x.values))) < 0.02
    one = draws[0].values - draws[0].values.mean(axis=1, keepdims=True)
    assert sps.kurtosis(one.ravel()) > 3.0          # normal data: 0; t(3): unbounded
    assert abs(sps.kurtosis((x.values - x.values.mean(axis=1, keepdims=True)).ravel())) < 0.3


def test_stronger_dependence_doubles_the_spread_of_layer_means_and_wanders_over_steps():
    rng = np.random.default_rng(2)
    x = layered(rng, n_layers=30, n_heads=8, n_steps=12, offsets=1.0)
    base = float(np.var(x.mean(("step", "head")).values, ddof=1))
    added = []
    for i in range(200):
        out = R.stronger_dependence({"x": x}, None, np.random.default_rng(i))["x"]
        shift = (out - x).values                      # constant over heads within a (step, layer)
        assert np.allclose(shift, shift[:, :, :1])
        added.append(np.var(shift[0, :, 0], ddof=1))  # the layer offsets (the walk starts at 0)
        walk = shift[:, :, 0] - shift[0, :, 0]
        assert np.all(walk[0] == 0) and np.any(walk[-1] != 0)
    assert 0.8 * base < np.mean(added) < 1.2 * base   # the layer variance added equals the data's


def test_stronger_dependence_needs_a_layer_dimension():
    x = xr.DataArray(np.random.default_rng(0).normal(size=50), dims=("head",))
    with pytest.raises(R.NotApplicable, match="layer dimension"):
        R.stronger_dependence({"x": x}, None, np.random.default_rng(0))


def test_shared_effect_moves_whole_layers_and_leaves_every_layer_unchanged_within():
    rng = np.random.default_rng(3)
    x = layered(rng)
    label = xr.DataArray(rng.random(x.shape) < np.linspace(0.05, 0.9, 12)[:, None], dims=x.dims)
    out = R.shared_effect({"x": x, "label": label}, None, rng)["x"]
    within = lambda v: v - v.mean(axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(within(out.values), within(x.values), atol=1e-12)
    moved = (out - x).mean("head").values
    assert sps.pearsonr(moved, label.mean("head").values)[0] > 0.999
    # x and y: y's layers move with x's layer means
    y = layered(rng)
    out = R.shared_effect({"x": x, "y": y}, None, rng)
    np.testing.assert_allclose(within(out["y"].values), within(y.values), atol=1e-12)
    assert sps.pearsonr((out["y"] - y).mean("head"), x.mean("head"))[0] > 0.999
    with pytest.raises(R.NotApplicable, match="compares no heads"):
        R.shared_effect({"values": x}, None, rng)


def _naive_pooled(data):
    """A user's own wrong test: Spearman over every head at once, as if heads were independent."""
    x, y = (np.asarray(data.arrays[r].values, dtype=float).ravel() for r in ("x", "y"))
    ok = np.isfinite(x) & np.isfinite(y)
    rho, p = sps.spearmanr(x[ok], y[ok])
    import pandas as pd

    return pd.DataFrame([{"n": float(ok.sum()), "statistic": float(rho), "p_value": float(p),
                          "effect": float(rho), "ci_low": np.nan, "ci_high": np.nan}])


def _spec(test: str) -> HypothesisSpec:
    return HypothesisSpec(
        id="R1", claim="x predicts y within layers", source="test", datasets=("synth",),
        test=test, selection={"x": Select("head_contribution", step="first"),
                              "y": Select("change_from_init")},
        params=dict(FAST) if test == "correlation" else {}, prediction=Prediction("positive"),
        gate="report")


def test_a_rule_that_pools_layers_is_caught_by_the_shared_effect_null():
    """Independent x and y with layer offsets: within layers there is nothing. The design's own
    null (heads permuted within layers) keeps the layer means where they are, so it cannot
    tell a rule that pools every head from one that conditions on layers; the shared-effect
    null moves the layers together and catches the pooling rule, while the built-in
    correlation (permutation within layers) keeps its level under it."""
    from lie_stats.spec import register_test, unregister_test
    from lie_stats.spec.rules import decide_directional

    rng = np.random.default_rng(4)
    arrays = {"x": layered(rng, offsets=3.0), "y": layered(rng, offsets=3.0)}
    settings = D.Settings(n_sims=20, seed=0, n_perm=99, n_boot=49, n_robust=20)
    register_test("naive_pooled_spearman", _naive_pooled, decide_directional, roles=("x", "y"),
                  design=D.DESIGNS["correlation"])
    try:
        naive = D.diagnose_arrays(_spec("naive_pooled_spearman"), arrays, settings)
    finally:
        unregister_test("naive_pooled_spearman")
    within = D.diagnose_arrays(_spec("correlation"), arrays, settings)
    assert set(naive["robust"]) == {a.name for a in R.ALTERNATIVES}
    assert naive["fpr"] <= 0.15 or naive["robust"]["shared_effect"]["fpr"] > naive["fpr"]
    assert naive["robust"]["shared_effect"]["fpr"] >= 0.8
    assert naive["fpr_robust"] == max(v["fpr"] for v in naive["robust"].values()) >= 0.8
    assert within["robust"]["shared_effect"]["fpr"] <= 0.15  # Binomial(20, 0.025): 99 % band <= 3
    assert all(v["n_sims"] == 20 and not v["reason"] for v in within["robust"].values())
    assert within["fpr_robust"] <= 0.15


def test_settings_default_to_half_the_simulations_and_zero_turns_them_off():
    assert D.Settings(n_sims=200).robust_sims == 100
    assert D.Settings(n_sims=200).per_result == 200 + 3 * 100
    assert D.Settings(n_sims=10, n_robust=0).per_result == 10
    assert D.Settings(n_sims=10, n_robust=0).record()["n_robust"] == 0
    with pytest.raises(Exception, match="n_robust"):
        D.Settings(n_robust=-1)
