"""The ``correlation`` kind's VERDICT on nulls with co-varying layer means.

Head data are nested in layers, and layer means of two metrics often co-vary (both larger
in deep layers). The within-layer permutation p is calibrated there; the verdict's sign
must be too: it is taken from ``effect - null_center`` (the correlation beyond what the
within-layer null expects), not from the pooled correlation, whose sign is the
between-layer one. Each case: 300 simulated cubes of 12 layers x 8 heads, layer effects of
SD 1.5 in both metrics correlated 0.9 across layers, n_perm 999.
"""

from __future__ import annotations

import numpy as np
import pytest

from lie_stats.spec import HypothesisSpec, Prediction, Select, evaluate_cube

from ._design import binomial_band, head_cube, layered_pair

N_SIMS = 300
ALPHA = 0.05


def _spec(direction: str) -> HypothesisSpec:
    return HypothesisSpec(
        id="X-corr", claim="c", source="s", datasets=("sim",), test="correlation",
        selection={"x": Select("head_contribution", step="first"),
                   "y": Select("change_from_init", step="last")},
        params={"n_perm": 999, "n_boot": 0, "alpha": ALPHA}, prediction=Prediction(direction),
        gate="report")


def _verdicts(within_rho: float, direction: str, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    spec = _spec(direction)
    counts = {"supported": 0, "refuted": 0, "inconclusive": 0}
    for _ in range(N_SIMS):
        x, y = layered_pair(rng, within_rho=within_rho)
        counts[evaluate_cube(spec, head_cube(x, y), dataset="sim").verdict] += 1
    return counts


@pytest.mark.slow
def test_null_verdicts_hold_alpha_over_two_in_each_direction():
    counts = _verdicts(0.0, "positive", seed=1)
    lo, hi = binomial_band(N_SIMS, ALPHA / 2)  # (2, 15): a two-sided test, one direction each
    assert lo <= counts["supported"] <= hi, counts
    assert lo <= counts["refuted"] <= hi, counts


@pytest.mark.slow
def test_a_negative_within_layer_correlation_never_supports_a_positive_prediction():
    # the pooled rho is positive here (layer means co-vary); the heads' correlation is -0.274.
    # Judged on the pooled sign, a positive prediction was "supported" in 242/400 such cubes.
    counts = _verdicts(-0.274, "positive", seed=2)
    assert counts["supported"] <= binomial_band(N_SIMS, ALPHA / 2)[1], counts
    assert counts["refuted"] >= 0.5 * N_SIMS, counts  # and power to call it: refuted in most


@pytest.mark.slow
def test_power_for_the_within_layer_effect():
    counts = _verdicts(-0.274, "negative", seed=3)
    assert counts["supported"] >= 0.5 * N_SIMS, counts
    assert counts["refuted"] <= binomial_band(N_SIMS, ALPHA / 2)[1], counts
