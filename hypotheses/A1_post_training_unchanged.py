"""A1: post-training leaves the attention Killing-form metrics unchanged (< 0.1 %).

Test design (CLAIMS.md A1): "< 0.1 %, every metric, every layer, Q and O families" is an
intersection over units, so it is tested as one: the intersection-union test
``iut_equivalence`` (lie_stats.stats.intersection). A unit is one layer of one cell, a cell one
Killing-form summary of METRICS.md §4.3-§4.4 (``killing_cv``, ``killing_eig_spread``) in one
family (Q, O): 2 x 2 cells x 12 layers = 48 units. A unit's change is the mean over the two
fine-tuned seeds of log(tuned / base), base the fine-tune's first checkpoint (bit-identical to
its parent's step 512) and tuned its last. Supported only when every unit's own TOST
(±log 1.001) rejects at alpha; refuted when some unit is significantly beyond ±0.1 %
(Bonferroni over the 48 units); otherwise inconclusive.

Noise floor of a unit's change, pooled per unit (``pool="layer"``: layers differ in how
much they move, so no pooling across layers): the two seeds' deviations from their mean
(between-seed differences of the change; 1 df) and the change of the same summary and layer
in the two pretraining runs over their last checkpoint interval (step 475 -> 512:
late-pretraining drift, what ordinary training does to a layer in 37 steps at the full
learning rate, about the parameter movement of the fine-tune's 128 steps at 1/10 of it;
2 df): t with 3 df per unit.
Exact operators only (projection "none"): compressed operators are other estimands (A10).

Magnitude (2026-12-04): the essay's "less than one tenth of one percent" is an upper bound on
every unit, so its band is [0, 0.1 %] for the largest |unit change| (``exp(|mean log
change|) - 1`` of the unit with the largest one), with an interval simultaneous over the
units (each unit's |change| at 1 - alpha / n, Bonferroni; the interval of the maximum from
the maxima of the ends): "outside" is then the refutation rule's own evidence that some unit
lies beyond 0.1 %.

``A1-converged`` applies the same test to the pair re-made from converged bases
(datasets/pico_converged): the fine-tune's learning rate below the base's final one, and the
noise floor each base's continuation on its own text over the same steps at the same rates.
"""

from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select

from ._common import CONVERGED_DECLARED, CONVERGED_FLOOR, CONVERGED_TUNED, GEOMETRY, PAIR_DIFFERS, proxy

CLAIM = ("Post-training (RLHF / instruction tuning) leaves the attention Killing-form metrics "
         "unchanged: < 0.1 % relative difference, every metric, every layer, Q and O families")
REFERENCE = {"max_relative_difference": 0.001}
#: The essay's "Less than one tenth of one percent across every metric, every layer, both Q
#: and O projections": a bound, read on the largest unit's |relative change|.
BELOW_BOUND = Magnitude(
    reference=0.001, low=0.0, high=0.001, scale="absolute",
    estimate="largest_abs_change", interval=("largest_abs_ci_low", "largest_abs_ci_high"),
    justification=("'Less than one tenth of one percent across every metric, every layer, both Q and "
                   "O projections': an upper bound on every unit's relative change, not a point "
                   "figure, so the band is [0, 0.1 %] (no change below the bound is against the "
                   "claim), compared with the largest |unit change| (exp(|mean log change|) - 1, on "
                   "the scale of the TOST bound log(1.001)) and its interval simultaneous over the "
                   "units (Bonferroni: each unit's |change| at 1 - alpha / n; the maximum's interval "
                   "from the maxima of the ends). Declared 2026-12-04, before this estimate was "
                   "computed; the direction's estimates (the largest signed change) were public in "
                   "reports/ and were not read for this declaration."))
#: The fine-tuned seeds (the runs, replicates of each unit) and their pretraining parents.
TUNED = ("p96_s0_ft", "p96_s1_ft")
PARENTS = ("p96_s0", "p96_s1")
#: The noise floor's late-pretraining interval (the last one the pretraining cube holds).
FLOOR_STEPS = (475, 512)
METRICS = ("killing_cv", "killing_eig_spread")
CELL_FAMILIES = ("Q", "O")
NOTES = ("Stand-in pair: the bundled 96-head runs fine-tuned on the World English Bible at 1/10 "
         "of the pretraining learning rate (supervised next-token training on another text, "
         "not RLHF). The claim is an intersection over layers, metrics and families, so it is one "
         "intersection-union test over 48 (metric x family x layer) units, the two fine-tuned "
         "seeds as replicates, with a noise floor from between-seed differences and "
         "late-pretraining drift (steps 475 -> 512 of the parents), pooled per unit; dataset "
         "pico_pythia_pair (the fine-tunes and their parents in one cube); exact operators only; no "
         "specification curve over families or compressions (the families are the units, "
         "compressions are other estimands). The prediction carries the essay's bound as a "
         "magnitude: the largest |unit change| with an interval simultaneous over the units "
         "(Bonferroni) against [0, 0.1 %].")


def _selection(tuned: tuple[str, ...], floor_models: tuple[str, ...],
               floor_steps: tuple) -> dict[str, Select]:
    sel: dict[str, Select] = {}
    for metric in METRICS:
        for family in CELL_FAMILIES:
            cell = f"{metric}_{family}"
            common = {"family": family, "projection": "none"}
            sel[f"base__{cell}"] = Select(metric, step="first", models=tuned, **common)
            sel[f"tuned__{cell}"] = Select(metric, step="last", models=tuned, **common)
            sel[f"floor_start__{cell}"] = Select(metric, step=floor_steps[0], models=floor_models, **common)
            sel[f"floor_end__{cell}"] = Select(metric, step=floor_steps[1], models=floor_models, **common)
    return sel


def _a1_on_pair(ident: str, dataset: str, tuned: tuple[str, ...], floor_models: tuple[str, ...],
                floor_steps: tuple, notes: str) -> HypothesisSpec:
    """A1's intersection-union test on one post-training pair: ``tuned`` the fine-tuned runs
    (replicates), the noise floor the change of ``floor_models`` from ``floor_steps[0]`` to
    ``floor_steps[1]``."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=GEOMETRY, datasets=(dataset,),
        fidelity=proxy(*PAIR_DIFFERS[dataset]),
        selection=_selection(tuned, floor_models, floor_steps), test="iut_equivalence",
        params={"pool": "layer"}, prediction=Prediction("equivalent", bound=0.001, magnitude=BELOW_BOUND),
        reference=REFERENCE, gate="pinned", notes=notes,
    )


A1 = _a1_on_pair("A1", "pico_pythia_pair", TUNED, PARENTS, FLOOR_STEPS, NOTES)

A1_converged = _a1_on_pair(
    "A1-converged", "pico_converged", CONVERGED_TUNED, CONVERGED_FLOOR, ("first", "last"),
    "The pair re-made from converged bases (datasets/pico_converged): three 6 x 8 bases trained "
    "2,560 steps to the end of their cosine (lr 2e-4), fine-tuned on the World English Bible for "
    "256 steps at a peak of 1e-4, below the base's final rate (24 units: 2 metrics x 2 families x "
    "6 layers, 3 seeds). Noise floor: each base's continuation on its own pretraining text for the "
    "same 256 steps at the same rates (the c48_s*_cont runs, first -> last checkpoint), the "
    "late-pretraining drift the fine-tune is measured against, with the three seeds' deviations "
    "from their mean. " + CONVERGED_DECLARED)
