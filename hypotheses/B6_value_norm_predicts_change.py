"""B6: anchor/worker value norms: heads with low value norm change less than high ones.

Test design (CLAIMS.md B6), changed 2026-12-02 (see ``NOTES``):

- ``B6`` (primary): Spearman between ``value_norm`` at the first checkpoint (METRICS.md §7.3,
  at initialisation, on the suite's probe set) and ``change_from_init`` (§5.5) at the last,
  permuting within layers (heads are nested in layers), cluster-bootstrap interval. A value
  norm measured before training cannot be a consequence of the change it predicts. The
  verdict reads the within-layer estimate ``effect - null_center`` (the correlation beyond
  what the within-layer permutation null expects; ``decide_correlation``).
- ``B6-partial``: the partial Spearman correlation of ``value_norm`` and ``change_from_init``,
  both at the last checkpoint, given the head's own ``ov_norm`` at the last checkpoint (§5.3):
  the head's V/O norm growth, since at initialisation every head's OV norm is drawn from
  the same distribution. Same permutation and interval, same within-layer reading.
- ``B6-groups``: the difference in change between the §8 labels (workers minus anchors;
  rank-biserial effect, Hedges g beside it), permuting labels within layers. With no
  anchors among the suite's heads it is inconclusive, with the label counts in its reason.

Each 96-head seed is one choice of the specification curve.
"""

from lie_stats.schema import LABEL_CODES
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, P96, BOS_CPU_DECLARED, BOS_CPU_RUNS, BOS_DECLARED, BOS_RUNS, SUDOKU,
                      SUDOKU_DECLARED)

CLAIM = ("Heads with low value norm (anchors) change less during training than heads with "
         "high value norm (workers)")
NOTES = ("B6 takes value_norm at initialisation (a predictor, not a consequence: at the last "
         "step value_norm tracks the head's ov_norm, rho 0.87-0.92, and change_from_init tracks "
         "the head's own V/O norm growth, 0.72-0.89, so a correlation of the two at the last "
         "checkpoint restates that trained heads whose OV grew changed more); B6-partial "
         "partials out the head's ov_norm at the last checkpoint; both are judged on the "
         "within-layer estimate (effect - null_center).")

B6 = HypothesisSpec(
    id="B6", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"x": Select("value_norm", step="first", models=("p96_s0",)),
               "y": Select("change_from_init", step="last", models=("p96_s0",))},
    test="correlation", params={"method": "spearman"},
    prediction=Prediction("positive"), reference={"direction": "positive"}, gate="pinned",
    choices={"models": [(m,) for m in P96]}, notes=NOTES,
)

B6_partial = HypothesisSpec(
    id="B6-partial", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"x": Select("value_norm", step="last", models=("p96_s0",)),
               "y": Select("change_from_init", step="last", models=("p96_s0",)),
               "covar": Select("ov_norm", step="last", models=("p96_s0",))},
    test="partial_correlation", params={"method": "spearman"},
    prediction=Prediction("positive"), reference={"direction": "positive"}, gate="pinned",
    choices={"models": [(m,) for m in P96]}, notes=NOTES,
)

B6_groups = HypothesisSpec(
    id="B6-groups", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"x": Select("change_from_init", step="last", models=("p96_s0",)),
               "group": Select("head_label", step="last", models=("p96_s0",))},
    test="group_difference",
    params={"groups": (LABEL_CODES["anchor"], LABEL_CODES["worker"])},
    prediction=Prediction("positive"), reference={"direction": "workers change more"},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes="Labels of METRICS.md §8 at the last checkpoint: sink_score >= 0.5 and value_norm in "
          "the layer's lowest third (anchor); sink_score < 0.5 and value_norm above it (worker). "
          "The anchor/worker contrast the claim is about is not testable on the suite: its "
          "heads hold 0 anchors (largest sink_score 0.048), so the comparison is inconclusive "
          "with the label counts in its reason (declaration unchanged 2026-12-02).",
)


def _b6_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B6 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"x": Select("value_norm", step="first", models=(runs[0],)),
                   "y": Select("change_from_init", step="last", models=(runs[0],))},
        test="correlation", params={"method": "spearman"},
        prediction=Prediction("positive"), reference={"direction": "positive"}, gate="pinned",
        choices={"models": [(m,) for m in runs]}, notes=declared + " As B6.",
    )


B6_sudoku = _b6_on_suite("B6-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B6_bos = _b6_on_suite("B6-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)


def _b6_partial_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B6-partial on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"x": Select("value_norm", step="last", models=(runs[0],)),
                   "y": Select("change_from_init", step="last", models=(runs[0],)),
                   "covar": Select("ov_norm", step="last", models=(runs[0],))},
        test="partial_correlation", params={"method": "spearman"},
        prediction=Prediction("positive"), reference={"direction": "positive"}, gate="pinned",
        choices={"models": [(m,) for m in runs]}, notes=declared + " As B6-partial.",
    )


B6_partial_sudoku = _b6_partial_on_suite("B6-partial-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B6_partial_bos = _b6_partial_on_suite("B6-partial-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)


def _b6_groups_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B6-groups on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"x": Select("change_from_init", step="last", models=(runs[0],)),
                   "group": Select("head_label", step="last", models=(runs[0],))},
        test="group_difference",
        params={"groups": (LABEL_CODES["anchor"], LABEL_CODES["worker"])},
        prediction=Prediction("positive"), reference={"direction": "workers change more"},
        gate="pinned", choices={"models": [(m,) for m in runs]},
        notes=declared + " As B6-groups (METRICS.md §8 labels at the last checkpoint); "
              "inconclusive, with the label counts, if the runs hold too few anchors.",
    )


B6_groups_sudoku = _b6_groups_on_suite("B6-groups-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B6_groups_bos = _b6_groups_on_suite("B6-groups-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B6_bos_cpu = _b6_on_suite("B6-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
B6_partial_bos_cpu = _b6_partial_on_suite("B6-partial-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
B6_groups_bos_cpu = _b6_groups_on_suite("B6-groups-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
