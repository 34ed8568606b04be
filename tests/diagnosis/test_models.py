"""Designs of ``model_comparison``, ``mixed_model``, ``correlation_equivalence`` and
``verdict_agreement``: each null holds the kind's rule at its level on data shaped like the
real selections that carry a strong real effect (a null that left it in place would give a
"supported" rate far above the band), the planted effect is found, and each transform does
what it says.

Rates are checked against the binomial 99 % band of the rule's level
(``scipy.stats.binom.interval``); seeds are fixed and the floors leave margin.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

from lie_stats import diagnosis as D
from lie_stats.spec.kinds.agreement import design as AG
from lie_stats.spec.kinds.models import design as M
from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select, compression_agreement, select

from ..calibration._design import layered_pair
from ..calibration._design_cal_models import panel_template

ALPHA = 0.05
SETTINGS = D.Settings(n_sims=60, seed=0, n_perm=99, n_boot=49)
#: Fewer for model_comparison, whose simulations cost most here.
MC_SETTINGS = D.Settings(n_sims=40, seed=0, n_perm=99, n_boot=49)


def band(n: int, p: float) -> tuple[float, float]:
    lo, hi = sps.binom.interval(0.99, n, p)
    return lo / n, hi / n


def within_r(x: np.ndarray, y: np.ndarray) -> float:
    """Mean over layers (rows) of the Spearman correlation of x and y."""
    return float(np.mean([sps.spearmanr(a, b)[0] for a, b in zip(x, y)]))


# ----------------------------------------------------------------------------- model_comparison

#: The bundled sweep of A8 (d_head, n_heads, d_model), h2 excluded as A8 excludes it.
SWEEP = {"w16": (16, 4, 64), "w32": (32, 4, 128), "w64": (64, 4, 256), "h8": (16, 8, 128),
         "h16": (16, 16, 256)}
SWEEP_MODELS = {"width": ["log2_d_head"], "count": ["log2_n_heads"], "d_model": ["log2_d_model"]}
A8_REFERENCE = {"pythia-70m": 0.083, "pythia-1b": 0.0}
#: A8's declared slope per doubling of d_head: 0.083 at d_head 64, 0 at 256.
A8_SLOPE = Magnitude(reference=-0.0415, low=-0.1245, high=-0.0138, scale="absolute",
                     estimate="predicted_slope",
                     interval=("predicted_slope_ci_low", "predicted_slope_ci_high"),
                     justification="the two models' figures, x/÷3")


def comparison_spec(reference=A8_REFERENCE, models=SWEEP_MODELS, magnitude=A8_SLOPE) -> HypothesisSpec:
    return HypothesisSpec(
        id="T-mc", claim="c", source="s", datasets=("sim",), test="model_comparison",
        selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none")},
        params={"models": models, "predicted": "width"},
        prediction=Prediction("preferred", magnitude=magnitude), reference=reference, gate="report")


def sweep_arrays(run_means: dict[str, float], rng: np.random.Generator, n_layers: int = 4) -> dict:
    """The sweep's response as the spec selects it: (model, layer), each run's layers
    scattered (SD 0.05) about its mean."""
    spec = comparison_spec()
    cube = panel_template(SWEEP, n_layers=n_layers)
    da = cube["abelian_fraction"]
    values = np.array([run_means[m] for m in da["model"].values], dtype=float)
    layers = rng.normal(0, 0.05, size=(len(values), n_layers))
    layers -= layers.mean(axis=1, keepdims=True)
    shaped = values[:, None] + layers
    cube = cube.assign(abelian_fraction=da.copy(data=shaped.reshape(da.shape)))
    return {role: select(sel, cube) for role, sel in spec.selection.items()}


def run_means(da: xr.DataArray) -> dict[str, float]:
    return {str(m): float(v) for m, v in zip(da["model"].values, da.mean("layer").values)}


def test_shift_run_means_moves_each_run_as_a_whole():
    arrays = sweep_arrays({m: 0.5 for m in SWEEP}, np.random.default_rng(0))
    da = arrays["response"]
    targets = {"w16": 0.1, "w64": 0.9}
    out = M.shift_run_means(da, targets)
    means = run_means(out)
    assert means["w16"] == pytest.approx(0.1) and means["w64"] == pytest.approx(0.9)
    assert means["h8"] == pytest.approx(0.5)  # a run not named is left as it is
    # each run keeps its own layer profile, and its model-shape coordinates
    np.testing.assert_allclose((out - out.mean("layer")).values, (da - da.mean("layer")).values)
    assert (out["d_head"].values == da["d_head"].values).all()


def test_rival_null_response_is_the_rival_fit_plus_its_residuals_resampled():
    rng = np.random.default_rng(1)
    truth = {m: 0.1 * math.log2(SWEEP[m][1]) + 0.01 * rng.normal() for m in SWEEP}  # head count
    arrays = sweep_arrays(truth, rng)
    spec = comparison_spec()
    table = M._table(arrays, spec)
    targets, rival = M.rival_null_response(table, SWEEP_MODELS, "width", np.random.default_rng(2))
    assert rival == "count"  # the rival that fits best
    x = table["log2_n_heads"].to_numpy()
    y = table["response"].to_numpy()
    fit = np.polyval(np.polyfit(x, y, 1), x)
    h = 1 / len(x) + (x - x.mean()) ** 2 / np.sum((x - x.mean()) ** 2)
    adjusted = (y - fit) / np.sqrt(1 - h)
    adjusted -= adjusted.mean()
    drawn = np.array([targets[m] for m in table.index]) - fit
    # a signed permutation of the leverage-adjusted residuals
    np.testing.assert_allclose(np.sort(np.abs(drawn)), np.sort(np.abs(adjusted)), atol=1e-12)


def test_reference_slope_is_the_declared_magnitude_else_two_models_of_the_selection():
    spec = comparison_spec()
    table = M._table(sweep_arrays({m: 0.5 for m in SWEEP}, np.random.default_rng(0)), spec)
    assert M.reference_slope(spec, table, "log2_d_head") == (pytest.approx(-0.0415), [])
    # without a magnitude: the slope through two models of the selection (w16 at d_head 16,
    # w64 at 64: 0.3 -> 0.1 over two doublings)
    named = comparison_spec(reference={"w16": 0.3, "w64": 0.1}, magnitude=None)
    slope, names = M.reference_slope(named, table, "log2_d_head")
    assert slope == pytest.approx(-0.1) and names == ["w16", "w64"]
    # w16 and w32 share d_head / d_model (0.25): no effect of the ratio to plant
    shared = comparison_spec(reference={"w16": 0.3, "w32": 0.1}, magnitude=None)
    with pytest.raises(D.NotPlantable, match="share d_head_over_d_model"):
        M.reference_slope(shared, table, "d_head_over_d_model")
    # models the selection does not hold give no shape, hence no slope (A9's reference)
    for reference in (A8_REFERENCE, {"ratio_70m_1b": 0.125}):
        with pytest.raises(D.NotPlantable, match="gives an effect size"):
            M.reference_slope(comparison_spec(reference=reference, magnitude=None), table, "log2_d_head")


def test_an_agreements_target_keeps_its_declared_slope_to_plant():
    # verdict_agreement records its target's prediction as a declaration (JSON); the target
    # rebuilt from it has its Magnitude again, so the target's design finds the slope to plant
    # (a plain dict had no .estimate: "neither a declared magnitude ... gives an effect size")
    target = AG.target_of(agreement_spec(comparison_spec(), n_comps=2))
    assert target.prediction.magnitude == A8_SLOPE
    table = M._table(sweep_arrays({m: 0.5 for m in SWEEP}, np.random.default_rng(0)), comparison_spec())
    assert M.reference_slope(target, table, "log2_d_head") == (pytest.approx(-0.0415), [])


def test_model_comparison_null_holds_alpha_against_a_strong_width_effect():
    rng = np.random.default_rng(3)
    # the response is width: a null that kept it would be "supported" nearly always
    truth = {m: 0.3 * math.log2(SWEEP[m][0]) + 0.01 * rng.normal() for m in SWEEP}
    arrays = sweep_arrays(truth, rng)
    # no planted simulations: the null alone; no magnitude (the slope 0.3 is outside A8's band)
    spec = comparison_spec(reference={}, magnitude=None)
    assert D._evaluate(spec, arrays, spec.resolved_params())[0] == "supported"
    diag = D.diagnose_arrays(spec, arrays, MC_SETTINGS)
    lo, hi = band(MC_SETTINGS.n_sims, ALPHA)  # the F tests' level; the rule's IUT is at most alpha
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["refuted_null"] <= hi, diag


def test_model_comparison_finds_the_a8_slope_over_small_noise():
    rng = np.random.default_rng(4)
    # no model explains the real runs (run noise of SD 0.005); the planted slope -0.0415 per
    # doubling of d_head spans 0.083 over the sweep. (Planted on top of a rival's effect, the
    # rule finds both models needed: inconclusive, as it should.)
    truth = {m: 0.5 + 0.005 * rng.normal() for m in SWEEP}
    spec = comparison_spec()
    diag = D.diagnose_arrays(spec, sweep_arrays(truth, rng), MC_SETTINGS)
    assert diag["power"] >= 0.8, diag
    assert diag["coverage"] is None and diag["type_s"] is None  # R^2: no interval, no sign
    assert "no planted simulation gave a finite interval" in diag["reason"]


def test_model_comparison_without_an_effect_size_gives_fpr_only():
    spec = comparison_spec(reference={"ratio_70m_1b": 0.125}, magnitude=None,
                           models={"width": ["log2_d_head"], "ratio": ["d_head_over_d_model"]})
    arrays = sweep_arrays({m: 0.5 + 0.01 * i for i, m in enumerate(SWEEP)}, np.random.default_rng(5))
    diag = D.diagnose_arrays(spec, arrays, D.Settings(n_sims=3))
    assert diag["fpr"] is not None and diag["power"] is None
    assert "no planted effect" in diag["reason"] and "ratio_70m_1b" in diag["reason"]


# ----------------------------------------------------------------------------- mixed_model


def head_arrays(x: np.ndarray, y: np.ndarray, *, x_name: str = "x", y_name: str = "y") -> dict:
    """[layer, head] values as one model's (model, layer, head) selections."""
    coords = {"model": ["sim"], "layer": np.arange(x.shape[0]), "head": np.arange(x.shape[1])}
    dims = ("model", "layer", "head")
    return {x_name: xr.DataArray(x[None], dims=dims, coords=coords),
            y_name: xr.DataArray(y[None], dims=dims, coords=coords)}


