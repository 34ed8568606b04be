"""B8: functional Killing form: part of boundary-layer enrichment is anchor geometry;
weighting by value norm lowers boundary enrichment relative to the total.

Test design (CLAIMS.md B8: "enrichment profile of functional vs total Killing form"; made
stricter as below). Test kind ``functional_boundary_shift``
(:func:`lie_stats.stats.pairwise.functional_boundary_shift`).

Forms. The total form is the Killing form ``K[i,j]`` (METRICS.md §3.4) and the functional
form ``Kf[i,j] = K[i,j] w_i w_j``, ``w_h`` = the head's ``value_norm`` (§7.3) over its layer
mean (§8), each checkpoint with its own value norms (equal to the cube's
``killing_functional``, tests/spec/kinds/test_pairwise.py). The unnormalized ``K`` is used because the
weights cancel in ``Khat`` (``Khat`` of ``Kf`` is ``Khat`` of ``K``): on ``killing_cv`` the
weighting could not change anything.

Estimate. For each form, the boundary ratio of its layer enrichment (METRICS.md §6.1,
§6.3): layer summary last / first, the mean over the first and last layer over the interior
mean; the layer summary is the essay's CV (``std / mean |.|`` over pairs ``i < j``,
``killing_cv``'s statistic applied to the unnormalized form). Effect: functional ratio /
total ratio (< 1 when the weighting lowers the boundary enrichment), with a bootstrap
interval resampling heads within layers (the same heads for both forms and checkpoints).

Test (stricter than CLAIMS.md). Any unequal weighting changes a form's CV, whatever heads
carry the geometry (weights add their own dispersion). The permutation null keeps the
weights and reassigns each head's pair (value norm first, last) at random among the heads
of its layer: it asks whether the *value-norm assignment* lowers the boundary enrichment
more than weights of the same spread would. One-sided p (lowering).

Premise (CLAIMS.md B8 speaks of anchors carrying part of the boundary enrichment): the
test is only run on data with at least 3 heads labelled anchor (METRICS.md §8,
``head_label`` at the last checkpoint; ``min_anchors`` 3) and a total-form boundary
enrichment above 1 (``require_total_enrichment``: the boundary layers are more enriched than
the interior, there is an enrichment to lower); otherwise the verdict is inconclusive with
the anchor count and the ratio in the reason.

Verdict: supported when the one-sided permutation p < 0.05; refuted when the p in the other
direction < 0.05; inconclusive otherwise. The interval describes the effect only: it
resamples heads within layers and so often leaves out the few heads that carry the effect
(with an effect planted, p < 0.05 in 84 % of simulated cubes but the interval below 1 in
14.5 %). The specification curve sweeps the two 96-head runs, the operator families and
the layer summary (``cv``; ``mean_abs``, the form's magnitude, where the weights act as a
weighted mean and anchors' large entries are directly discounted).

Data. Needs activations (``value_norm``): the two 96-head runs of pico_pythia (probe at
every checkpoint). The panel is declared too (B8-panel; mpnet primary): it has no
activation metrics yet, so it is skipped with the reason until they are added. The
post-training pair and Pythia have no probe pass and are not declared. Declared before any
evaluation on the bundled data.
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, FAMILIES, P96, BOS_CPU_DECLARED, BOS_CPU_RUNS, BOS_DECLARED,
                      BOS_RUNS, SUDOKU, SUDOKU_DECLARED)

CLAIM = ("Functional Killing form: weighting by value norm lowers boundary-layer enrichment "
         "relative to the total Killing form (part of it is anchor geometry)")
PANEL_MODELS = ("mpnet", "minilm_l6", "minilm_l3", "smollm2_135m", "gemma3_270m")
#: The claim's premise (see the module docstring).
PREMISE = {"min_anchors": 3, "require_total_enrichment": True}


def _selection(model: str) -> dict:
    forms = dict(family="Q", projection="none", models=(model,))
    return {"first": Select("killing", step="first", **forms),
            "last": Select("killing", step="last", **forms),
            "w_first": Select("value_norm", step="first", models=(model,)),
            "w_last": Select("value_norm", step="last", models=(model,)),
            "labels": Select("head_label", step="last", models=(model,))}


B8 = HypothesisSpec(
    id="B8", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_selection("p96_s0"),
    test="functional_boundary_shift", params={"layer_summary": "cv", **PREMISE},
    prediction=Prediction("below", value=1.0), reference={"direction": "functional below total"},
    gate="pinned",
    choices={"models": [(m,) for m in P96], "family": FAMILIES, "layer_summary": ("cv", "mean_abs")},
    notes="Primary: p96_s0, family Q, exact operators, CV summary. The claim's premise is "
          "declared (at least 3 anchors, total-form boundary enrichment above 1; else "
          "inconclusive with the counts), and the verdict is decided by the calibrated one-sided "
          "permutation p, the within-layer head bootstrap interval only describing (it drops the "
          "heads that carry the effect: 14.5 % power where the p has 84 %).",
)

B8_panel = HypothesisSpec(
    id="B8-panel", claim=CLAIM, source=ANCHORS, datasets=("panel",),
    fidelity=anchors_proxy("panel"),
    selection=_selection("mpnet"),
    test="functional_boundary_shift", params={"layer_summary": "cv", **PREMISE},
    prediction=Prediction("below", value=1.0), reference={"direction": "functional below total"},
    gate="pinned",
    choices={"models": [(m,) for m in PANEL_MODELS], "family": FAMILIES},
    notes="Trained vs seeded random-init twin; skipped until the panel has value_norm. "
          "The premise (3 anchors, total enrichment above 1) is declared and the p decides, as "
          "for B8.",
)


def _b8_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B8 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection=_selection(runs[0]),
        test="functional_boundary_shift", params={"layer_summary": "cv", **PREMISE},
        prediction=Prediction("below", value=1.0), reference={"direction": "functional below total"},
        gate="pinned",
        choices={"models": [(m,) for m in runs], "family": FAMILIES, "layer_summary": ("cv", "mean_abs")},
        notes=declared + " As B8, with its premise (at least 3 anchors and total-form "
              "boundary enrichment above 1, else inconclusive with the counts).",
    )


B8_sudoku = _b8_on_suite("B8-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B8_bos = _b8_on_suite("B8-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B8_bos_cpu = _b8_on_suite("B8-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
