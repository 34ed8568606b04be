"""lie_stats.stats.columns and the package surface: fixed, unique, numeric result columns."""

from __future__ import annotations

import lie_stats.stats as stats
from lie_stats.schema import STAT_COLUMNS
from lie_stats.stats import columns as C

FAMILIES = [name for name in C.__all__ if name.endswith("_COLUMNS")]


def test_every_family_starts_with_stat_columns_and_has_unique_names():
    assert len(FAMILIES) == 12
    for name in FAMILIES:
        cols = getattr(C, name)
        assert cols[: len(STAT_COLUMNS)] == STAT_COLUMNS, name
        assert len(set(cols)) == len(cols), name


def test_public_api_is_exported():
    for name in stats.__all__:
        assert hasattr(stats, name), name
    for name in ("permutation_indices", "permutation_pvalue", "cluster_bootstrap_indices",
                 "correlation", "partial_correlation", "group_difference", "tost_relative",
                 "tost_correlation", "replicate_correlation", "trend", "enrichment",
                 "depth_gradient", "depth_crossover", "boundary_ratio", "compare_models",
                 "mixed_model", "adjust_pvalues"):
        assert name in stats.__all__, name
