"""A5: the Killing eigenvalue spread nearly triples during pretraining.

Test design (CLAIMS.md A5): layer enrichment last/first of ``killing_eig_spread``
(METRICS.md §4.3, §6.1) with a cluster-bootstrap interval; supported when the interval lies
above 1, the ratio reported beside the essay's x3.
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import FAMILIES, GEOMETRY, PROJECTIONS

A5 = HypothesisSpec(
    id="A5", claim="Killing eigenvalue spread nearly triples during pretraining", source=GEOMETRY,
    datasets=("pico_pythia", "panel", "pythia"),
    selection={"first": Select("killing_eig_spread", step="first", family="Q", projection="none"),
               "last": Select("killing_eig_spread", step="last", family="Q", projection="none")},
    test="enrichment", prediction=Prediction("above", value=1.0),
    reference={"ratio": 3.0, "model": "pythia-410m"}, gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
)
