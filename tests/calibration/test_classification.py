"""VERDICTS of the labelled-head kinds (``class_auc``, ``group_difference``,
``class_interaction``, ``threshold_agreement``, ``stabilization_time``) on nulls with the
structure of real head data: layer effects in the metrics (SD 1.5), label prevalence
varying by layer, unequal layer sizes (4-12 heads), few clusters (5-12 layers), ties. Each
null: 150 simulated data sets, the kind's statistic with 199 within-layer permutations and
its registered decision rule; "supported" and "refuted" each in the 99 % binomial band of
rate 9/400 (p = (1 + b) / 200 < 0.05 in 9/200 of nulls, split by the sign), p < alpha in
that of 9/200. Powers: 40 data sets with the planted effect the case names
(tests/calibration/_cases_cal_pairwise.py). Full figures: benchmarks/calibration_cal_pairwise.md.
"""

from __future__ import annotations

import pytest

from ._cases_cal_pairwise import CASES, check_null, run_case

N_NULL, N_POWER = 150, 40

NULLS = ("class_auc/null 12 layers", "class_auc/null 5 layers", "group_difference/null 5 layers",
         "class_interaction/null 8 layers", "threshold_agreement/null 12 layers",
         "stabilization_time/null 8 layers")
#: Planted effects and the least share "supported" each must reach (1000-run figures: 0.73-0.97).
POWERS = {"class_auc/power": 0.6, "group_difference/power": 0.6, "class_interaction/power": 0.5,
          "threshold_agreement/power": 0.8, "stabilization_time/power": 0.6}


@pytest.mark.slow
@pytest.mark.parametrize("name", NULLS)
def test_null_verdicts_in_band(name):
    check_null(name, N_NULL, seed=NULLS.index(name) + 11)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(POWERS))
def test_power_under_the_planted_effect(name):
    counts = run_case(CASES[name], N_POWER, seed=sorted(POWERS).index(name) + 31)
    assert counts["supported"] >= POWERS[name] * N_POWER, counts
    assert counts["refuted"] == 0, counts  # the opposite sign is never called
