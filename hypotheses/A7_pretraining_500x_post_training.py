"""A7: the pretraining signal is ~500x the post-training signal.

Test design (CLAIMS.md A7: "ratio of pretraining change to post-training change of the same
metrics"), made precise:

* **Change.** For a layer summary ``m`` (METRICS.md §4) of layer ``l``: pretraining change
  ``|log(m_l(512) / m_l(0))|`` of a 96-head run (step 0 = random init, as the essay's step 1),
  post-training change ``|log(m_l(128) / m_l(0))|`` of its own fine-tune (whose step 0 is the
  parent's step 512). Log changes are scale-free and symmetric, so metrics with different
  units and either direction of change compare, and a ratio of them is unit-free.
* **Ratio.** ``R = mean pretraining change / mean post-training change`` over the same
  units (the 12 layers of both seeds, each parent paired with its own fine-tune).
* **Interval.** Since 2026-12-04 Fieller's interval with the run as the unit (``unit='run'``:
  each run's summed changes are one cluster, df = runs - 1). Before: Fieller over layers
  within runs; at first, a stratified cluster bootstrap: layers resampled with replacement within each
  seed, numerator and denominator from the same resampled layers (the pairing kept); 90 %
  percentile interval (the TOST reading at alpha 0.05).
* **Verdict (magnitude, not just direction).** Supported when the interval lies inside
  ``[50, 5000]`` (500 within one decade: the essay itself says "five hundred times" and, a
  sentence later, "five thousand times smaller"); refuted when it lies entirely outside;
  inconclusive otherwise. ``A7-direction`` reports the weaker reading (R > 1, 95 % interval).
* **Metrics.** One spec per metric: the Killing-form summaries of A1 (``killing_cv``,
  ``killing_eig_spread``) and the commutator variances of A3 (``commutator_var``,
  ``commutator_raw_var``); family Q exact as primary, families and compressions in the
  specification curve. ``A7-params`` applies the same ratio to the parameters themselves:
  the relative Frobenius change of every per-layer parameter category (METRICS.md §6.4,
  ``param_delta_layer``), units = (category, layer).

How this improves on CLAIMS.md's minimal design: it fixes what "change" and "the same
metrics" mean (log changes of named summaries, same layers, same lineage), gives the ratio an
interval that respects the layer structure and the pairing, pools the two seeds as strata
rather than picking one, and turns "~500x" into a pre-declared band that can support or
refute the magnitude, with the direction reported separately.

``A7-*-converged`` apply the same specs to the pair re-made from converged bases
(datasets/pico_converged), and ``A7-above-floor-converged`` asks whether its post-training
change stands above the noise floor: the change of each fine-tune over the change of its
continuation twin (the same base, steps and rates on the pretraining text).

``A7-pythia`` records the essay's own setting (Pythia-410m pretraining, step 1 -> 143,000) as
out of scope: it needs a post-trained Pythia-410m of known lineage, which EleutherAI does not
publish (the essay's RLHF pair is unnamed), so the pythia card cannot build it.
"""

from lie_stats.spec import HypothesisSpec, Magnitude, OutOfScope, Prediction, Select

from ._common import (CONVERGED_BASES, CONVERGED_DECLARED, CONVERGED_FLOOR, CONVERGED_TUNED, FAMILIES,
                      GEOMETRY, P96, PAIR_DIFFERS, PROJECTIONS, proxy)

CLAIM = "The pretraining signal is ~500x the post-training signal"
REFERENCE = {"ratio": 500.0, "also_stated": 5000.0}
FT = ("p96_s0_ft", "p96_s1_ft")
#: The band declared with the first version of these specs (2026-11-30), now also the
#: magnitude field's: kept, not narrowed, because it was fixed before any evaluation.
DECADE = Magnitude(
    reference=500.0, low=50.0, high=5000.0, scale="ratio",
    justification=("The essay says 'five hundred times' and, a sentence later, 'five thousand times "
                   "smaller' for the same ratio: one decade around 500 ([50, 5,000]), the band these "
                   "specs declared on 2026-11-30 before their first evaluation."))
BAND = Prediction("equivalent", value=500.0, bound=1.0, magnitude=DECADE)  # [50, 5000]: one decade around 500
NOTES = ("Pretraining: p96_s0/p96_s1 steps 0 -> 512; post-training: their Bible fine-tunes steps "
         "0 -> 128 (1/10 of the learning rate; not RLHF). Pre-registration note: the point "
         "parameter-delta maps (not the metric changes) of p96_s0 0->512 and p96_s0_ft 0->128 "
         "were printed by a smoke check of lie_stats.delta before this declaration was committed. "
         "The prediction carries the same decade band as a magnitude (lie_stats.spec.magnitude), "
         "so every A7 result reports its magnitude; A7-direction, the weak reading, is supported "
         "only when its interval also overlaps [50, 5,000]. The run is the unit of resampling "
         "(params unit='run': each run's summed pretraining and post-training change is one "
         "cluster of Fieller's test, df = runs - 1 = 1), so the interval holds the between-run "
         "variance. With two seeds the interval is wide.")


def _four(metric: str, pre: tuple[str, ...], post: tuple[str, ...], **dims: str) -> dict[str, Select]:
    return {"pre_first": Select(metric, step="first", models=pre, **dims),
            "pre_last": Select(metric, step="last", models=pre, **dims),
            "post_first": Select(metric, step="first", models=post, **dims),
            "post_last": Select(metric, step="last", models=post, **dims)}


