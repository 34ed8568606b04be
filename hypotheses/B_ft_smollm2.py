"""B5, B6, B7, B9, B10 (and B11, out of scope) on fine-tune trajectories of a model with anchors.

Datasets ``smollm2_ft`` and ``smollm2_ft_cont`` (datasets/smollm2_ft/README.md, declaration
benchmarks/anchors_ft.md):
SmolLM2-135M-Instruct (a dequantized 4-bit copy; 30 layers x 9 heads = 270 heads) trained
further for 300 steps of 1 x 128 tokens, ``<|im_start|>`` at position 0: three data-order seeds
on Shakespeare (``ft_shakespeare_s0/1/2``) and one continuation on Python standard-library
source, near its pretraining text (``ft_python_s0``, the noise floor: its own card and cube,
``smollm2_ft_cont``, so that the fine-tune's cube does not wait for the run that trains last).

Every trajectory trained here from scratch ends with 0 anchors; this model has them at step 0.
So the §8 labels are taken **at step 0** (the released model's own labels, fixed before any
training step: a predictor, never a consequence of the change), and each test is the
claim's registered test (B5: replication of rho -0.274; B6: Spearman of value_norm at step 0
with change_from_init at the last step, and workers minus anchors in change; B7: the
contribution x class interaction; B9: grad_alignment of workers minus anchors, and the
threshold classifier; B10: time to 90 % of the final change, workers minus anchors) with the
resampling of the original modules. Heads are the units within one run; runs are the
replicates: the primary analysis is seed 0, the three seeds the specification curve (the
engine has no per-head average over runs). ``-cont``: the same test on the continuation run,
the floor the fine-tune's verdict is read against. ``-written``: the anchor/worker contrast
with METRICS.md §9's written-norm label (``head_label_written``) at step 0.

Multiplicity: all these specs form one family, ``ft-smollm2`` (Holm within it, no primary).
Declared 13:50 UTC, when the project's verdict rule changed to "multiplicity decides" (each
claim's family across its datasets): these results were first evaluated at 13:27 under the
earlier rule (raw p), so the family was chosen after seeing their raw p-values; it keeps the
fine-tune's 17 tests out of the claim families that were re-pinned before them (adding them
there would move other datasets' verdicts), and it is stricter than raw p for every one of them.

Fidelity, said by every spec: the population is SmolLM2-135M fine-tuned on one text for 300
small steps, not a model pretrained from scratch, so a verdict says how heads that are anchors
or workers in a trained model move under further training, not how they form; the model is a
4-bit copy dequantized (about 8 % relative error per matrix), so its first steps may partly
repair quantization noise whatever the text (the continuation run shows how much); three query
heads share each K and V (GQA), so their change_from_init shares the K and V part.
"""

from lie_stats.schema import LABEL_CODES
from lie_stats.spec import HypothesisSpec, OutOfScope, Prediction, Select

from . import B5_contribution_predicts_change as b5
from . import B6_value_norm_predicts_change as b6
from . import B7_anchor_worker_decomposition as b7
from . import B9_gradient_alignment as b9
from . import B10_stabilization_timing as b10
from . import B11_initial_configuration as b11
from ._common import ANCHORS, anchors_proxy

ANCHOR, WORKER, MIXED = LABEL_CODES["anchor"], LABEL_CODES["worker"], LABEL_CODES["mixed"]
DATASET = "smollm2_ft"
#: The continuation run has its own card and cube (it trains last; the fine-tune cube does not wait for it).
FLOOR_DATASET = "smollm2_ft_cont"
#: What the fine-tune changes in the claims' design (the module docstring's "Fidelity").
FT_DIFFERS = ("intervention: 300 fine-tune steps of an already trained model, not training from "
              "initialization")
#: The three fine-tune runs (data-order seeds 0, 1, 2 on Shakespeare): the replicates.
FT_RUNS = ("ft_shakespeare_s0", "ft_shakespeare_s1", "ft_shakespeare_s2")
#: The continuation on Python standard-library source (the noise floor).
FT_FLOOR = "ft_python_s0"
RESAMPLING = {"n_perm": 9999, "n_boot": 2000, "seed": 0}
#: One multiplicity family for every declaration on these runs (changed 13:50 UTC, see the
#: module docstring): the fine-tune of a trained model is its own population and question, and
#: the claim families (B5, B6, ...) were re-pinned across their datasets before these results.
FAMILY = "ft-smollm2"

