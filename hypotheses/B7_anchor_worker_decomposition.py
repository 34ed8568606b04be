"""B7: the B5 signal decomposes into two populations (anchors, workers) with different dynamics.

Test design (CLAIMS.md B7: "change ~ contribution x class interaction (mixed model, layer as
group) or a two-component mixture test"). Chosen: the interaction, tested by permutation.
Over the heads labelled anchor or worker at the last checkpoint (METRICS.md §8; mixed heads
left out), ``change_from_init`` at the last checkpoint (§5.5) is regressed on
``head_contribution`` at the first checkpoint (§5.4), the class, and their interaction, with
one intercept per layer (layer fixed effects: heads are nested in layers), on standardized
ranks (B5 is a Spearman correlation, so the slopes are on its scale). The interaction
coefficient (workers' slope minus anchors') is tested by the Freedman-Lane permutation of the
reduced model's residuals within layers, 9,999 permutations, seed 0; cluster-bootstrap
interval (2,000 draws). Supported when p < 0.05 (two-sided: the essay predicts *different*
dynamics, not which population's slope is steeper); the two slopes, the class main effect and
the OLS p are reported beside it. Each 96-head seed is one choice of the specification curve.

Why not the registry's ``mixed_model`` kind: it keeps every label level (mixed heads
included, so its ``z[T.2]`` terms would compare against whichever level is the reference)
and its Wald p (REML, 12 groups) has no calibration on layer-confounded data; the
Freedman-Lane p here is checked to hold its size on such nulls
(``tests/stats/test_classes.py``). Why not a mixture: the classes are observed (§8 labels),
so a latent two-component mixture would test a different, weaker claim (bimodality) with
little power at n = 96. Stricter than CLAIMS.md: layer fixed effects and a permutation p
instead of a random-intercept Wald test; at least 3 heads per class, else inconclusive with
the label counts as the reason.

B7-workers-vs-mixed (secondary): the same test with the two classes worker and mixed. Added
because the §8 labels of the bundled runs hold no anchor at the last checkpoint (label counts
looked at before this module was written: 0 anchor, 60 worker, 36 mixed in each 96-head
run; no statistic of any kind was computed): there, the mixed heads are exactly the heads in
the lowest value-norm third of their layer (no head reaches sink_score 0.5), i.e. the
value-norm half of the anchor definition. B7-pythia: the same design on Pythia-160m (12
layers, like the original's model); its cube needs the hub and a probe set (skipped).
"""

from lie_stats.schema import LABEL_CODES
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, P96, BOS_CPU_DECLARED, BOS_CPU_RUNS, BOS_DECLARED, BOS_RUNS, SUDOKU,
                      SUDOKU_DECLARED)

CLAIM = ("The B5 signal (initial contribution predicts change) decomposes into two populations, "
         "anchors and workers, with different change dynamics")
ANCHOR, WORKER, MIXED = LABEL_CODES["anchor"], LABEL_CODES["worker"], LABEL_CODES["mixed"]
PARAMS = {"n_perm": 9999, "n_boot": 2000, "seed": 0, "ranks": True, "min_group": 3}


def _selection(model: str) -> dict:
    return {"y": Select("change_from_init", step="last", models=(model,)),
            "x": Select("head_contribution", step="first", models=(model,)),
            "group": Select("head_label", step="last", models=(model,))}


B7 = HypothesisSpec(
    id="B7", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_selection("p96_s0"), test="class_interaction",
    params={**PARAMS, "groups": (ANCHOR, WORKER)},
    prediction=Prediction("nonzero"), reference={"b5_rho": -0.274, "b5_p": 0.007, "n": 96},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes=("Anchors (code 1) against workers (code 2); effect: workers' slope minus anchors' "
           "on standardized ranks. Declared after seeing only the label counts of the bundled "
           "runs (0 anchors at the last checkpoint), so this primary test is expected to be "
           "inconclusive there for want of anchors."),
)

B7_workers_vs_mixed = HypothesisSpec(
    id="B7-workers-vs-mixed", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_selection("p96_s0"), test="class_interaction",
    params={**PARAMS, "groups": (MIXED, WORKER)},
    prediction=Prediction("nonzero"), reference={"b5_rho": -0.274, "b5_p": 0.007, "n": 96},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes=("Secondary: mixed heads (code 0; on the bundled runs, the lowest value-norm third of "
           "each layer, none a sink) against workers (code 2). Added, before any statistic was "
           "computed, because the bundled runs have no anchors."),
)

B7_pythia = HypothesisSpec(
    id="B7-pythia", claim=CLAIM, source=ANCHORS, datasets=("pythia",),
    fidelity=anchors_proxy("pythia"),
    selection=_selection("EleutherAI/pythia-160m"), test="class_interaction",
    params={**PARAMS, "groups": (ANCHOR, WORKER)},
    prediction=Prediction("nonzero"), reference={"b5_rho": -0.274, "b5_p": 0.007, "n": 96},
    gate="pinned",
    notes=("The original's model (12 x 8 heads, trained on sudoku) is not available; Pythia-160m "
           "(12 layers x 12 heads) is the field's public stand-in. Needs the hub and a probe set "
           "(the §8 labels are activation metrics): skipped here."),
)


def _b7_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B7 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection=_selection(runs[0]), test="class_interaction",
        params={**PARAMS, "groups": (ANCHOR, WORKER)},
        prediction=Prediction("nonzero"), reference={"b5_rho": -0.274, "b5_p": 0.007, "n": 96},
        gate="pinned", choices={"models": [(m,) for m in runs]},
        notes=declared + " As B7 (anchors against workers); at least 3 heads per class, "
              "else inconclusive with the label counts.",
    )


B7_sudoku = _b7_on_suite("B7-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B7_bos = _b7_on_suite("B7-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B7_bos_cpu = _b7_on_suite("B7-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
