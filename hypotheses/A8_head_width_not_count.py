"""A8: Abelian fraction depends on head width, not head count.

Test design (CLAIMS.md A8): across models, the final null-calibrated Abelian fraction
(family Q, exact; mean over layers) regressed on log2(d_head) and, separately, on
log2(n_heads); the two OLS models compared by AIC (supported when the width model's AIC is
lower by at least 2). The bundled suite crosses a head-width sweep at 4 heads (d_head 16, 32,
64) with a head-count sweep at d_head 16 (2, 4, 8, 16 heads), so the two predictors are not
confounded; the panel spans d_head 32, 64 and 256.
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import GEOMETRY, PROJECTIONS

CLAIM = ("Abelian fraction depends on head width, not head count: d_head = 64 models develop "
         "Abelian structure, d_head 128/256 almost none")
REFERENCE = {"pythia-70m": 0.083, "pythia-1b": 0.0}
MODELS = {"width": ["log2_d_head"], "count": ["log2_n_heads"]}
SWEEP = ("w16", "w32", "w64", "h2", "h8", "h16")
PANEL = ("minilm_l6", "minilm_l3", "mpnet", "smollm2_135m", "gemma3_270m")

A8 = HypothesisSpec(
    id="A8", claim=CLAIM, source=GEOMETRY, datasets=("pico_pythia",),
    selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none",
                                  models=SWEEP)},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference=REFERENCE, gate="pinned",
    choices={"projection": PROJECTIONS[:2]},
    notes="h4 is the same model as w16 (one run, counted once).",
)

A8_panel = HypothesisSpec(
    id="A8-panel", claim=CLAIM, source=GEOMETRY, datasets=("panel",),
    selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none",
                                  models=PANEL)},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference=REFERENCE, gate="pinned",
    choices={"projection": PROJECTIONS},
    notes="Five real pretrained models (the 4-bit MiniLM copies excluded: they are MiniLM).",
)

A8_pythia = HypothesisSpec(
    id="A8-pythia", claim=CLAIM, source=GEOMETRY, datasets=("pythia",),
    selection={"response": Select("abelian_fraction_tau", step="last", family="Q", projection="adaptive")},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference=REFERENCE, gate="replication",
    notes="The essay's measure and compression on the six Pythia sizes.",
)
