"""Trend kinds (lie_stats.spec.kinds.trend): trend, enrichment, depth_crossover and
boundary_ratio on the planted ``synth`` data."""

from __future__ import annotations

import numpy as np

from lie_stats.spec import Magnitude, Prediction, Select
from tests._spec_cubes import evaluate_one, planted_spec

FAM = dict(family="Q", projection="none")


def test_trend_enrichment_crossover_and_boundary_ratio(planted_root):
    r = evaluate_one(planted_spec(test="trend", selection={"values": Select("abelian_fraction", step="all", **FAM)},
                                  params={"n_perm": 999}, prediction=Prediction("positive")), planted_root)
    # one run: its 6 checkpoints are autocorrelated, and a sign-flip over 1 run cannot reach
    # alpha / 2 (p_min 0.5), so the kind says it cannot decide instead of permuting checkpoints
    assert r.verdict == "inconclusive" and r.n == 6 and "too few independent units" in r.reason
    assert r.effect > 0.9  # the planted rise is still the estimate
    r = evaluate_one(planted_spec(test="enrichment",
                                  selection={"first": Select("commutator_var", step="first", **FAM),
                                             "last": Select("commutator_var", **FAM)},
                                  prediction=Prediction("above", value=1.0)), planted_root)
    assert r.verdict == "supported" and 4.5 < r.effect < 5.5 and r.ci_low > 1
    # the planted slope is (t - 0.4) per unit depth: negative at step 0, positive at the end
    crossing = dict(test="depth_crossover", selection={"values": Select("commutator_mean", step="all", **FAM)},
                    prediction=Prediction("crossing"), reference={"fraction": 0.315})
    r = evaluate_one(planted_spec(**crossing, params={"n_boot": 200, "n_perm": 999, "from_sign": "negative"}),
                     planted_root)
    assert r.verdict == "supported" and r.extra["n_crossings"] == 1
    assert r.extra["boot_share_crossing"] == 1.0
    wrong_way = evaluate_one(planted_spec(**crossing, params={"n_boot": 0, "n_perm": 999, "from_sign": "positive"}),
                             planted_root)
    assert wrong_way.verdict == "refuted" and np.isnan(wrong_way.effect)  # no + to - change
    assert 1000 / 3000 < r.effect < 1 and r.ci_low <= r.effect <= r.ci_high <= 1  # one scale
    # the crossover's fraction and its interval are what a magnitude band reads: the planted
    # sign change (interpolated at about 0.37 of the last step) is inside [0.3, 0.5], not at 0.6-0.9
    for (low, high), status in (((0.3, 0.5), "within"), ((0.6, 0.9), "outside")):
        mag = Magnitude((low + high) / 2, low, high, scale="absolute", justification="planted")
        banded = evaluate_one(planted_spec(**{**crossing, "prediction": Prediction("crossing", magnitude=mag)},
                                           params={"n_boot": 200, "n_perm": 999, "from_sign": "negative"}),
                              planted_root)
        assert banded.magnitude["status"] == status, banded.magnitude
        assert banded.magnitude["interval"] == [r.ci_low, r.ci_high]
    r = evaluate_one(planted_spec(test="boundary_ratio", selection={"values": Select("head_heterogeneity", **FAM)},
                                  params={"n_boot": 200}, prediction=Prediction("above", value=1.0)),
                     planted_root)
    # 8 layers give C(8, 2) = 28 choices of a boundary pair: the planted pair is the most
    # extreme (p_greater = 1/28), but 1/28 > alpha / 2, so the exact test cannot decide
    assert r.effect > 2 and r.extra["p_greater"] == r.extra["p_min"] == 1 / 28
    assert r.verdict == "inconclusive" and "too few independent units" in r.reason
