"""B9: gradient alignment separates anchors and workers; a bidirectional threshold classifies them.

Test design (CLAIMS.md B9: "grad_alignment by label; classifier agreement with the
sink/value labels"), two specs on the 96-head runs, both at the last checkpoint:

B9 (group difference): ``grad_alignment`` (METRICS.md §7.5: cosine between the gradient of
the layer's ``killing_cv``, family Q, and the LM-loss gradient, w.r.t. the head's weights)
of workers minus anchors (§8 labels), permuting labels within layers (9,999 permutations,
seed 0; the statistic is centred within layers), rank-biserial effect, cluster-bootstrap
interval. Prediction positive: the essay has workers' gradients aligned with the task loss
(KF and CE agree, above +t) and anchors' disrupted (below -t).

B9-classifier (agreement): the bidirectional threshold classifier of the essay: a head whose
``grad_alignment`` is above +t is called a worker, below -t a (disrupted) anchor, between a
head in transition; its agreement with the §8 labels, mapped anchor -> below, mixed ->
between, worker -> above, is Cohen's kappa with the chance agreement computed within layers
(so a layer-level confound cannot create agreement), tested by permuting the labels within
layers (9,999 permutations, seed 0), cluster-bootstrap interval; balanced accuracy and the
pooled kappa are reported beside it. Supported when the kappa is positive with p < 0.05:
agreement beyond chance, not necessarily good agreement (the kappa says how good).
The threshold t: the essay (and its v0.6) give no value, so t is fixed by a rule that does
not look at data: three standard deviations of the cosine of two independent random
directions in the D = 4 d_model d_head dimensions of a head's weights, t = 3 / sqrt(D)
(0.033 for the bundled runs' d_model 128, d_head 16). The specification curve sweeps 2, 3
and 5 such SDs on both seeds. Stricter than CLAIMS.md: at least 3 anchors and 3 workers are
required, else inconclusive with the label counts as the reason (a classifier of anchors
cannot agree with labels that contain none).

B9-workers-vs-mixed (secondary, group difference of workers against mixed heads): added
because the bundled runs' labels hold no anchor at the last checkpoint (label counts seen
before this module was written: 0 anchor, 60 worker, 36 mixed per run; no statistic
computed); there the mixed heads are the lowest value-norm third of each layer. B9-pythia:
the group difference on Pythia-160m (needs the hub and a probe set: skipped).

B9-panel-smollm2 and B9-panel-gemma3 (declared 2026-12-02): the group difference of workers
minus anchors on the two panel decoders, the only bundled models with anchors and a
``grad_alignment`` (SmolLM2-135M: 26 anchors, 111 workers; Gemma-3-270M: 12 anchors, 25
workers, at their trained checkpoint, step 1 of the panel; step 0 is a random twin and has no
anchors). Same test and resampling as B9; a trained checkpoint only, so this is a cross-section
of converged models, not a trajectory. Not blind: an audit looked at these values before the
declaration (see each spec's notes).
"""

from lie_stats.schema import LABEL_CODES
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, P96, BOS_CPU_DECLARED, BOS_CPU_RUNS, BOS_DECLARED, BOS_RUNS, SUDOKU,
                      SUDOKU_DECLARED)

CLAIM = ("Gradient alignment cos(grad KF, grad CE) differs systematically between anchors and "
         "workers; a bidirectional threshold classifies workers (above +t), disrupted anchors "
         "(below -t) and heads in transition (between)")
ANCHOR, WORKER, MIXED = LABEL_CODES["anchor"], LABEL_CODES["worker"], LABEL_CODES["mixed"]
RESAMPLING = {"n_perm": 9999, "n_boot": 2000, "seed": 0}


def _groups_selection(model: str) -> dict:
    return {"x": Select("grad_alignment", step="last", models=(model,)),
            "group": Select("head_label", step="last", models=(model,))}


B9 = HypothesisSpec(
    id="B9", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_groups_selection("p96_s0"), test="group_difference",
    params={**RESAMPLING, "groups": (ANCHOR, WORKER)},
    prediction=Prediction("positive"), reference={"direction": "workers above anchors"},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes="Workers (code 2) minus anchors (code 1); expected inconclusive on the bundled runs, "
          "which have no anchors (label counts seen before declaring).",
)

