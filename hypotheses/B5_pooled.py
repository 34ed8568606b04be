"""B5-pooled: the rho = -0.274 replication pooled over every trained run of a dataset.

Test design (CLAIMS.md B5; DESIGN.md "Replication, done as the field does it"): each run
(model) of a dataset that was trained from a random initial checkpoint is one replication
attempt. Per run, the Spearman correlation over its heads between ``head_contribution`` at
the first checkpoint (METRICS.md §5.4; the initial checkpoint of these runs) and
``change_from_init`` at the last (§5.5), on Fisher's z scale with variance 1 / (n - 3);
the runs pooled by a random-effects model, tau^2 by DerSimonian-Laird (REML tau^2 reported
beside it), with I^2, Cochran's Q and the prediction interval of a new run's correlation
(t with k - 2 df). Verdict (``meta_replication``): refuted when the small-telescopes test
finds the pooled correlation smaller than r33 = 0.157, the one the original's n = 96 had
33 % power to detect (Simonsohn 2015); supported when the pooled correlation is negative
with two-sided p < 0.05 (its 95 % interval excludes 0 below); inconclusive otherwise.

Datasets: every bundled suite of runs trained from initialization that has both variables:
pico_pythia (8 runs: the two 96-head seeds and the width and head-count sweeps),
pico_sudoku (3 seeds), pico_bos_cpu (3 seeds), pico_bos (3 seeds; needs its cube, skipped
where absent) and pico_shapes (14 runs of head width, count and d_model). Left out:
pico_pythia_ft and smollm2_ft (their first checkpoint is a pretrained model, not an
initialization, so ``change_from_init`` is a fine-tuning change) and pico_converged (its
cube has neither variable). One result per dataset: the datasets differ in task and
architecture, so they are not pooled into one estimate.

B5-pooled-norm (declared second analysis): the same pooling of the per-run Spearman partial
correlations given the initial weight norms of the head's four matrices (``weight_norm`` of
Q, K, V and O at the first checkpoint, §5.2; variance 1 / (n - 7)). ``change_from_init`` is
divided by the initial norm of the stacked matrices and ``head_contribution`` is a share of
OV norms, so an association carried by the initial norms alone would show in B5-pooled and
not here.

Declared before any pooled statistic was looked at. A trial run of the kind's code on
pico_pythia (no covariates) was executed once while the kind was written, before this file
existed; its output line was cut by the shell and not seen. The per-run B5 results of
pico_pythia's 96-head seeds, pico_sudoku and the bos suites (B5, B5-sudoku, B5-bos,
B5-bos-cpu) were known when this was declared.
"""

from lie_stats.spec import HypothesisSpec, Prediction, Select

from ._common import ANCHORS, anchors_proxy

#: Pooled over runs: the essay's n = 96 are the heads of its one model.
POOLED = "sample size: the per-run correlations of every trained run pooled, not one model's 96 heads"

CLAIM = ("Initial head contribution predicts how much a head changes during training (rho = -0.274), "
         "pooled over independent training runs")
DATASETS = ("pico_pythia", "pico_sudoku", "pico_bos_cpu", "pico_bos", "pico_shapes")
REFERENCE = {"rho": -0.274, "p": 0.007, "n": 96}
SELECTION = {"x": Select("head_contribution", step="first"),
             "y": Select("change_from_init", step="last")}

B5_pooled = HypothesisSpec(
    id="B5-pooled", claim=CLAIM, source=ANCHORS, datasets=DATASETS, selection=SELECTION,
    fidelity={d: anchors_proxy(d, POOLED) for d in DATASETS},
    test="meta_replication", params={"method": "spearman", "estimator": "DL"},
    prediction=Prediction("negative"), reference=REFERENCE, gate="pinned",
    notes=("One Spearman rho per trained run (all of the dataset's runs), random-effects pooled "
           "(DerSimonian-Laird); refuted by the small-telescopes test against r33 of n = 96, "
           "supported when the pooled rho is negative at p < 0.05."),
)

B5_pooled_norm = HypothesisSpec(
    id="B5-pooled-norm", claim=CLAIM, source=ANCHORS, datasets=DATASETS,
    fidelity={d: anchors_proxy(d, POOLED) for d in DATASETS},
    selection={**SELECTION, **{f"covar_{m}": Select("weight_norm", step="first", matrix=m)
                               for m in ("Q", "K", "V", "O")}},
    test="meta_replication", params={"method": "spearman", "estimator": "DL"},
    prediction=Prediction("negative"), reference=REFERENCE, gate="pinned",
    notes=("Second analysis of B5-pooled: per-run Spearman partial correlations given the initial "
           "weight norms of Q, K, V and O, pooled the same way."),
)
