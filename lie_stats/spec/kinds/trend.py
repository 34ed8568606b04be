"""Kinds over training and depth: ``trend``, ``enrichment``, ``boundary_ratio``,
``depth_crossover`` (METRICS.md §6; :mod:`lie_stats.stats.trend`).

``trend`` is a monotone trend of the mean selected value over checkpoints; ``enrichment``
the ratio last / first over paired units with a cluster-bootstrap interval;
``boundary_ratio`` the boundary layers of one model over its interior layers;
``depth_crossover`` the step at which the depth-gradient slope changes sign, as a fraction
of training.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import schema
from ...stats import columns as C
from ...stats.trend import boundary_ratio, depth_crossover, enrichment, trend
from ..parts import SUMMARIES
from ..registry import RESAMPLING, register_test
from ..rules import Decision, decide_directional, decide_interval, finite
from ..tables import TestInput, columns_of, one_model, step_series

__all__ = ["decide_crossing"]


def _run_trend(data: TestInput) -> Any:
    p = data.params
    values, steps, _ = step_series(data, "values")
    series = np.nanmean(values, axis=1)
    return trend(series, steps, method=p["method"], n_perm=p["n_perm"], seed=p["seed"],
                 alternative=p["alternative"])


def _run_enrichment(data: TestInput) -> Any:
    p = data.params
    table, (first, last), strata = columns_of(data, "first", "last")
    return enrichment(first, last, clusters=strata, paired=True, n_boot=p["n_boot"],
                      ci=p["ci"], seed=p["seed"], n_perm=p["n_perm"],
                      alternative=p["alternative"])


def _run_boundary_ratio(data: TestInput) -> Any:
    p = data.params
    one_model(data, "values", "boundary_ratio")
    table = data.table("values")
    return boundary_ratio(table["values"].to_numpy(float),
                          clusters=table[schema.LAYER].to_numpy(), summary=p["summary"],
                          n_boot=p["n_boot"], ci=p["ci"], seed=p["seed"],
                          alternative=p["alternative"])


def _run_depth_crossover(data: TestInput) -> Any:
    p = data.params
    one_model(data, "values", "depth_crossover")
    values, steps, flat = step_series(data, "values")
    row = depth_crossover(values, steps, layer_of_head=flat[schema.LAYER].values,
                          n_boot=p["n_boot"], seed=p["seed"], ci=p["ci"])
    # stats reports the interval in steps and the effect as a fraction of training; put the
    # interval on the effect's scale (fraction of the last step) so the two compare
    last = float(np.max(steps))
    return row.assign(**{C.CI_LOW: row[C.CI_LOW] / last, C.CI_HIGH: row[C.CI_HIGH] / last})


def decide_crossing(row: Mapping[str, float], ctx: Decision) -> tuple[str, str]:
    """Supported when the depth-gradient slope changes sign once and the crossover's
    interval is finite; refuted when it never changes sign; inconclusive otherwise (several
    crossings, or an interval without a crossing in every resample).

    >>> from lie_stats.spec import Prediction
    >>> ctx = Decision(Prediction("crossing"), 0.05, {}, {})
    >>> decide_crossing({"n_crossings": 0, "effect": float("nan")}, ctx)[0]
    'refuted'
    """
    n_cross = row.get(C.N_CROSSINGS)
    if not finite(n_cross):
        return "inconclusive", "the crossover estimator gave no count of sign changes"
    if n_cross == 0:
        return "refuted", "the depth-gradient slope never changes sign"
    if n_cross == 1 and finite(row.get(C.EFFECT), row.get(C.CI_LOW), row.get(C.CI_HIGH)):
        return "supported", "the depth-gradient slope changes sign once, with a finite interval"
    if n_cross > 1:
        return "inconclusive", "the slope changes sign several times"
    return "inconclusive", "a crossing, but not in every bootstrap resample (interval not finite)"


register_test("trend", _run_trend, decide_directional, roles=("values",),
              params={"method": "spearman", "alternative": "two-sided", "n_perm": 9999},
              description="monotone trend over checkpoints of the mean selected value "
                          "(lie_stats.stats.trend)")
register_test("enrichment", _run_enrichment, decide_interval, roles=("first", "last"),
              params={"alternative": "two-sided", **RESAMPLING}, directions=("above", "below"),
              description="enrichment last/first with a cluster-bootstrap interval "
                          "(METRICS §6.1, lie_stats.stats.enrichment)")
register_test("boundary_ratio", _run_boundary_ratio, decide_interval, roles=("values",),
              params={"summary": "mean", "alternative": "two-sided", "n_boot": 2000, "ci": 0.95},
              enums={"summary": SUMMARIES}, directions=("above", "below"),
              description="boundary layers over interior layers of one model (METRICS §6.3, "
                          "lie_stats.stats.boundary_ratio); select per-head values (summary "
                          "'cv' of commutator_mean is head_heterogeneity) so the interval "
                          "resamples heads within layers")
register_test("depth_crossover", _run_depth_crossover, decide_crossing, roles=("values",),
              params={"n_boot": 2000, "ci": 0.95}, directions=("crossing",),
              description="step where the depth-gradient slope changes sign, as a fraction of "
                          "training (METRICS §6.2, lie_stats.stats.depth_crossover)")
