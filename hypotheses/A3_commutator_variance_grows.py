"""A3: pretraining builds the structure; commutator variance grows ~500x (Pythia-410m).

Test design (CLAIMS.md A3, made stricter): the layer enrichment last/first of
``commutator_raw_var`` (METRICS.md §4.1, §6.1) as a ratio of means over (model, layer)
pairs, with a cluster-bootstrap interval over runs (since 2026-12-04, strata='model': runs
resampled, then layers within them; the swap test swaps whole runs); supported when the whole interval lies
above 1 (direction on any trained run) and overlaps the essay's 500x within x/÷3 (the
magnitude, lie_stats.spec.magnitude; not tested on the panel, whose first checkpoint is a
random twin).
The normalized ``commutator_var`` is declared as a second spec, because the raw variance
also grows with the weights' norms alone. The specification curve sweeps the operator
family, the compression and the run.
"""

from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select

from ._common import (AS_STATED, FAMILIES, GEOMETRY, GEOMETRY_POPULATION, PANEL_TWIN, PICO_RUNS, PROJECTIONS,
                      RANDOM_TWIN, proxy)

#: The scale-free variant's measure (A3-normalized).
NORMALIZED = "measure: variance of the normalized commutator, not the essay's raw commutator variance"

CLAIM = ("Pretraining builds the structure: commutator variance grows by about 500x from "
         "step 1 to the end of training")

#: The essay's "Commutator variance: 500x increase" (Pythia-410m, 6 checkpoints, no interval).
MAGNITUDE_JUSTIFICATION = (
    "The essay states '500x increase' once, as a round figure from six checkpoints of one run, "
    "without an interval. A factor 3 either way (x/÷3: [167, 1,500], about half a decade on the "
    "log scale, 10^0.5 = 3.2 rounded down) is where a reader would stop calling the growth "
    "'500x' and call it 'a hundred-fold' or 'thousands-fold'. Declared 2026-12-02 after the "
    "earlier estimates were public (1,420x [767, 2,416] on pico_pythia): the band is the issue's "
    "stated reading of '500x', not fitted to them.")


def _magnitude(not_on: dict[str, str] | None = None) -> Magnitude:
    return Magnitude(reference=500.0, low=500.0 / 3, high=1500.0, scale="ratio",
                     justification=MAGNITUDE_JUSTIFICATION, not_on=not_on or {})


CHANGED = ("The prediction carries the essay's 500x as a magnitude band (x/÷3), tested beside "
           "the direction: supported only when the interval lies above 1 and overlaps "
           "[167, 1,500]; a supported direction with the interval outside the band is refuted. "
           "On the panel the magnitude is not tested (the first checkpoint is a random twin), and "
           "the panel's two 4-bit MiniLM copies do not enter selections without models= (they "
           "are noise-floor controls, not further models).")
RUNS = ("The run is the unit of resampling (strata='model': the swap test swaps first and last "
        "of whole runs, the bootstrap resamples runs, then layers within them), so the interval "
        "holds the between-run variance. On pico_pythia (two trained runs) the swap test's "
        "smallest p is 1/4.")

A3 = HypothesisSpec(
    id="A3", claim=CLAIM, source=GEOMETRY,
    datasets=("pico_pythia", "panel"),
    fidelity={"pico_pythia": proxy(GEOMETRY_POPULATION["pico_pythia"]),
              "panel": proxy(GEOMETRY_POPULATION["panel"], PANEL_TWIN)},
    selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="none"),
               "last": Select("commutator_raw_var", step="last", family="Q", projection="none")},
    test="enrichment", params={"resample_by": "model"},
    prediction=Prediction("above", value=1.0, magnitude=_magnitude({"panel": RANDOM_TWIN})),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="Primary: family Q, exact operators, every run of the dataset pooled (layers as "
          "clusters). panel: trained weights against a seeded random-init twin. " + CHANGED + " " + RUNS,
)

A3_normalized = HypothesisSpec(
    id="A3-normalized", claim=CLAIM, source=GEOMETRY,
    datasets=("pico_pythia", "panel"),
    fidelity={"pico_pythia": proxy(GEOMETRY_POPULATION["pico_pythia"], NORMALIZED),
              "panel": proxy(GEOMETRY_POPULATION["panel"], PANEL_TWIN, NORMALIZED)},
    selection={"first": Select("commutator_var", step="first", family="Q", projection="none"),
               "last": Select("commutator_var", step="last", family="Q", projection="none")},
    test="enrichment", params={"resample_by": "model"},
    prediction=Prediction("above", value=1.0, magnitude=_magnitude({"panel": RANDOM_TWIN})),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="The scale-free variant: variance of the normalized commutator c (METRICS.md §3.2); "
          "the raw variance's ratio also moves with the near-zero scale of the init weights, "
          "this one does not. " + CHANGED + " " + RUNS,
)

A3_runs = HypothesisSpec(
    id="A3-runs", claim=CLAIM, source=GEOMETRY,
    datasets=("pico_pythia",),
    fidelity=proxy(GEOMETRY_POPULATION["pico_pythia"]),
    selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="none",
                               models=("p96_s0",)),
               "last": Select("commutator_raw_var", step="last", family="Q", projection="none",
                              models=("p96_s0",))},
    test="enrichment", prediction=Prediction("above", value=1.0, magnitude=_magnitude()),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="pinned",
    choices={"models": [(m,) for m in PICO_RUNS]},
    notes="Run by run: the share of the suite's runs on which the direction holds. " + CHANGED,
)

A3_pythia = HypothesisSpec(
    id="A3-pythia", claim=CLAIM, source=GEOMETRY,
    datasets=("pythia",),
    fidelity=AS_STATED,
    selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="adaptive",
                               models=("EleutherAI/pythia-410m",)),
               "last": Select("commutator_raw_var", step="last", family="Q", projection="adaptive",
                              models=("EleutherAI/pythia-410m",))},
    test="enrichment", prediction=Prediction("above", value=1.0, magnitude=_magnitude()),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="replication",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="The original's data and compression (adaptive, k = d_head). " + CHANGED,
)