def mixed_spec(reference: dict, term: str = "x", formula: str = "y ~ x") -> HypothesisSpec:
    return HypothesisSpec(
        id="T-mm", claim="c", source="s", datasets=("sim",), test="mixed_model",
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        params={"formula": formula, "term": term}, prediction=Prediction("positive"),
        reference=reference, gate="report")


def test_mixed_model_transforms():
    rng = np.random.default_rng(6)
    x, y = layered_pair(rng, n_layers=12, n_heads=8, layer_sd=1.0, layer_rho=0.9, within_rho=0.6)
    arrays = head_arrays(x, y)
    null = D.design_for(mixed_spec({}).kind).null(arrays, mixed_spec({}), rng)
    # x permuted within layers: each layer's set of x kept, y untouched
    np.testing.assert_allclose(np.sort(null["x"].values, axis=-1), np.sort(arrays["x"].values, axis=-1))
    assert (null["y"].values == arrays["y"].values).all()
    assert abs(within_r(null["x"].values[0], null["y"].values[0])) < 0.2 < within_r(x, y)
    # a slope of 0.7 added within layers: layer means of y unchanged, within slope exact
    planted = M.add_within_slope(null, 0.7)
    np.testing.assert_allclose(planted["y"].mean("head"), null["y"].mean("head"), atol=1e-12)
    xc = null["x"] - null["x"].mean("head")
    np.testing.assert_allclose((planted["y"] - null["y"]).values, 0.7 * xc.values, atol=1e-12)
    # a reference rho becomes the slope that gives that within-layer correlation
    spec = mixed_spec({"rho": 0.5})
    big = head_arrays(*layered_pair(np.random.default_rng(7), n_layers=40, n_heads=50))
    out, slope = D.design_for(spec.kind).plant(big, spec, rng)
    assert slope > 0
    assert within_r(out["x"].values[0], out["y"].values[0]) == pytest.approx(0.5 * 0.98, abs=0.04)
    with pytest.raises(D.NotPlantable, match="no within-layer slope or rho"):
        D.design_for(spec.kind).plant(big, mixed_spec({"direction": "positive"}), rng)
    with pytest.raises(D.NotPlantable, match="between-layer coefficient"):
        D.design_for(spec.kind).null(big, mixed_spec({}, term="mean[x]"), rng)