DECLARED = (
    "Declared 2026-12-05 on smollm2_ft before its cube existed (its runs were about to train; "
    "seen beforehand: the panel's SmolLM2-135M labels, 26 anchors, 111 workers, 133 mixed on the "
    "panel's probe, and the task brief's 103 of 270 heads with sink_score >= 0.5 on another "
    "probe; no metric of these runs). Labels fixed at step 0. Population: SmolLM2-135M-Instruct "
    "(dequantized 4-bit copy) fine-tuned 300 steps of 1 x 128 tokens on Shakespeare, not "
    "pretraining from scratch; the first run (seed 0) is the primary analysis, the three "
    "data-order seeds the specification curve (heads are the units, runs the replicates). "
    "GQA: three query heads share each K and V. Evaluated on what the session reached (changed "
    "12:57 UTC, before any cube of the runs existed): step 100 of the declared 300 (12,800 tokens "
    "per run), the cube at checkpoints 0, 2, 8, 32, 100 (benchmarks/anchors_ft.md, changes).")
FLOOR_DECLARED = (
    "Declared 2026-12-05 with the smollm2_ft fine-tune specs, before the cube existed: the same "
    "test on the continuation run (SmolLM2-135M trained 300 steps on Python standard-library "
    "source, near its pretraining text, same settings): the noise floor of the fine-tune's "
    "verdict, labels fixed at step 0.")


def _label(step: str, model: str, written: bool = False) -> Select:
    return Select("head_label_written" if written else "head_label", step=step, models=(model,))


def _dataset(runs: tuple[str, ...]) -> str:
    return FLOOR_DATASET if runs == (FT_FLOOR,) else DATASET


def _curve(runs: tuple[str, ...]) -> dict:
    return {"models": [(m,) for m in runs]} if len(runs) > 1 else {}


# ---------------------------------------------------------------------------------- B5
def _b5(ident: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    m = runs[0]
    return HypothesisSpec(
        id=ident, claim=b5.B5.claim, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"x": Select("head_contribution", step="first", models=(m,)),
                   "y": Select("change_from_init", step="last", models=(m,))},
        test="replication", params={"method": "spearman", "n_perm": 9999, "seed": 0},
        prediction=b5.B5.prediction, reference=b5.B5.reference, gate="pinned", multiplicity_family=FAMILY, choices=_curve(runs),
        notes=declared + " B5 as the fine-tune's initial-contribution question: does a head's "
              "contribution in the trained model (step 0) predict how much it changes under further "
              "training; the original's direction and its 95 % interval [-0.450, -0.078] as the band, "
              "on the 270 heads of one run.",
    )


B5_ft = _b5("B5-ft-smollm2", FT_RUNS, DECLARED)
B5_ft_cont = _b5("B5-ft-smollm2-cont", (FT_FLOOR,), FLOOR_DECLARED)


# ---------------------------------------------------------------------------------- B6
def _b6(ident: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    m = runs[0]
    return HypothesisSpec(
        id=ident, claim=b6.CLAIM, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"x": Select("value_norm", step="first", models=(m,)),
                   "y": Select("change_from_init", step="last", models=(m,))},
        test="correlation", params={"method": "spearman"},
        prediction=Prediction("positive"), reference={"direction": "positive"}, gate="pinned", multiplicity_family=FAMILY,
        choices=_curve(runs), notes=declared + " As B6 (value_norm at step 0, within-layer reading).",
    )


def _b6_groups(ident: str, runs: tuple[str, ...], declared: str, written: bool = False) -> HypothesisSpec:
    m = runs[0]
    return HypothesisSpec(
        id=ident, claim=b6.CLAIM, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"x": Select("change_from_init", step="last", models=(m,)),
                   "group": _label("first", m, written)},
        test="group_difference", params={"groups": (ANCHOR, WORKER)},
        prediction=Prediction("positive"), reference={"direction": "workers change more"},
        gate="pinned", multiplicity_family=FAMILY, choices=_curve(runs),
        notes=declared + " As B6-groups, with the " + ("written-norm label (§9.2)" if written else "§8 label")
              + " at step 0 instead of the last checkpoint.",
    )


B6_ft = _b6("B6-ft-smollm2", FT_RUNS, DECLARED)
B6_ft_cont = _b6("B6-ft-smollm2-cont", (FT_FLOOR,), FLOOR_DECLARED)
B6_groups_ft = _b6_groups("B6-groups-ft-smollm2", FT_RUNS, DECLARED)
B6_groups_ft_cont = _b6_groups("B6-groups-ft-smollm2-cont", (FT_FLOOR,), FLOOR_DECLARED)
B6_groups_ft_written = _b6_groups("B6-groups-ft-smollm2-written", FT_RUNS, DECLARED, written=True)


# ---------------------------------------------------------------------------------- B7
def _b7(ident: str, runs: tuple[str, ...], declared: str, written: bool = False) -> HypothesisSpec:
    m = runs[0]
    return HypothesisSpec(
        id=ident, claim=b7.CLAIM, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"y": Select("change_from_init", step="last", models=(m,)),
                   "x": Select("head_contribution", step="first", models=(m,)),
                   "group": _label("first", m, written)},
        test="class_interaction", params={**b7.PARAMS, "groups": (ANCHOR, WORKER)},
        prediction=Prediction("nonzero"), reference={"b5_rho": -0.274, "b5_p": 0.007, "n": 96},
        gate="pinned", multiplicity_family=FAMILY, choices=_curve(runs),
        notes=declared + " As B7 (anchors against workers, at least 3 per class), with the "
              + ("written-norm label (§9.2)" if written else "§8 label") + " at step 0.",
    )


