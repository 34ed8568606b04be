"""Model kinds (lie_stats.spec.kinds.models): model_comparison on the planted ``panel``
(width, not head count) and mixed_model with a categorical interaction on ``synth``."""

from __future__ import annotations

import pytest

from lie_stats.errors import SpecError
from lie_stats.spec import Magnitude, Prediction, Select
from tests._spec_cubes import evaluate_one, planted_fields, planted_spec


def test_model_comparison_prefers_the_planted_predictor(planted_root):
    mc = dict(test="model_comparison", datasets=("panel",), prediction=Prediction("preferred"),
              selection={"response": Select("abelian_fraction", family="Q", projection="none")})
    models = {"width": ["log2_d_head"], "count": ["log2_n_heads"]}
    r = evaluate_one(planted_spec(**mc, params={"models": models, "predicted": "width"}), planted_root)
    assert r.verdict == "supported" and r.n == 12 and r.extra["aic_margin"] > 2
    r = evaluate_one(planted_spec(**mc, params={"models": models, "predicted": "count"}), planted_root)
    assert r.verdict == "refuted"


@pytest.mark.parametrize("low, high, status, verdict", [
    (-0.12, -0.04, "within", "supported"),  # the planted slope, -0.08 per doubling of d_head
    (-0.03, -0.01, "outside", "refuted"),   # a shallower dependence than planted
])
def test_the_predicted_models_slope_against_a_band(planted_root, low, high, status, verdict):
    mag = Magnitude((low + high) / 2, low, high, scale="absolute", estimate="predicted_slope",
                    interval=("predicted_slope_ci_low", "predicted_slope_ci_high"), justification="planted")
    r = evaluate_one(planted_spec(
        test="model_comparison", datasets=("panel",), prediction=Prediction("preferred", magnitude=mag),
        selection={"response": Select("abelian_fraction", family="Q", projection="none")},
        params={"models": {"width": ["log2_d_head"], "count": ["log2_n_heads"]}, "predicted": "width"}),
        planted_root)
    assert r.extra["predicted_slope"] == pytest.approx(-0.08, abs=0.005)
    assert r.extra["predicted_slope_ci_low"] < r.extra["predicted_slope"] < r.extra["predicted_slope_ci_high"]
    assert r.magnitude["status"] == status and r.verdict == verdict, r.magnitude


def test_mixed_model_interaction(planted_root):
    # change ~ contribution x label: the contribution slope is negative overall (planted)
    s = planted_spec(test="mixed_model", selection={"y": Select("change_from_init"),
                                                    "x": Select("head_contribution", step="first"),
                                                    "z": Select("head_label")},
                     params={"formula": "y ~ x * z", "term": "x", "categorical": ("z",)},
                     prediction=Prediction("negative"))
    r = evaluate_one(s, planted_root)
    assert r.verdict == "supported" and r.effect < 0 and r.n == 96 and r.extra["n_groups"] == 8
    # the label enters as a factor: its interaction coefficient is named by level. No
    # interaction is planted (the change is one linear function of the contribution for
    # anchors and workers alike), so the coefficient is not significant (p = 0.84) and a
    # "nonzero" prediction without an equivalence bound is inconclusive
    s2 = planted_spec(test="mixed_model", selection=s.selection,
                      params={"formula": "y ~ x * z", "term": "x:z[T.2]", "categorical": ("z",)},
                      prediction=Prediction("nonzero"))
    r2 = evaluate_one(s2, planted_root)
    assert r2.verdict == "inconclusive" and r2.p_value > 0.5, r2.reason
    bad = planted_spec(test="mixed_model",
                       selection={"y": Select("change_from_init"), "x": Select("head_contribution")},
                       params={"formula": "y ~ x", "term": "xx"})
    with pytest.raises(SpecError, match=r"no coefficient 'xx'\. Did you mean 'x'\?"):
        evaluate_one(bad, planted_root)


def test_mixed_model_on_a_within_layer_share_agrees_with_r():
    # The bundled pico_pythia run p96_s0 on the raw scale: head_contribution (first
    # checkpoint) is a share within its layer, so its layer mean is 0.125 +- 9.3e-10 in every
    # layer; R's rank drops that mean beside the intercept, numpy's kept it (intercept
    # 453,343 +- 914,524, layer variance 0.001441, df 9 where R has 10).
    from pathlib import Path

    from lie_stats.datasets import load_dataset
    from lie_stats.spec import HypothesisSpec, evaluate_cube

    cube = load_dataset("pico_pythia", Path(__file__).resolve().parents[3] / "datasets")
    run = ("p96_s0",)
    fields = planted_fields(
        datasets=("pico_pythia",), test="mixed_model", prediction=Prediction("nonzero"), gate="pinned",
        selection={"y": Select("change_from_init", step="last", models=run),
                   "x": Select("head_contribution", step="first", models=run),
                   "z": Select("head_label", step="last", models=run)},
        params={"formula": "y ~ x * z", "term": "mean[x:z]"})
    # R 4.2.2 on the same 96 heads (written with 17 digits; xm, xzm the layer means of x, x*z):
    #   qr(model.matrix(~ x * z + xm + xzm, d))$rank -> 5 of 6 (xm dropped);
    #   nlme::lme(y ~ x * z + xm + xzm, random = ~ 1 | layer, d, method = "REML") -> error
    #     "Singularity in backsolve"; on R's rank:
    #   m <- nlme::lme(y ~ x * z + xzm, random = ~ 1 | layer, data = d, method = "REML")
    #   summary(m)$tTable: (Intercept) 4.464681161313 SE 2.371803169188 DF 81;
    #     xzm -24.471141357191 SE 13.824972498115 DF 10 p 0.1071406368528;
    #   getVarCov(m)[1, 1] 0.00127064060635, m$sigma^2 0.0059432838734
    r = evaluate_cube(HypothesisSpec(**fields), cube, dataset="pico_pythia")
    assert r.effect == pytest.approx(-24.471141357191, rel=1e-7)
    assert r.extra["std_err"] == pytest.approx(13.824972498115, rel=1e-5)
    assert r.extra["df"] == 10 and r.p_value == pytest.approx(0.1071406368528, rel=1e-5)
    assert r.extra["group_variance"] == pytest.approx(0.00127064060635, rel=1e-5)
    assert r.extra["residual_variance"] == pytest.approx(0.0059432838734, rel=1e-6)
    r = evaluate_cube(HypothesisSpec(**{**fields, "params": {"formula": "y ~ x * z", "term": "Intercept"}}),
                      cube, dataset="pico_pythia")
    assert r.effect == pytest.approx(4.464681161313, rel=1e-7)
    assert r.extra["std_err"] == pytest.approx(2.371803169188, rel=1e-5)
    # the dropped column's coefficient is not estimable: undefined, with R's reason
    r = evaluate_cube(HypothesisSpec(**{**fields, "params": {"formula": "y ~ x * z", "term": "mean[x]"}}),
                      cube, dataset="pico_pythia")
    assert r.verdict == "inconclusive" and "not estimable" in r.reason and "1e-07" in r.reason