def test_mixed_model_null_holds_alpha_and_the_planted_slope_is_found():
    rng = np.random.default_rng(8)
    # a strong within-layer association (0.6) and co-varying layer means (as in real data)
    x, y = layered_pair(rng, n_layers=12, n_heads=8, layer_sd=1.0, layer_rho=0.9, within_rho=0.6)
    spec = mixed_spec({"slope": 0.4})
    diag = D.diagnose_arrays(spec, head_arrays(x, y), SETTINGS)
    lo, hi = band(SETTINGS.n_sims, ALPHA / 2)  # a two-sided t test, one predicted sign
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["refuted_null"] <= hi, diag
    # slope 0.4 on unit within-layer noise, 96 heads in 12 layers: t about 3.6
    assert diag["power"] >= 0.8 and diag["type_s"] == 0.0, diag
    assert diag["coverage"] >= 0.85, diag


# ----------------------------------------------------------------------------- correlation_equivalence


def equivalence_spec(bound: float = 0.3) -> HypothesisSpec:
    return HypothesisSpec(
        id="T-ce", claim="c", source="s", datasets=("sim",), test="correlation_equivalence",
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        params={"n_perm": 99}, prediction=Prediction("equivalent", bound=bound), gate="report")


def test_correlation_equivalence_transforms():
    rng = np.random.default_rng(9)
    x, y = layered_pair(rng, n_layers=40, n_heads=50, within_rho=0.6)
    arrays = head_arrays(x, y)
    spec = equivalence_spec(0.3)
    design = D.design_for(spec.kind)
    rs = []
    for _ in range(8):
        null = design.null(arrays, spec, rng)
        rs.append(within_r(null["x"].values[0], null["y"].values[0]))
        np.testing.assert_allclose(null["y"].mean("head"), arrays["y"].mean("head"), atol=1e-9)
        planted, value = design.plant(null, spec, rng)
        assert value == 0.0 and abs(within_r(planted["x"].values[0], planted["y"].values[0])) < 0.05
    # the real 0.6 removed and the bound planted, with either sign (one draw's SD about 0.025)
    assert abs(np.mean(np.abs(rs)) - 0.3) < 0.025, rs
    assert min(rs) < 0 < max(rs), rs
    assert design.sign is False