B7_ft = _b7("B7-ft-smollm2", FT_RUNS, DECLARED)
B7_ft_cont = _b7("B7-ft-smollm2-cont", (FT_FLOOR,), FLOOR_DECLARED)
B7_ft_written = _b7("B7-ft-smollm2-written", FT_RUNS, DECLARED, written=True)


# ---------------------------------------------------------------------------------- B9
def _b9(ident: str, runs: tuple[str, ...], declared: str, written: bool = False) -> HypothesisSpec:
    m = runs[0]
    return HypothesisSpec(
        id=ident, claim=b9.CLAIM, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"x": Select("grad_alignment", step="last", models=(m,)),
                   "group": _label("first", m, written)},
        test="group_difference", params={**b9.RESAMPLING, "groups": (ANCHOR, WORKER)},
        prediction=Prediction("positive"), reference={"direction": "workers above anchors"},
        gate="pinned", multiplicity_family=FAMILY, choices=_curve(runs),
        notes=declared + " As B9 (grad_alignment at the last checkpoint, on the Austen probe), with the "
              + ("written-norm label (§9.2)" if written else "§8 label") + " at step 0.",
    )


def _b9_classifier(ident: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    m = runs[0]
    curve = {**_curve(runs), "threshold": (2.0, 3.0, 5.0)}
    return HypothesisSpec(
        id=ident, claim=b9.CLAIM, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"score": Select("grad_alignment", step="last", models=(m,)), "label": _label("first", m)},
        test="threshold_agreement",
        params={**b9.RESAMPLING, "threshold": 3.0, "threshold_units": "random_sd",
                "classes": (ANCHOR, MIXED, WORKER), "min_class": 3},
        prediction=Prediction("positive"), reference={"threshold": "not given by the essay"},
        gate="pinned", multiplicity_family=FAMILY, choices=curve,
        notes=declared + " As B9-classifier (t = 3 random-direction SDs of 4 d_model d_head = "
              "147,456 dimensions; the curve sweeps 2, 3, 5), with the §8 label at step 0.",
    )


B9_ft = _b9("B9-ft-smollm2", FT_RUNS, DECLARED)
B9_ft_cont = _b9("B9-ft-smollm2-cont", (FT_FLOOR,), FLOOR_DECLARED)
B9_ft_written = _b9("B9-ft-smollm2-written", FT_RUNS, DECLARED, written=True)
B9_classifier_ft = _b9_classifier("B9-classifier-ft-smollm2", FT_RUNS, DECLARED)


# ---------------------------------------------------------------------------------- B10
def _b10(ident: str, runs: tuple[str, ...], declared: str, written: bool = False) -> HypothesisSpec:
    m = runs[0]
    curve = {**_curve(runs), "scale": ("log", "linear")}
    return HypothesisSpec(
        id=ident, claim=b10.CLAIM, source=ANCHORS, datasets=(_dataset(runs),),
        fidelity=anchors_proxy(_dataset(runs), FT_DIFFERS),
        selection={"values": Select("change_from_init", step="all", models=(m,)),
                   "group": _label("first", m, written)},
        test="stabilization_time", params={**b10.PARAMS, "groups": (ANCHOR, WORKER)},
        prediction=Prediction("positive"), reference={"direction": "workers later than anchors"},
        gate="pinned", multiplicity_family=FAMILY, choices=curve,
        notes=declared + " As B10 (time to 90 % of the final change, log10 step; the curve adds the "
              "linear scale), with the " + ("written-norm label (§9.2)" if written else "§8 label")
              + " at step 0.",
    )


B10_ft = _b10("B10-ft-smollm2", FT_RUNS, DECLARED)
B10_ft_cont = _b10("B10-ft-smollm2-cont", (FT_FLOOR,), FLOOR_DECLARED)
B10_ft_written = _b10("B10-ft-smollm2-written", FT_RUNS, DECLARED, written=True)


# ---------------------------------------------------------------------------------- B11
B11_ft = OutOfScope(
    id="B11-ft-smollm2", claim=b11.CLAIM, source=ANCHORS,
    reason=("On smollm2_ft the labels exist at step 0: fine-tuning starts from SmolLM2-135M's trained "
            "weights (26 anchors on the panel's probe), not from a random initial configuration, so "
            "there is no initial random configuration to predict which heads become anchors from; "
            "the claim needs trajectories from initialization in which anchors form (none of the "
            "project's from-scratch runs has formed one)."),
    reference={"p": 0.007},
)
