"""A6: the depth gradient reverses sign during training (crossover at 31.5 % of training).

Test design (CLAIMS.md A6, METRICS.md §6.2): per checkpoint, the OLS slope of the layer mean
of ``commutator_z_mean_head`` (null-calibrated structure, family Q, exact) against normalized
depth; the crossover is the step where the slope changes sign, interpolated in log10(step),
with a bootstrap interval resampling heads within layers. Supported when the slope changes
sign exactly once with a finite interval; the fraction of training is reported beside 0.315.
One run at a time (each 96-head seed in the specification curve).
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import FAMILIES, GEOMETRY, P96

A6 = HypothesisSpec(
    id="A6",
    claim=("The depth gradient reverses sign during training: early, shallow layers are more "
           "structured; late, deep layers are; crossover at 31.5 % of training"),
    source=GEOMETRY, datasets=("pico_pythia",),
    selection={"values": Select("commutator_z_mean_head", step="all", family="Q", projection="none",
                                models=("p96_s0",))},
    test="depth_crossover", prediction=Prediction("crossing"),
    reference={"fraction_of_training": 0.315, "step": 45000, "of": 143000}, gate="pinned",
    choices={"models": [(m,) for m in P96], "family": FAMILIES},
)

A6_pythia = HypothesisSpec(
    id="A6-pythia",
    claim=A6.claim, source=GEOMETRY, datasets=("pythia_410m_all",),
    selection={"values": Select("commutator_z_mean_head", step="all", family="Q", projection="none",
                                models=("EleutherAI/pythia-410m",))},
    test="depth_crossover", prediction=Prediction("crossing"),
    reference={"fraction_of_training": 0.315, "step": 45000, "of": 143000}, gate="replication",
    choices={"family": FAMILIES},
)
