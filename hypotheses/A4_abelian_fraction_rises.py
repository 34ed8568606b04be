"""A4: the Abelian fraction rises from 0 to about 20 % during pretraining.

Test design (CLAIMS.md A4): a monotone trend over checkpoints (Spearman between step and the
fraction averaged over the runs' layers, permutation p). The primary uses the null-calibrated
``abelian_fraction`` (METRICS.md §4.2: pairs commuting more than their spectra explain, about
alpha for unrelated heads whatever the dimensions); the essays' fixed-threshold
``abelian_fraction_tau`` is declared as a second spec, because its level moves with the
compression alone (the A10 control).
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import FAMILIES, GEOMETRY, PROJECTIONS

CLAIM = "Abelian fraction rises from 0 to about 20 % during pretraining"
REFERENCE = {"first": 0.0, "last": 0.20, "model": "pythia-410m"}

A4 = HypothesisSpec(
    id="A4", claim=CLAIM, source=GEOMETRY, datasets=("pico_pythia", "pythia"),
    selection={"values": Select("abelian_fraction", step="all", family="Q", projection="none")},
    test="trend", prediction=Prediction("positive"), reference=REFERENCE, gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="Null-calibrated Abelian fraction at alpha 0.01 (METRICS.md §4.2), mean over runs and layers.",
)

A4_tau = HypothesisSpec(
    id="A4-tau", claim=CLAIM, source=GEOMETRY, datasets=("pico_pythia", "pythia"),
    selection={"values": Select("abelian_fraction_tau", step="all", family="Q", projection="none")},
    test="trend", prediction=Prediction("positive"), reference=REFERENCE, gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="The essays' fraction of pairs with c < 0.5 (METRICS.md §4.2, tau recorded in the cube).",
)
