"""Claims recorded as not testable with weight-geometry data (CLAIMS.md, last paragraph)."""

from lie_stats.spec import OutOfScope

from ._common import ANCHORS

GATING = OutOfScope(
    id="gating-v0.4-v0.5",
    claim=("Head/parameter gating results: 38.9 % preserved vs 47 % unprotected; 38,963x "
           "amplification; H 202x and L 8,579x"),
    source=ANCHORS,
    reason=("These figures concern training interventions (gating) on other models; no "
            "weight-geometry cube can test them. The essay itself corrected the polarity of "
            "the first on 2026-08-24 (38.9 % preserved is worse than the 47 % unprotected)."),
    reference={"preserved": 0.389, "unprotected": 0.47, "amplification": 38963,
               "H": 202, "L": 8579},
)
