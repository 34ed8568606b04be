"""A1: post-training leaves the attention Killing-form metrics unchanged (< 0.1 %).

Test design (CLAIMS.md A1): equivalence, never a non-significant difference. A paired TOST on
log values of each layer summary, base (the fine-tune's step 0, bit-identical to the
pretrained run's last checkpoint) against tuned (the fine-tune's last checkpoint), pairs
over the layers of one run (each fine-tuned seed is one choice of the specification curve),
bound 0.1 % relative (lie_stats.stats.tost_relative). One spec per
Killing-form summary of METRICS.md §4.3-§4.4; families Q and O as the essay (and both
circuits), every compression, in the specification curve.
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import FAMILIES, GEOMETRY, PROJECTIONS

CLAIM = ("Post-training (RLHF / instruction tuning) leaves the attention Killing-form metrics "
         "unchanged: < 0.1 % relative difference, every metric, every layer, Q and O families")
REFERENCE = {"max_relative_difference": 0.001}
NOTES = ("Stand-in pair: the bundled 96-head runs fine-tuned on the World English Bible at 1/10 "
         "of the pretraining learning rate (supervised next-token training on another text, "
         "not RLHF). Per-layer equivalence is the paired TOST over the 12 layers of one run.")


def _spec(ident: str, metric: str) -> HypothesisSpec:
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=GEOMETRY, datasets=("pico_pythia_ft",),
        selection={"base": Select(metric, step="first", family="Q", projection="none",
                                  models=("p96_s0_ft",)),
                   "tuned": Select(metric, step="last", family="Q", projection="none",
                                   models=("p96_s0_ft",))},
        test="tost_relative", prediction=Prediction("equivalent", bound=0.001),
        reference=REFERENCE, gate="pinned",
        choices={"models": [("p96_s0_ft",), ("p96_s1_ft",)], "family": FAMILIES,
                 "projection": PROJECTIONS},
        notes=NOTES,
    )


A1_killing_cv = _spec("A1-killing_cv", "killing_cv")
A1_killing_eig_spread = _spec("A1-killing_eig_spread", "killing_eig_spread")
