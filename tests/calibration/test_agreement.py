"""VERDICT of ``verdict_agreement`` when the compressions truly agree, and its power when
one compression reverses the effect.

Target: the ``correlation`` kind (within-layer permutation, 199 resamples, prediction
positive) under three compressions, each observing the head metric with its own noise (SD
0.5), layer effects (SD 1.5) shared by both metrics, 12 layers x 8 heads. When the
compressions truly agree, the target's verdict still differs between them at its power:
decisive under one, inconclusive under another. The old rule refuted on any difference
(A6's coin flip: a false "refuted" in 14 % of truly agreeing cases); refuted now needs
opposite decisions (supported and refuted), which a calibrated target gives by chance in
well under alpha of the cases. 100 data sets per case (60 for the power). Full figures:
benchmarks/calibration_cal_pairwise.md.
"""

from __future__ import annotations

import pytest

from ._cases_cal_pairwise import CASES, run_case
from ._design import binomial_band

N = 100
ALPHA = 0.05


@pytest.mark.slow
def test_truly_agreeing_compressions_are_not_refuted():
    counts = run_case(CASES["verdict_agreement/agree, no effect"], N, seed=81)
    # at most alpha's share refuted (the 99 % band's upper end of Binomial(N, alpha))
    assert counts["refuted"] <= binomial_band(N, ALPHA)[1], counts


@pytest.mark.slow
def test_agreeing_compressions_at_the_targets_power_are_not_refuted():
    # target power about 1/2: the compressions' verdicts differ by chance in many cases, and
    # the old any-difference rule (the case's flag) refuted them far above alpha
    counts = run_case(CASES["verdict_agreement/agree, rho 0.2"], N, seed=83)
    assert counts["flag"] > binomial_band(N, ALPHA)[1], counts
    assert counts["refuted"] <= binomial_band(N, ALPHA)[1], counts


@pytest.mark.slow
def test_power_when_one_compression_reverses_the_effect():
    n = 60  # power 0.53 in the full run
    counts = run_case(CASES["verdict_agreement/opposite"], n, seed=84)
    assert counts["refuted"] >= 0.3 * n, counts
    assert counts["supported"] == 0, counts
