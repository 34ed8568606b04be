"""A6: the depth gradient reverses sign during training (crossover at 31.5 % of training).

Test design (CLAIMS.md A6, METRICS.md §6.2): per checkpoint, the OLS slope of the layer mean
of ``commutator_z_mean_head`` (null-calibrated structure, family Q, exact) against normalized
depth. The claim is directional: early, shallow layers are more structured, late, deep layers
are. Structure is commuting more than the random-orientation null, i.e. a lower
``commutator_z``, so the z slope is positive early and negative at the end (``from_sign``
positive). "Early" is the first checkpoint after learning-rate warm-up (5 % of training in
the bundled runs; the slope at step 0 is initialisation noise). Supported when the early
slope is significantly positive and the last slope significantly negative (layer-permutation
tests, each at alpha / 2); refuted when either is significant the other way. The crossover
step (first + to - change after warm-up) and its bootstrap interval, resampling heads within
layers, are reported beside 0.315. One run at a time (each 96-head seed in the specification
curve).
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import FAMILIES, GEOMETRY, P96

NOTES = ("Changed 2026-12-02: the rule was 'the slope changes sign once, with a finite interval', "
         "which ignored the direction of the change, counted the step-0 slope (initialisation "
         "noise), and had no null test (a pure-noise slope crossed in about half of null cubes). "
         "Now direction-aware: from_sign positive (a lower commutator_z is more structure), the "
         "early checkpoint is the first at or after 5 % of training (the bundled runs' warm-up), "
         "and both end slopes are tested by layer permutation.")

A6 = HypothesisSpec(
    id="A6",
    claim=("The depth gradient reverses sign during training: early, shallow layers are more "
           "structured; late, deep layers are; crossover at 31.5 % of training"),
    source=GEOMETRY, datasets=("pico_pythia",),
    selection={"values": Select("commutator_z_mean_head", step="all", family="Q", projection="none",
                                models=("p96_s0",))},
    test="depth_crossover", prediction=Prediction("crossing"),
    params={"from_sign": "positive", "early_fraction": 0.05},
    reference={"fraction_of_training": 0.315, "step": 45000, "of": 143000}, gate="pinned",
    choices={"models": [(m,) for m in P96], "family": FAMILIES},
    notes=NOTES,
)

A6_pythia = HypothesisSpec(
    id="A6-pythia",
    claim=A6.claim, source=GEOMETRY, datasets=("pythia_410m_all",),
    selection={"values": Select("commutator_z_mean_head", step="all", family="Q", projection="none",
                                models=("EleutherAI/pythia-410m",))},
    test="depth_crossover", prediction=Prediction("crossing"),
    params={"from_sign": "positive", "early_fraction": 0.05},
    reference={"fraction_of_training": 0.315, "step": 45000, "of": 143000}, gate="replication",
    choices={"family": FAMILIES},
    notes=NOTES,
)