def test_correlation_equivalence_null_at_the_bound_holds_alpha():
    rng = np.random.default_rng(10)
    # real data that are equivalent (no within-layer correlation): a null that did not move
    # the correlation to the bound would be "supported" nearly always
    x, y = layered_pair(rng, n_layers=12, n_heads=16, within_rho=0.0)
    spec = equivalence_spec(0.3)
    arrays = head_arrays(x, y)
    assert D._evaluate(spec, arrays, {**spec.resolved_params(), "n_perm": 99})[0] == "supported"
    diag = D.diagnose_arrays(spec, arrays, SETTINGS)
    lo, hi = band(SETTINGS.n_sims, ALPHA)  # at the bound one one-sided test sits at its level
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.8, diag  # 192 heads, bound 0.3: SE of z about 0.075
    assert diag["coverage"] >= 0.8 and diag["type_s"] is None, diag


# ----------------------------------------------------------------------------- verdict_agreement


def correlation_target(reference: dict | None = None) -> HypothesisSpec:
    return HypothesisSpec(
        id="T-corr", claim="c", source="s", datasets=("sim",), test="correlation",
        selection={"x": Select("killing_self", step="last", family="Q", projection="none"),
                   "y": Select("commutator_mean", step="last", family="Q", projection="none")},
        params={"n_perm": 99, "n_boot": 49}, prediction=Prediction("positive"),
        reference={"rho": 0.5} if reference is None else reference, gate="report")


def agreement_arrays(rng: np.random.Generator, n_comps: int = 3, noise: float = 0.3) -> dict:
    """x and y (within-layer rho 0.6, co-varying layer means) under ``n_comps``
    compressions, each adding its own noise; the last compression lacks layer 0's heads."""
    x, y = layered_pair(rng, n_layers=12, n_heads=8, within_rho=0.6)
    out = {}
    for i in range(n_comps):
        xi, yi = (v + noise * rng.normal(size=v.shape) for v in (x, y))
        if i == n_comps - 1:
            xi[0] = np.nan
        for role, da in head_arrays(xi, yi).items():
            out[f"{role}__c{i}"] = da
    return out


