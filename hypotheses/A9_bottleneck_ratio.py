"""A9: the bottleneck ratio d_head / d_model does not explain the Abelian fraction.

Test design (CLAIMS.md A9): the final null-calibrated Abelian fraction regressed on
log2(d_head) against the ratio d_head / d_model, compared by AIC (supported when width wins
by at least 2), on the panel.

On the bundled sweep the ratio is the head count (changed 2026-12-02): GPT-NeoX ties
d_model = n_heads x d_head, so d_head / d_model = 1 / n_heads exactly in every model, and
"AF ~ ratio" is "AF ~ head count", which A8 already compares with width. ``A9`` on the sweep
is recorded as not testable (:class:`OutOfScope`); ``A9-shapes`` tests the claim on the
head-shape sweep (pico_shapes), in which d_head, n_heads and d_model vary independently.
"""

from lie_stats.spec import HypothesisSpec, OutOfScope, Prediction, Select

from ._common import CALIBRATED_AF, GEOMETRY, SCALING_POPULATION, proxy

from .A8_head_width_not_count import PANEL, SHAPES

CLAIM = ("The bottleneck ratio d_head/d_model does not explain the Abelian fraction "
         "(pythia-1b and 70m share 0.125 and differ in it)")
MODELS = {"width": ["log2_d_head"], "ratio": ["d_head_over_d_model"]}

A9 = OutOfScope(
    id="A9", claim=CLAIM, source=GEOMETRY,
    reason=("not testable on the bundled sweep (pico_pythia: w16, w32, w64, h8, h16): GPT-NeoX "
            "ties d_model = n_heads x d_head, so d_head / d_model = 1 / n_heads exactly in every "
            "model (1/4, 1/4, 1/4, 1/8, 1/16) and the ratio is the head count; the sweep cannot "
            "tell a ratio effect from a head-count effect, and d_model moves with both. A9-shapes "
            "tests the claim on pico_shapes, a head-shape sweep in which d_head, n_heads and "
            "d_model vary independently (Llama-style configs with an explicit head_dim)."),
    reference={"ratio_70m_1b": 0.125},
    notes=("On the sweep, width against the ratio would be width against the head count; the "
           "claim is tested on the panel (A9-panel) and on the head-shape sweep (A9-shapes)."),
)

A9_panel = HypothesisSpec(
    id="A9-panel", claim=CLAIM, source=GEOMETRY, datasets=("panel",),
    fidelity=proxy(SCALING_POPULATION["panel"], CALIBRATED_AF),
    selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none",
                                  models=PANEL)},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference={"ratio_70m_1b": 0.125}, gate="pinned",
)

A9_shapes = HypothesisSpec(
    id="A9-shapes", claim=CLAIM, source=GEOMETRY, datasets=("pico_shapes",),
    fidelity=proxy(SCALING_POPULATION["pico_shapes"], CALIBRATED_AF),
    selection={"response": Select("abelian_fraction", step="last", family="Q", projection="none",
                                  models=SHAPES)},
    test="model_comparison", params={"models": MODELS, "predicted": "width"},
    prediction=Prediction("preferred"), reference={"ratio_70m_1b": 0.125}, gate="pinned",
    choices={"projection": ("none", "adaptive")},
    notes=("Declared on pico_shapes before its cube existed. There d_head / "
           "d_model takes 1/8, 1/4, 1/2 and 1 and is not the head count (Llama-style models with "
           "an explicit head_dim; correlation of log2 ratio with log2 n_heads 0.09, with log2 "
           "d_head 0.51; datasets/pico_shapes/README.md), so width and the ratio can be told "
           "apart; the comparison is the panel's (width vs the ratio), 14 runs (7 cells x 2 seeds)."),
)
