"""Trend kinds (lie_stats.spec.kinds.trend): trend, enrichment, depth_crossover and
boundary_ratio on the planted ``synth`` data."""

from __future__ import annotations

from lie_stats.spec import Prediction, Select
from tests._spec_cubes import evaluate_one, planted_spec

FAM = dict(family="Q", projection="none")


def test_trend_enrichment_crossover_and_boundary_ratio(planted_root):
    r = evaluate_one(planted_spec(test="trend", selection={"values": Select("abelian_fraction", step="all", **FAM)},
                                  params={"n_perm": 999}, prediction=Prediction("positive")), planted_root)
    assert r.verdict == "supported" and r.n == 6
    r = evaluate_one(planted_spec(test="enrichment",
                                  selection={"first": Select("commutator_var", step="first", **FAM),
                                             "last": Select("commutator_var", **FAM)},
                                  prediction=Prediction("above", value=1.0)), planted_root)
    assert r.verdict == "supported" and 4.5 < r.effect < 5.5 and r.ci_low > 1
    r = evaluate_one(planted_spec(test="depth_crossover",
                                  selection={"values": Select("commutator_mean", step="all", **FAM)},
                                  params={"n_boot": 200}, prediction=Prediction("crossing"),
                                  reference={"fraction": 0.315}), planted_root)
    assert r.verdict == "supported" and r.extra["n_crossings"] == 1
    assert 1000 / 3000 < r.effect < 1 and r.ci_low <= r.effect <= r.ci_high <= 1  # one scale
    r = evaluate_one(planted_spec(test="boundary_ratio", selection={"values": Select("head_heterogeneity", **FAM)},
                                  params={"n_boot": 200}, prediction=Prediction("above", value=1.0)),
                     planted_root)
    assert r.verdict == "supported" and r.effect > 2
