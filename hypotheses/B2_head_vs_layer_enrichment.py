"""B2: head-level enrichment far exceeds layer-level enrichment (a head at 119.7x in a layer
at 4.9x).

Test design (CLAIMS.md B2: "per layer, max head enrichment / layer enrichment; permutation
null"; made stricter as below). Test kind ``head_enrichment_excess``
(:func:`lie_stats.stats.pairwise.head_enrichment_excess`).

Metric. The essay's Killing-form metric is the Killing-form CV ("High Killing Form CV means
the model has developed rich internal structure"): ``killing_cv`` (METRICS.md §4.4), the
``std / mean |.|`` of the normalized Killing form ``Khat[i,j]`` over a layer's pairs
``i < j``. Its per-head counterpart is the same statistic over the pairs the head belongs to,
``Khat[h, j]``, ``j != h`` (the head's row): a layer summary is a statistic of its pairs, a
head's share of the layer is its row, and when a layer's heads all behave alike each row
statistic tracks the layer's. ``commutator_mean`` / ``killing_self`` were not chosen: the
first is the heterogeneity metric of B1, the second a magnitude (``K[h,h]`` grows with the
weights' norm alone), neither the essay's Killing-form CV. Both are computed from
``killing_norm`` at every checkpoint, so the layer value reproduces the cube's
``killing_cv`` (tests/spec/kinds/test_pairwise.py checks it on the bundled cube).

Estimate. Per layer, head enrichment ``e_h`` = last / first of the head's row CV, layer
enrichment ``e_l`` of ``killing_cv`` (METRICS.md §6.1), ratio ``R_l = max_h e_h / e_l``;
the effect is the geometric mean of ``R_l`` over the layers, with a bootstrap interval
resampling layers; the layer with the largest ``R_l`` (the essay's example) is reported
beside it (``max_ratio``, ``max_head_enrichment``, ``layer_enrichment_at_max``).

Null. ``max_h e_h >= e_l`` happens by chance alone: a maximum over heads exceeds the
layer's typical value. The null is that no head departs from its layer persistently: each
head's log departure from the layer (head row CV over ``killing_cv``) wanders and reverts,
a stationary process whose law is the same run forwards or backwards in time. Reversing a
layer's time maps the change of its heads' departures (centred within the layer, so a
change all heads share stays a layer effect) to its negative, so the null flips the sign of
each layer's changes independently (exact for up to 12 layers, else 9,999 sign vectors).
This keeps each head's temporal dependence; the first declaration's null, which shuffled
each transition's changes among the heads independently across transitions, did not: the
heads' departures revert (var(total) / sum of var(increments) 0.43-0.50 on these runs), so
that null was too wide and "refuted" null cubes and cubes with a planted persistent head
alike. Valid because the heads of a layer are symmetric in the architecture (only their
initialization tells them apart). The p-value is one-sided (the observed maximum above the
null).

Verdict: supported when p < 0.05; refuted when the opposite one-sided p < 0.05 (the
largest head shortfall beyond time reversal: heads fall behind their layer, none
persistently ahead); inconclusive otherwise. The ratio's interval (it lies above 1 by
construction) describes the effect only.

Magnitude (2026-12-04): the essay's 119.7x / 4.9x = 24.4 read as at least 8.1 on the
effect (the geometric mean over layers of ``R_l``) and its layer-bootstrap interval; not
tested on the fine-tuning phase (B2-ft: the figure is about training from initialization).

Data. Dynamics need intermediate checkpoints: every pretraining run of pico_pythia (the two
96-head runs pooled in the primary analysis, 24 layers; each run alone, and each operator
family, in the specification curve; h2 has 2 heads per layer, too few for a row statistic,
and is reported inconclusive there), the fine-tuning runs of pico_pythia_ft (B2-ft), and
Pythia-160m (12 layers, as the essay's L0-L11) for the magnitude (B2-pythia, skipped here).
The panel (random twin vs trained, one transition) is not declared: with one transition the
permutation null is degenerate. Declared before any evaluation on the bundled data.
"""

import math

from lie_stats.spec import HypothesisSpec, Magnitude, Prediction, Select

from ._common import (ANCHORS, anchors_proxy, FAMILIES, P96, PICO_RUNS, BOS_CPU_DECLARED, BOS_CPU_RUNS,
                      BOS_DECLARED, BOS_RUNS, SUDOKU, SUDOKU_DECLARED)

CLAIM = ("Head-level enrichment far exceeds layer-level enrichment (a head at 119.7x in a layer "
         "at 4.9x)")
REFERENCE = {"head_enrichment": 119.7, "layer_enrichment": 4.9, "ratio": 24.43, "layer": "L1"}

