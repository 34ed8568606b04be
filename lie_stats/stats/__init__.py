"""Statistics of lie_stats: pure functions over numpy arrays, tidy one-row-per-test results.

One module per statistical family (as pingouin): :mod:`.permutation`, :mod:`.correlation`,
:mod:`.groups`, :mod:`.equivalence`, :mod:`.replication`, :mod:`.trend`, :mod:`.models`,
:mod:`.multiplicity`, :mod:`.clustered`, :mod:`.ranks`, :mod:`.pairwise`,
:mod:`.classification`, :mod:`.meta`; every test is re-exported here. Every test returns a :class:`pandas.DataFrame` with one row per test,
numeric columns only, starting with :data:`lie_stats.columns.STAT_COLUMNS`; the
family-specific columns are named in :mod:`.columns`.

Conventions
-----------
* Head data are nested in layers: every head-level test takes a required ``strata=``
  keyword (pass ``None`` explicitly for free permutation); permutations are within strata,
  bootstraps resample strata then units.
* Randomness only from ``seed=``; all resampling is vectorized and chunked.
* Input on which no test can be computed (constant vectors, too few observations, all NaN,
  bad options) raises :class:`lie_stats.errors.StatsInputError` naming the argument. A NaN
  appears in a result only where NaN is the defined answer, and each docstring says where
  (e.g. no crossover, an unpaired enrichment's p-value, a skipped interval with
  ``n_boot=0``).
"""

from lie_stats.stats.classification import (
    class_auc,
    class_interaction,
    cohen_kappa,
    threshold_agreement,
    threshold_zones,
    time_to_fraction,
)
from lie_stats.stats.clustered import head_mean, share_above
from lie_stats.stats.correlation import correlation, partial_correlation
from lie_stats.stats.equivalence import fisher_z_se, tost_correlation, tost_paired, tost_relative
from lie_stats.stats.groups import group_difference
from lie_stats.stats.meta import meta_replication, random_effects
from lie_stats.stats.models import compare_models, mixed_model
from lie_stats.stats.multiplicity import adjust_pvalues
from lie_stats.stats.pairwise import (
    boundary_enrichment,
    functional_boundary_shift,
    head_enrichment_excess,
    pair_summary,
    row_summary,
    symmetric_pairs,
)
from lie_stats.stats.permutation import (
    cluster_bootstrap_indices,
    n_distinct_permutations,
    permutation_indices,
    permutation_pvalue,
)
from lie_stats.stats.ranks import delta_order, delta_rank, pooled_relative, ratio_of_changes
from lie_stats.stats.replication import power_correlation, r33, replicate_correlation
from lie_stats.stats.trend import boundary_ratio, depth_crossover, depth_gradient, enrichment, trend

__all__ = [
    "permutation_indices",
    "permutation_pvalue",
    "cluster_bootstrap_indices",
    "n_distinct_permutations",
    "correlation",
    "partial_correlation",
    "group_difference",
    "tost_relative",
    "tost_paired",
    "tost_correlation",
    "fisher_z_se",
    "replicate_correlation",
    "power_correlation",
    "r33",
    "trend",
    "enrichment",
    "depth_gradient",
    "depth_crossover",
    "boundary_ratio",
    "compare_models",
    "meta_replication",
    "random_effects",
    "mixed_model",
    "adjust_pvalues",
    "head_mean",
    "share_above",
    "delta_rank",
    "delta_order",
    "ratio_of_changes",
    "pooled_relative",
    "symmetric_pairs",
    "pair_summary",
    "row_summary",
    "head_enrichment_excess",
    "boundary_enrichment",
    "functional_boundary_shift",
    "class_auc",
    "class_interaction",
    "threshold_agreement",
    "threshold_zones",
    "cohen_kappa",
    "time_to_fraction",
]