def agreement_spec(target: HypothesisSpec, n_comps: int = 3) -> HypothesisSpec:
    compressions = ("none", "adaptive", "fixed:64")[:n_comps]
    return compression_agreement(target, id="T-agree", claim="c", source="s", gate="report",
                                 compressions=compressions)


def test_compression_arrays_keep_the_units_every_compression_has():
    arrays = agreement_arrays(np.random.default_rng(11))
    subs = AG.compression_arrays(arrays)
    assert len(subs) == 3 and all(set(s) == {"x", "y"} for s in subs)
    for s in subs:  # role by role, as the kind keeps them: x lacks layer 0 everywhere
        assert np.isnan(s["x"].values[0, 0]).all() and np.isfinite(s["x"].values[0, 1:]).all()
        assert np.isfinite(s["y"].values).all()
    target = AG.target_of(agreement_spec(correlation_target()))
    assert target.test == "correlation" and target.reference == {"rho": 0.5}
    assert target.resolved_params()["n_perm"] == 99 and set(target.selection) == {"x", "y"}


def test_agreement_null_removes_the_effect_from_one_compression_only():
    rng = np.random.default_rng(12)
    arrays = agreement_arrays(rng, noise=0.0)  # identical real data under every compression
    spec = agreement_spec(correlation_target({"rho": 0.8}))
    design = D.design_for(spec.kind)
    null = design.null(arrays, spec, rng)
    r = [within_r(null[f"x__c{i}"].values[0, 1:], null[f"y__c{i}"].values[0, 1:]) for i in range(3)]
    removed = [i for i in range(3) if abs(r[i]) < 0.3]
    assert len(removed) == 1 and all(abs(r[i] - 0.78) < 0.1 for i in range(3) if i not in removed), r
    planted, value = design.plant(null, spec, rng)
    assert value == 0.0
    # the same draws: with identical real data, the planted compressions are identical, and
    # those the null planted are the same as in the null
    for i in range(3):
        np.testing.assert_allclose(planted[f"y__c{i}"].values[0, 1:], planted["y__c0"].values[0, 1:])
        if i not in removed:
            np.testing.assert_allclose(planted[f"y__c{i}"].values, null[f"y__c{i}"].values)


def test_agreement_null_holds_the_targets_level_and_agreement_is_found():
    rng = np.random.default_rng(13)
    arrays = agreement_arrays(rng, n_comps=2)
    spec = agreement_spec(correlation_target({"rho": 0.6}), n_comps=2)
    # the real data agree (rho 0.6 under every compression): a null that kept them would be
    # "supported" nearly always
    assert D._evaluate(spec, arrays, spec.resolved_params())[0] == "supported"
    settings = D.Settings(n_sims=40, seed=0, n_perm=99, n_boot=49)
    diag = D.diagnose_arrays(spec, arrays, settings)
    # supported needs the compression without the effect to be supported too: the target's
    # one-sided level alpha / 2 (the planted ones are supported with power about 1)
    lo, hi = band(settings.n_sims, ALPHA / 2)
    assert lo <= diag["fpr"] <= hi, diag
    assert diag["power"] >= 0.9 and diag["refuted_planted"] == 0.0, diag


def test_agreement_without_a_target_design_or_effect_says_why():
    arrays = agreement_arrays(np.random.default_rng(14))
    diag = D.diagnose_arrays(agreement_spec(correlation_target({"direction": "positive"})), arrays,
                             D.Settings(n_sims=2))
    assert diag["fpr"] is None and "gives no correlation" in diag["reason"], diag
    trend = HypothesisSpec(
        id="T-trend", claim="c", source="s", datasets=("sim",), test="trend",
        selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
        prediction=Prediction("positive"), gate="report")
    spec = agreement_spec(trend)
    values = xr.DataArray(np.zeros((1, 3, 2)), dims=("model", "step", "layer"))
    arrays = {f"values__c{i}": values for i in range(3)}
    if D.design_for(trend.kind) is None:
        diag = D.diagnose_arrays(spec, arrays, D.Settings(n_sims=2))
        assert diag["fpr"] is None and "kind trend has no design" in diag["reason"], diag