#: The essay's "heads within L1 are differentiating from each other 119.7x while the layer as
#: a whole shows only 4.9x enrichment": head over layer enrichment, 119.7 / 4.9 = 24.4.
_RATIO = 119.7 / 4.9
_WHY = (
    "'Some heads within L1 are differentiating from each other 119.7x while the layer as a whole "
    "shows only 4.9x enrichment': the head's enrichment over its layer's, 119.7 / 4.9 = 24.4, in "
    "one layer of one run, given as the example of a general 'the layer-level average hides a "
    "revolution happening at the head level'. Compared with the kind's effect, the geometric "
    "mean over layers of max head enrichment / layer enrichment (the typical layer's ratio, "
    "layer-bootstrap interval): a maximum over layers has no sound bootstrap interval. Read as "
    "at least 24.4 / 3 = 8.1 with no upper limit: the factor 3 of the essays' other point figures "
    "of one run, which also leaves room for L1 being the essay's most striking layer rather than "
    "a typical one, and no upper limit because more head excess is not against 'far exceeds' "
    "(as B1's '5-7x' reads 'at least 3'). Declared 2026-12-04 before the magnitude was computed; "
    "the declaring author had in view this module's note of an earlier kind's figures (ratio "
    "1.28, null 1.57; a superseded null), and the band comes from the essay's figure alone.")
FT_REASON = ("the essay's 119.7x and 4.9x are enrichment over training from initialization, not over "
             "fine-tuning")


def _magnitude(not_on: dict[str, str] | None = None) -> Magnitude:
    return Magnitude(reference=_RATIO, low=_RATIO / 3.0, high=math.inf, scale="ratio",
                     justification=_WHY, not_on=not_on or {})


CHANGED = (" The prediction carries the essay's 119.7x / 4.9x = 24.4 as a magnitude band (at "
           "least 8.1) on the geometric-mean ratio and its interval; the direction is decided by "
           "the time-reversal p.")

B2 = HypothesisSpec(
    id="B2", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia",),
    fidelity=anchors_proxy("pico_pythia"),
    selection={"values": Select("killing_norm", step="all", family="Q", projection="none",
                                models=P96)},
    test="head_enrichment_excess", params={"layer_summary": "cv"},
    prediction=Prediction("above", value=1.0, magnitude=_magnitude()), reference=REFERENCE,
    gate="pinned", choices={"models": [(m,) for m in PICO_RUNS], "family": FAMILIES},
    notes="Primary: family Q, exact operators, the two 96-head runs pooled (24 layers). The "
          "curve: each run alone x each family. The null is time reversal of the heads' "
          "departures from their layer, keeping each head's temporal dependence. The p decides; "
          "the interval describes." + CHANGED,
)

B2_ft = HypothesisSpec(
    id="B2-ft", claim=CLAIM, source=ANCHORS, datasets=("pico_pythia_ft",),
    fidelity=anchors_proxy("pico_pythia_ft"),
    selection={"values": Select("killing_norm", step="all", family="Q", projection="none")},
    test="head_enrichment_excess", params={"layer_summary": "cv"},
    prediction=Prediction("above", value=1.0, magnitude=_magnitude({"pico_pythia_ft": FT_REASON})),
    reference=REFERENCE, gate="pinned",
    choices={"models": [("p96_s0_ft",), ("p96_s1_ft",)], "family": FAMILIES},
    notes="The post-training phase (15 checkpoints from the pretrained weights): both runs pooled. "
          "The kind's null is time reversal, as for B2." + CHANGED
          + " Not tested on the fine-tuning phase (the figure is about training from init).",
)

B2_pythia = HypothesisSpec(
    id="B2-pythia", claim=CLAIM, source=ANCHORS, datasets=("pythia",),
    fidelity=anchors_proxy("pythia"),
    selection={"values": Select("killing_norm", step="all", family="Q", projection="adaptive",
                                models=("EleutherAI/pythia-160m",))},
    test="head_enrichment_excess", params={"layer_summary": "cv"},
    prediction=Prediction("above", value=1.0, magnitude=_magnitude()), reference=REFERENCE,
    gate="replication",
    choices={"family": FAMILIES},
    notes="The essay's model is not named; Pythia-160m has its 12 layers. Adaptive compression "
          "(k = d_head), the essays' method." + CHANGED,
)


def _b2_on_suite(ident: str, dataset: str, runs: tuple[str, ...], declared: str) -> HypothesisSpec:
    """B2 on a suite of trained runs: the first run the primary analysis, each run a choice."""
    return HypothesisSpec(
        id=ident, claim=CLAIM, source=ANCHORS, datasets=(dataset,),
        fidelity=anchors_proxy(dataset),
        selection={"values": Select("killing_norm", step="all", family="Q", projection="none",
                                    models=runs)},
        test="head_enrichment_excess", params={"layer_summary": "cv"},
        prediction=Prediction("above", value=1.0, magnitude=_magnitude()), reference=REFERENCE,
        gate="pinned", choices={"models": [(m,) for m in runs], "family": FAMILIES},
        notes=declared + " As B2: family Q, exact operators, here the three runs pooled "
              "(36 layers) as B2 pools the two 96-head runs; the curve: each run alone x each family.",
    )


B2_sudoku = _b2_on_suite("B2-sudoku", "pico_sudoku", SUDOKU, SUDOKU_DECLARED)
B2_bos = _b2_on_suite("B2-bos", "pico_bos", BOS_RUNS, BOS_DECLARED)
B2_bos_cpu = _b2_on_suite("B2-bos-cpu", "pico_bos_cpu", BOS_CPU_RUNS, BOS_CPU_DECLARED)
