"""B1: boundary layers develop 5-7x more within-layer head heterogeneity than interior ones.

Test design (CLAIMS.md B1, METRICS.md §6.3): the boundary ratio of ``head_heterogeneity``
(the coefficient of variation over a layer's heads of ``commutator_mean``, §4.5) at the last
checkpoint: mean over the first and last layers over the mean of the interior layers. The
verdict comes from the exact layer-permutation test (every pair of layers as "boundary",
66 pairs with 12 layers): supported when the first-and-last pair is in the upper alpha / 2
of them, refuted when in the lower; the bootstrap interval, resampling heads within layers,
describes the ratio and is compared with the declared magnitude band (at least 3x, the
essay's "5-7x"). One run at a time.
"""

import math

from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, FAMILIES, P96, PROJECTIONS, BOS_CPU_DECLARED, BOS_CPU_RUNS,
                      BOS_DECLARED, BOS_RUNS, SUDOKU, SUDOKU_DECLARED)

B1 = HypothesisSpec(
    id="B1",
    claim=("Boundary layers (first and last) develop 5-7x more within-layer head heterogeneity "
           "than interior layers"),
    source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"values": Select("commutator_mean", step="last", family="Q", projection="none",
                                models=("p96_s0",))},
    test="boundary_ratio", params={"summary": "cv"},
    prediction=Prediction("above", value=1.0, magnitude=Magnitude(
        5.0, 3.0, math.inf,
        justification=("'5-7x' read as at least 3x: the essay's range with room below it for a "
                       "smaller model, and no upper limit (more heterogeneity is not against "
                       "the claim)"))),
    reference={"ratio_low": 5.0, "ratio_high": 7.0},
    gate="pinned",
    choices={"models": [(m,) for m in P96], "family": FAMILIES, "projection": PROJECTIONS},
    notes=("The magnitude band (at least 3x) is declared beside the direction, so that the "
           "claim's figure is tested and not only 'above 1'."),
)


def _b1_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B1 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=B1.claim, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"values": Select("commutator_mean", step="last", family="Q", projection="none",
                                    models=(runs[0],))},
        test="boundary_ratio", params={"summary": "cv"},
        prediction=B1.prediction, reference=B1.reference, gate="pinned",
        choices={"models": [(m,) for m in runs], "family": FAMILIES},
        notes=declared + " As B1 (the same test, prediction and magnitude band); exact "
              "operators only (the suite's cube holds no compression).",
    )


B1_sudoku = _b1_on_suite("B1-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B1_bos = _b1_on_suite("B1-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B1_bos_cpu = _b1_on_suite("B1-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
