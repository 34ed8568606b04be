"""A9: the bottleneck ratio d_head / d_model does not explain the Abelian fraction.

Test design (CLAIMS.md A9): the final null-calibrated Abelian fraction regressed on
log2(d_head) against the ratio d_head / d_model, compared by AIC (supported when width wins
by at least 2).
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import GEOMETRY

from .A8_head_width_not_count import PANEL, SWEEP

CLAIM = ("The bottleneck ratio d_head/d_model does not explain the Abelian fraction "
         "(pythia-1b and 70m share 0.125 and differ in it)")
MODELS = {"width": ["log2_d_head"], "ratio": ["d_head_over_d_model"]}

A9 = HypothesisSpec(
    id="A9", claim=CLAIM, source=GEOMETRY, datasets=("pico_pythia",),
    selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none",
                                  models=SWEEP)},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference={"ratio_70m_1b": 0.125}, gate="pinned",
)

A9_panel = HypothesisSpec(
    id="A9-panel", claim=CLAIM, source=GEOMETRY, datasets=("panel",),
    selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none",
                                  models=PANEL)},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference={"ratio_70m_1b": 0.125}, gate="pinned",
)
