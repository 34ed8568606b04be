"""A3: pretraining builds the structure; commutator variance grows ~500x (Pythia-410m).

Test design (CLAIMS.md A3, made stricter): the layer enrichment last/first of
``commutator_raw_var`` (METRICS.md §4.1, §6.1) as a ratio of means over (model, layer)
pairs, with a cluster-bootstrap interval over layers; supported when the whole interval lies
above 1 (direction on any trained run), the magnitude reported beside the essay's 500x.
The normalized ``commutator_var`` is declared as a second spec, because the raw variance
also grows with the weights' norms alone. The specification curve sweeps the operator
family, the compression and the run.
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import FAMILIES, GEOMETRY, PICO_RUNS, PROJECTIONS

CLAIM = ("Pretraining builds the structure: commutator variance grows by about 500x from "
         "step 1 to the end of training")

A3 = HypothesisSpec(
    id="A3", claim=CLAIM, source=GEOMETRY,
    datasets=("pico_pythia", "panel"),
    selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="none"),
               "last": Select("commutator_raw_var", step="last", family="Q", projection="none")},
    test="enrichment", prediction=Prediction("above", value=1.0),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="Primary: family Q, exact operators, every run of the dataset pooled (layers as "
          "clusters). panel: trained weights against a seeded random-init twin.",
)

A3_normalized = HypothesisSpec(
    id="A3-normalized", claim=CLAIM, source=GEOMETRY,
    datasets=("pico_pythia", "panel"),
    selection={"first": Select("commutator_var", step="first", family="Q", projection="none"),
               "last": Select("commutator_var", step="last", family="Q", projection="none")},
    test="enrichment", prediction=Prediction("above", value=1.0),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="pinned",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="The scale-free variant: variance of the normalized commutator c (METRICS.md §3.2).",
)

A3_runs = HypothesisSpec(
    id="A3-runs", claim=CLAIM, source=GEOMETRY,
    datasets=("pico_pythia",),
    selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="none",
                               models=("p96_s0",)),
               "last": Select("commutator_raw_var", step="last", family="Q", projection="none",
                              models=("p96_s0",))},
    test="enrichment", prediction=Prediction("above", value=1.0),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="pinned",
    choices={"models": [(m,) for m in PICO_RUNS]},
    notes="Run by run: the share of the suite's runs on which the direction holds.",
)

A3_pythia = HypothesisSpec(
    id="A3-pythia", claim=CLAIM, source=GEOMETRY,
    datasets=("pythia",),
    selection={"first": Select("commutator_raw_var", step="first", family="Q", projection="adaptive",
                               models=("EleutherAI/pythia-410m",)),
               "last": Select("commutator_raw_var", step="last", family="Q", projection="adaptive",
                              models=("EleutherAI/pythia-410m",))},
    test="enrichment", prediction=Prediction("above", value=1.0),
    reference={"ratio": 500.0, "model": "pythia-410m", "checkpoints": 6},
    gate="replication",
    choices={"family": FAMILIES, "projection": PROJECTIONS},
    notes="The original's data and compression (adaptive, k = d_head).",
)