B9_classifier = HypothesisSpec(
    id="B9-classifier", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"score": Select("grad_alignment", step="last", models=("p96_s0",)),
               "label": Select("head_label", step="last", models=("p96_s0",))},
    test="threshold_agreement",
    params={**RESAMPLING, "threshold": 3.0, "threshold_units": "random_sd",
            "classes": (ANCHOR, MIXED, WORKER), "min_class": 3},
    prediction=Prediction("positive"), reference={"threshold": "not given by the essay"},
    gate="pinned", choices={"models": [(m,) for m in P96], "threshold": (2.0, 3.0, 5.0)},
    notes="t = 3 / sqrt(4 d_model d_head) (random-direction SDs), fixed without data; the "
          "curve sweeps 2, 3, 5 SDs. Needs >= 3 anchors and >= 3 workers.",
)

B9_workers_vs_mixed = HypothesisSpec(
    id="B9-workers-vs-mixed", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection=_groups_selection("p96_s0"), test="group_difference",
    params={**RESAMPLING, "groups": (MIXED, WORKER)},
    prediction=Prediction("positive"), reference={"direction": "workers above the rest"},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes="Secondary: workers (code 2) minus mixed heads (code 0: on the bundled runs, the "
          "lowest value-norm third of each layer, none a sink); added before any statistic was "
          "computed because the bundled runs have no anchors.",
)

def _panel_spec(short: str, model: str) -> HypothesisSpec:
    """B9's test on one trained panel decoder."""
    return HypothesisSpec(
        id=f"B9-panel-{short}", claim=CLAIM, source=ANCHORS, datasets=("panel",),
        fidelity=anchors_proxy("panel"),
        selection=_groups_selection(model), test="group_difference",
        params={**RESAMPLING, "groups": (ANCHOR, WORKER)},
        prediction=Prediction("positive"), reference={"direction": "workers above anchors"},
        gate="pinned",
        notes=(f"Declared 2026-12-02 on the panel's trained {model} (step 1); B9's test and "
               "resampling unchanged. Not blind: before this declaration an exploratory audit "
               "reported workers minus anchors on the two panel decoders of -0.002 (p 0.89) and "
               "+0.0006 (p 0.04), in the order SmolLM2, Gemma-3."),
    )


B9_panel_smollm2 = _panel_spec("smollm2", "smollm2_135m")
B9_panel_gemma3 = _panel_spec("gemma3", "gemma3_270m")

B9_pythia = HypothesisSpec(
    id="B9-pythia", claim=CLAIM, source=ANCHORS, datasets=("pythia",),
    fidelity=anchors_proxy("pythia"),
    selection=_groups_selection("EleutherAI/pythia-160m"), test="group_difference",
    params={**RESAMPLING, "groups": (ANCHOR, WORKER)},
    prediction=Prediction("positive"), reference={"direction": "workers above anchors"},
    gate="pinned",
    notes="Pythia-160m (12 layers) as the public stand-in for the original's unavailable model; "
          "grad_alignment and the labels need a probe set and the hub: skipped here.",
)

_SUDOKU_GRAD = (" grad_alignment's cross-entropy on this probe is lie_stats's masked-LM loss (15 % of "
                "positions t >= 1 replaced by [BLANK], the config's mask token, and predicted "
                "against the probe's own tokens): near the training objective, not the same "
                "(datasets/pico_sudoku/README.md).")
def _b9_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B9 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection=_groups_selection(runs[0]), test="group_difference",
        params={**RESAMPLING, "groups": (ANCHOR, WORKER)},
        prediction=Prediction("positive"), reference={"direction": "workers above anchors"},
        gate="pinned", choices={"models": [(m,) for m in runs]},
        notes=declared + " As B9.",
    )


B9_sudoku = _b9_on_suite("B9-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED + _SUDOKU_GRAD)
B9_bos = _b9_on_suite("B9-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)


def _b9_classifier_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B9-classifier on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"score": Select("grad_alignment", step="last", models=(runs[0],)),
                   "label": Select("head_label", step="last", models=(runs[0],))},
        test="threshold_agreement",
        params={**RESAMPLING, "threshold": 3.0, "threshold_units": "random_sd",
                "classes": (ANCHOR, MIXED, WORKER), "min_class": 3},
        prediction=Prediction("positive"), reference={"threshold": "not given by the essay"},
        gate="pinned", choices={"models": [(m,) for m in runs], "threshold": (2.0, 3.0, 5.0)},
        notes=declared + " As B9-classifier (t = 3 random-direction SDs; needs >= 3 anchors "
              "and >= 3 workers).",
    )


B9_classifier_sudoku = _b9_classifier_on_suite("B9-classifier-sudoku", "pico_sudoku", SUDOKU,
                                               SUDOKU_DECLARED + _SUDOKU_GRAD)
B9_classifier_bos = _b9_classifier_on_suite("B9-classifier-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B9_bos_cpu = _b9_on_suite("B9-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
B9_classifier_bos_cpu = _b9_classifier_on_suite("B9-classifier-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS,
                                                BOS_CPU_DECLARED)
