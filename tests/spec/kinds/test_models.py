"""Model kinds (lie_stats.spec.kinds.models): model_comparison on the planted ``panel``
(width, not head count) and mixed_model with a categorical interaction on ``synth``."""

from __future__ import annotations

import pytest

from lie_stats.errors import SpecError
from lie_stats.spec import Magnitude, Prediction, Select
from tests._spec_cubes import evaluate_one, planted_spec


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