def _a7_on_pair(suffix: str, dataset: str, pre: tuple[str, ...], post: tuple[str, ...],
                notes: str) -> dict[str, HypothesisSpec]:
    """A7's specs on one pair: ``pre`` the pretraining runs, ``post`` their fine-tunes (in the
    same order, each run paired with its own)."""
    def metric_spec(metric: str) -> HypothesisSpec:
        return HypothesisSpec(
            id=f"A7-{metric}{suffix}", claim=CLAIM, source=GEOMETRY, datasets=(dataset,),
            fidelity=proxy(*PAIR_DIFFERS[dataset]),
            selection=_four(metric, pre, post, family="Q", projection="none"), test="ratio_of_changes",
            params={"ci": 0.90, "resample_by": "run"}, prediction=BAND, reference=REFERENCE, gate="pinned",
            choices={"family": FAMILIES, "projection": PROJECTIONS}, notes=notes,
        )

    specs = {metric: metric_spec(metric)
             for metric in ("killing_cv", "killing_eig_spread", "commutator_var", "commutator_raw_var")}
    specs["direction"] = HypothesisSpec(
        id=f"A7-direction{suffix}", claim=CLAIM, source=GEOMETRY, datasets=(dataset,),
        fidelity=proxy(*PAIR_DIFFERS[dataset]),
        selection=_four("killing_cv", pre, post, family="Q", projection="none"), test="ratio_of_changes",
        params={"ci": 0.95, "resample_by": "run"}, prediction=Prediction("above", value=1.0, magnitude=DECADE),
        reference=REFERENCE, gate="pinned", choices={"family": FAMILIES, "projection": PROJECTIONS},
        notes="The weak reading: pretraining changes the Killing summary more than post-training. " + notes,
    )
    specs["params"] = HypothesisSpec(
        id=f"A7-params{suffix}", claim=CLAIM, source=GEOMETRY, datasets=(dataset,),
        fidelity=proxy(*PAIR_DIFFERS[dataset]),
        selection={"pre_last": Select("param_delta_layer", step="last", models=pre),
                   "post_last": Select("param_delta_layer", step="last", models=post)},
        test="ratio_of_changes", params={"ci": 0.90, "resample_by": "run"}, prediction=BAND, reference=REFERENCE,
        gate="pinned", notes="Relative Frobenius change of every per-layer parameter category "
                             "(METRICS.md §6.4) since each run's first checkpoint. " + notes,
    )
    return specs


_bundled = _a7_on_pair("", "pico_pythia_pair", P96, FT, NOTES)
A7_killing_cv = _bundled["killing_cv"]
A7_killing_eig_spread = _bundled["killing_eig_spread"]
A7_commutator_var = _bundled["commutator_var"]
A7_commutator_raw_var = _bundled["commutator_raw_var"]
A7_direction = _bundled["direction"]
A7_params = _bundled["params"]

CONVERGED_NOTES = (
    "The pair re-made from converged bases (datasets/pico_converged): pretraining c48_s0-s2 steps "
    "0 -> 2,560 (6 x 8 heads, to the end of the cosine, final lr 2e-4); post-training their World "
    "English Bible fine-tunes, steps 0 -> 256 at a peak of 1e-4, below the base's final rate; "
    "three runs, df = 2. " + CONVERGED_DECLARED)
_converged = _a7_on_pair("-converged", "pico_converged", CONVERGED_BASES, CONVERGED_TUNED, CONVERGED_NOTES)
A7_killing_cv_converged = _converged["killing_cv"]
A7_killing_eig_spread_converged = _converged["killing_eig_spread"]
A7_commutator_var_converged = _converged["commutator_var"]
A7_commutator_raw_var_converged = _converged["commutator_raw_var"]
A7_direction_converged = _converged["direction"]
A7_params_converged = _converged["params"]

#: Is the post-training signal (A7's denominator) above the noise floor? The change of each
#: fine-tune against the change of its continuation twin (the same base, steps and rates, the
#: pretraining text): a ratio at or below 1 would make A7's ratio one of pretraining to drift.
A7_above_floor_converged = HypothesisSpec(
    id="A7-above-floor-converged", claim=CLAIM, source=GEOMETRY, datasets=("pico_converged",),
    fidelity=proxy(*PAIR_DIFFERS["pico_converged"]),
    selection=_four("killing_cv", CONVERGED_TUNED, CONVERGED_FLOOR, family="Q", projection="none"),
    test="ratio_of_changes", params={"ci": 0.95, "resample_by": "run"}, prediction=Prediction("above", value=1.0),
    reference={"direction": "the post-training change above the late-pretraining drift"}, gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes=("Whether A7's denominator is a signal: the change of the Killing summary under "
           "post-training (c48_s*_ft, 0 -> 256) over its change under continued pretraining from the "
           "same base with the same steps and rates (c48_s*_cont, 0 -> 256: the late-pretraining "
           "drift). Supported when the 95 % interval lies above 1 (the fine-tune moves the metric "
           "more than the drift does); the essay gives no figure for this ratio, so no magnitude. "
           + CONVERGED_DECLARED + " The reference states the direction only: the essay's 500x is "
           "A7's figure for pretraining over post-training, not a figure of this ratio."),
)

A7_pythia = OutOfScope(
    id="A7-pythia", claim=CLAIM, source=GEOMETRY,
    reason=("The essay's own setting (Pythia-410m pretraining, step 1 -> 143,000, against the "
            "post-training of a tuned twin) needs a post-trained Pythia-410m of known lineage. "
            "EleutherAI publishes none and the essay's RLHF pair is unnamed, so the pythia card "
            "cannot build it. Changed 2026-12-02: was a spec on the pythia card selecting a model "
            "'pythia-410m-tuned' that the card's command never builds."),
    reference=REFERENCE,
)
