"""B6: anchor/worker value norms: heads with low value norm change less than high ones.

Test design (CLAIMS.md B6): Spearman between ``value_norm`` (METRICS.md §7.3, on the
suite's probe set) and ``change_from_init`` (§5.5), both at the last checkpoint, permuting
within layers (heads are nested in layers), cluster-bootstrap interval; and, as a second
spec, the difference in change between the §8 labels (workers minus anchors; rank-biserial
effect, Hedges g beside it), permuting labels within layers. Each 96-head seed is one
choice of the specification curve. Declared before any activation metric of the suite
was computed.
"""

from lie_stats.schema import LABEL_CODES
from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import ANCHORS, P96

CLAIM = ("Heads with low value norm (anchors) change less during training than heads with "
         "high value norm (workers)")

B6 = HypothesisSpec(
    id="B6", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    selection={"x": Select("value_norm", step="last", models=("p96_s0",)),
               "y": Select("change_from_init", step="last", models=("p96_s0",))},
    test="correlation", params={"method": "spearman"},
    prediction=Prediction("positive"), reference={"direction": "positive"}, gate="pinned",
    choices={"models": [(m,) for m in P96]},
)

B6_groups = HypothesisSpec(
    id="B6-groups", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    selection={"x": Select("change_from_init", step="last", models=("p96_s0",)),
               "group": Select("head_label", step="last", models=("p96_s0",))},
    test="group_difference",
    params={"groups": (LABEL_CODES["anchor"], LABEL_CODES["worker"])},
    prediction=Prediction("positive"), reference={"direction": "workers change more"},
    gate="pinned", choices={"models": [(m,) for m in P96]},
    notes="Labels of METRICS.md §8 at the last checkpoint: sink_score >= 0.5 and value_norm in "
          "the layer's lowest third (anchor); sink_score < 0.5 and value_norm above it (worker).",
)
