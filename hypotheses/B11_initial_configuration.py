"""B11: the initial random configuration partly predicts which heads become anchors.

Test design (CLAIMS.md B11: "label at the end ~ metrics at the first checkpoint (AUC with
permutation p)"). The first-checkpoint metric is declared, not searched for:
``head_contribution`` at the first checkpoint (METRICS.md §5.4), the quantity the essay's
p = 0.007 result is about and the one it ties to the anchor/worker split ("heads with
initially higher contribution (proto-anchors)", "initially lower contribution
(proto-workers)"). Its AUC for anchors (§8 label at the last checkpoint) against every other
head is computed from head pairs within the same layer (so a layer-level difference in
contribution, which sums to 1 per layer anyway, cannot create it), tested by permuting the
labels within layers (9,999 permutations, seed 0; exact null expectation 0.5), with a
cluster-bootstrap interval; the ordinary pooled AUC is reported beside it. Prediction: AUC
above 0.5 (anchors start with a larger contribution). Each 96-head seed is one choice of
the specification curve. Stricter than CLAIMS.md: within-layer AUC and permutation; at least
2 anchors, else inconclusive with the label counts. Not done: a cross-validated logistic
score of several first-checkpoint metrics (the essay names no other metric).

B11-workers (secondary): the essay's other half, workers against every other head,
prediction AUC below 0.5 (proto-workers start lower). Added because the bundled runs' labels
hold no anchor at the last checkpoint (label counts seen before this module was written: 0
anchor, 60 worker, 36 mixed per run; no statistic computed). B11-pythia: the primary on
Pythia-160m (needs the hub and a probe set: skipped).
"""

from lie_stats.schema import LABEL_CODES
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, P96, BOS_CPU_DECLARED, BOS_CPU_RUNS, BOS_DECLARED, BOS_RUNS, SUDOKU,
                      SUDOKU_DECLARED)

CLAIM = "The initial random configuration partly predicts which heads become anchors"
ANCHOR, WORKER = LABEL_CODES["anchor"], LABEL_CODES["worker"]
RESAMPLING = {"n_perm": 9999, "n_boot": 2000, "seed": 0}


def _selection(model: str) -> dict:
    return {"x": Select("head_contribution", step="first", models=(model,)),
            "label": Select("head_label", step="last", models=(model,))}


B11 = HypothesisSpec(
    id="B11", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_selection("p96_s0"), test="class_auc",
    params={**RESAMPLING, "positive": ANCHOR, "negative": None},
    prediction=Prediction("positive", value=0.5), reference={"p": 0.007},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes="Anchors (code 1) against all other heads; expected inconclusive on the bundled runs, "
          "which have no anchors (label counts seen before declaring).",
)

B11_workers = HypothesisSpec(
    id="B11-workers", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_selection("p96_s0"), test="class_auc",
    params={**RESAMPLING, "positive": WORKER, "negative": None},
    prediction=Prediction("negative", value=0.5), reference={"p": 0.007},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes="Secondary: workers (code 2) against all other heads, AUC predicted below 0.5; added "
          "before any statistic was computed because the bundled runs have no anchors.",
)

B11_pythia = HypothesisSpec(
    id="B11-pythia", claim=CLAIM, source=ANCHORS, datasets=("pythia",),
    fidelity=anchors_proxy("pythia"),
    selection=_selection("EleutherAI/pythia-160m"), test="class_auc",
    params={**RESAMPLING, "positive": ANCHOR, "negative": None},
    prediction=Prediction("positive", value=0.5), reference={"p": 0.007},
    gate="pinned",
    notes="Pythia-160m (12 layers) as the public stand-in for the original's unavailable model "
          "(first checkpoint: step 1); the labels need a probe set and the hub: skipped here.",
)


def _b11_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B11 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection=_selection(runs[0]), test="class_auc",
        params={**RESAMPLING, "positive": ANCHOR, "negative": None},
        prediction=Prediction("positive", value=0.5), reference={"p": 0.007},
        gate="pinned", choices={"models": [(m,) for m in runs]},
        notes=declared + " As B11 (anchors at the last checkpoint against every other head, "
              "by head_contribution at the first).",
    )


B11_sudoku = _b11_on_suite("B11-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B11_bos = _b11_on_suite("B11-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B11_bos_cpu = _b11_on_suite("B11-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
