"""A5: the Killing eigenvalue spread nearly triples during pretraining.

Test design (CLAIMS.md A5): layer enrichment last/first of ``killing_eig_spread``
(METRICS.md §4.3, §6.1) with a cluster-bootstrap interval over runs (strata='model', since
2026-12-04); supported when the interval lies
above 1 and overlaps the essay's x3 read as [2, 4.5] (the magnitude; not tested on the
panel, whose first checkpoint is a random twin).
"""

from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select

from ._common import FAMILIES, GEOMETRY, GEOMETRY_POPULATION, PANEL_TWIN, PROJECTIONS, RANDOM_TWIN, proxy

TRIPLES = Magnitude(
    reference=3.0, low=2.0, high=4.5, scale="ratio",
    justification=("'Eigenvalue spread: nearly triples': a factor near 3, read as x/÷1.5 ([2, 4.5]). "
                   "Below 2 the essay would have said 'doubles', from 4.5 on 'quadruples' or more. "
                   "Declared 2026-12-02 after the earlier estimates were public (10.4 [8.5, 12.4] on "
                   "pico_pythia); the band is the issue's stated reading of 'x3', not fitted to them."),
    not_on={"panel": RANDOM_TWIN})

A5 = HypothesisSpec(
    id="A5", claim="Killing eigenvalue spread nearly triples during pretraining", source=GEOMETRY,
    datasets=("pico_pythia", "panel", "pythia"),
    fidelity={"pico_pythia": proxy(GEOMETRY_POPULATION["pico_pythia"]),
              "panel": proxy(GEOMETRY_POPULATION["panel"], PANEL_TWIN),
              "pythia": proxy(GEOMETRY_POPULATION["pythia"])},
    selection={"first": Select("killing_eig_spread", step="first", family="Q", projection="none"),
               "last": Select("killing_eig_spread", step="last", family="Q", projection="none")},
    test="enrichment", params={"resample_by": "model"},
    prediction=Prediction("above", value=1.0, magnitude=TRIPLES),
    reference={"ratio": 3.0, "model": "pythia-410m"}, gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="The prediction carries the essay's x3 as a magnitude band [2, 4.5], tested beside the "
          "direction (a supported direction with the interval outside the band is refuted); not "
          "tested on the panel (random-twin first checkpoint), whose two 4-bit MiniLM copies do not "
          "enter the selection (noise-floor controls). The run is the unit of resampling "
          "(strata='model': the swap test swaps first and last of whole runs, the bootstrap "
          "resamples runs, then layers within them), so the interval holds the between-run variance.",
)
