"""B5: the rho = -0.274 replication: initial head contribution predicts how much a head changes.

Test design (CLAIMS.md B5, DESIGN.md "Replication, done as the field does it"): Spearman
between ``head_contribution`` at the first checkpoint (METRICS.md §5.4) and
``change_from_init`` at the last (§5.5) over the 96 heads of a 12-layer x 8-head run,
permutation p within layers (heads are nested in layers), cluster-bootstrap interval; the
replication verdict uses the one-sided test in the original direction and the
small-telescopes test against r33 of the original n = 96; the Fisher z test of difference
and the replication Bayes factor are reported beside it. The new estimate is the
within-layer Spearman correlation (ranks centred within layers) and the small-telescopes,
difference and Bayes-factor tests use the within-layer permutation null's standard error
(``lie_stats.stats.replicate_correlation``): the pooled rho would carry any co-variation of
layer means. ``head_contribution`` at init has no layer means to speak of, so the pooled and
within-layer figures nearly agree here.
Each seed of the bundled 96-head run is one replication attempt (specification curve).
"""

from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, P96, BOS_CPU_DECLARED, BOS_CPU_RUNS, BOS_DECLARED, BOS_RUNS, SUDOKU,
                      SUDOKU_DECLARED)

B5 = HypothesisSpec(
    id="B5",
    claim="Initial head contribution predicts how much a head changes during training (rho = -0.274)",
    source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"x": Select("head_contribution", step="first", models=("p96_s0",)),
               "y": Select("change_from_init", step="last", models=("p96_s0",))},
    test="replication", params={"method": "spearman", "n_perm": 9999, "seed": 0},
    prediction=Prediction("negative", magnitude=Magnitude(
        -0.274, -0.450, -0.078, scale="absolute",
        justification=("the original's own 95 % interval: Fisher z of rho -0.274 at n 96, "
                       "tanh(atanh(-0.274) -/+ 1.96 / sqrt(93)) = [-0.450, -0.078]"))),
    reference={"rho": -0.274, "p": 0.007, "n": 96},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes=("The original's model (12 layers x 8 heads, trained on sudoku puzzles) is not "
           "available; the bundled 96-head GPT-NeoX runs match its head count and depth. "
           "Pinned, not a replication gate: the data are a stand-in, not the original's. "
           "The magnitude band (the original's 95 % interval) is declared beside the direction, "
           "so that rho's size is tested, not only its sign."),
)


def _b5_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B5 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=B5.claim, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"x": Select("head_contribution", step="first", models=(runs[0],)),
                   "y": Select("change_from_init", step="last", models=(runs[0],))},
        test="replication", params={"method": "spearman", "n_perm": 9999, "seed": 0},
        prediction=B5.prediction, reference=B5.reference, gate="pinned",
        choices={"models": [(m,) for m in runs]},
        notes=declared + " As B5: the same replication test, the original's direction and "
              "its 95 % interval [-0.450, -0.078] as the magnitude band, on the 96 heads of one run "
              "(the original's n); each seed is one replication attempt in the curve.",
    )


B5_sudoku = _b5_on_suite("B5-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B5_bos = _b5_on_suite("B5-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B5_bos_cpu = _b5_on_suite("B5-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
